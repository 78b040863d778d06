import { test, expect } from '@playwright/test';
import { ADMIN_PASSWORD, hydrated, signIn, unique } from './helpers';

test('a user ends another session of theirs from the sessions page, and that browser is sent to sign in', async ({ browser, baseURL }) => {
  // A user of this test's own, so no other spec's sessions are touched.
  const name = unique('sess');
  const password = 'sessions-password-1';
  const adminContext = await browser.newContext();
  const admin = await adminContext.newPage();
  await signIn(admin, 'admin', ADMIN_PASSWORD);
  await expect(admin.locator('#who')).toContainText('admin');
  const created = await admin.request.post('/api/users/create', {
    headers: { origin: baseURL! },
    form: { username: name, role: 'operator', password },
  });
  expect(created.status(), await created.text()).toBe(200);
  await adminContext.close();

  // The same user in two browsers.
  const otherContext = await browser.newContext();
  const other = await otherContext.newPage();
  await signIn(other, name, password);
  await expect(other.locator('#who')).toContainText(name);

  const mineContext = await browser.newContext();
  const mine = await mineContext.newPage();
  await signIn(mine, name, password);
  await expect(mine.locator('#who')).toContainText(name);
  await hydrated(mine);

  // One's own name in the top bar opens one's sessions, in place.
  await mine.evaluate(() => ((window as any).__noReload = true));
  await mine.click('#nav-sessions');
  await expect(mine).toHaveURL(/\/sessions$/);
  const rows = mine.locator('#sessions tbody tr');
  await expect(rows).toHaveCount(2);
  await expect(mine.locator('#sessions tr.current')).toHaveCount(1);
  await expect(mine.locator('#sessions tr.current .this-session')).toBeVisible();

  await mine.locator('#sessions tr:not(.current) .end-session').click();
  await expect(rows).toHaveCount(1);
  await expect(mine.locator('#sessions tr.current')).toHaveCount(1);
  expect(await mine.evaluate(() => (window as any).__noReload)).toBe(true);

  // The ended browser's next page sends it to sign in; this one stays.
  await other.reload();
  await expect(other).toHaveURL(/\/login$/);
  await expect(other.locator('#login-form')).toBeVisible();
  await mine.reload();
  await expect(mine.locator('#who')).toContainText(name);

  await otherContext.close();
  await mineContext.close();
});

test('a user changes their own password from their sessions page and signs in with the new one', async ({ browser, baseURL }) => {
  const name = unique('pw');
  const password = 'first-password-of-mine';
  const next = 'second-password-of-mine';
  const adminContext = await browser.newContext();
  const admin = await adminContext.newPage();
  await signIn(admin, 'admin', ADMIN_PASSWORD);
  await expect(admin.locator('#who')).toContainText('admin');
  const created = await admin.request.post('/api/users/create', {
    headers: { origin: baseURL! },
    form: { username: name, role: 'operator', password },
  });
  expect(created.status(), await created.text()).toBe(200);
  await adminContext.close();

  const context = await browser.newContext();
  const page = await context.newPage();
  await signIn(page, name, password);
  await hydrated(page);
  await page.click('#nav-sessions');
  await expect(page).toHaveURL(/\/sessions$/);

  // A wrong current password is refused, and the user stays signed in.
  await page.fill('#current-password', 'not-my-password-at-all');
  await page.fill('#new-password', next);
  await page.fill('#repeat-password', next);
  await page.click('#change-password');
  await expect(page.locator('.error')).toContainText('current password is wrong');
  await expect(page.locator('#who')).toContainText(name);

  await page.fill('#current-password', password);
  await page.fill('#new-password', next);
  await page.fill('#repeat-password', next);
  await page.click('#change-password');
  // Every session ends, this one too: off to sign in, with the new password.
  await expect(page).toHaveURL(/\/login$/);
  await signIn(page, name, next);
  await expect(page.locator('#who')).toContainText(name);
  await context.close();
});
