import { test, expect } from '@playwright/test';
import { ADMIN_PASSWORD, clickNav, hydrated, signIn, unique } from './helpers';

test('admin creates an operator, who sees no Users link and is refused at /users', async ({ page }) => {
  const operator = unique('op');
  const password = 'operator-password-1';

  await signIn(page, 'admin', ADMIN_PASSWORD);
  await expect(page).toHaveURL(/\/$/);
  await expect(page.locator('#who')).toContainText('admin');
  await clickNav(page, '#nav-users');
  await expect(page).toHaveURL(/\/users$/);
  await hydrated(page);

  // After hydration the form submits in place: the list updates without a reload.
  await page.evaluate(() => ((window as any).__noReload = true));
  await page.fill('#new-username', operator);
  await page.selectOption('#new-role', 'operator');
  await page.fill('#new-password', password);
  await page.click('#create-user-submit');
  const row = page.locator(`tr[data-user="${operator}"]`);
  await expect(row).toBeVisible();
  await expect(row.locator('select[name="role"]')).toHaveValue('operator');
  expect(await page.evaluate(() => (window as any).__noReload)).toBe(true);
  // Disable is offered on others' rows, never on one's own.
  await expect(row.locator('.disable-submit')).toBeVisible();
  await expect(page.locator('tr[data-user="admin"] .disable-submit')).toHaveCount(0);

  // A refused change shows the server's reason.
  await page.fill('#new-username', operator);
  await page.fill('#new-password', password);
  await page.click('#create-user-submit');
  await expect(page.locator('[role="alert"]')).toContainText('already taken');

  await page.click('#sign-out');
  await expect(page).toHaveURL(/\/login$/);

  await signIn(page, operator, password);
  await expect(page.locator('#who')).toContainText(operator);
  await expect(page.locator('#who')).toContainText('Operator');
  await expect(page.locator('#nav-users')).toHaveCount(0);

  const response = await page.goto('/users');
  expect(response?.status()).toBe(403);
  await expect(page.locator('#forbidden')).toBeVisible();
  await expect(page.locator('#users')).toHaveCount(0);
});

test('the language switch turns the console into Chinese and back', async ({ page }) => {
  await signIn(page, 'admin', ADMIN_PASSWORD);
  await expect(page.locator('#sign-out')).toHaveText('Sign out');
  await hydrated(page);

  await page.click('#lang-switch');
  await expect(page.locator('#sign-out')).toHaveText('退出登录');
  await expect(page.locator('html')).toHaveAttribute('lang', 'zh-CN');
  await expect(page.locator('#nav-users')).toHaveText('用户管理');

  // The choice is the user's: a reload keeps it.
  await page.reload();
  await expect(page.locator('#sign-out')).toHaveText('退出登录');
  await hydrated(page);

  await page.click('#lang-switch');
  await expect(page.locator('#sign-out')).toHaveText('Sign out');
  await expect(page.locator('html')).toHaveAttribute('lang', 'en');
});

test('a wrong password shows the reason and signs nobody in', async ({ page }) => {
  await signIn(page, 'admin', 'not-the-password');
  await expect(page.locator('[role="alert"]')).toContainText('Wrong username or password');
  await expect(page).toHaveURL(/\/login/);
});

test.describe('without JavaScript', () => {
  test.use({ javaScriptEnabled: false });

  test('the login form and the users page work as plain forms', async ({ page }) => {
    await signIn(page, 'admin', 'still-not-the-password', { hydrate: false });
    await expect(page).toHaveURL(/\/login\?err=/);
    await expect(page.locator('[role="alert"]')).toContainText('Wrong username or password');

    await signIn(page, 'admin', ADMIN_PASSWORD, { hydrate: false });
    await expect(page).toHaveURL(/\/$/);
    await expect(page.locator('#who')).toContainText('admin');

    const name = unique('nojs');
    await page.goto('/users');
    await page.fill('#new-username', name);
    await page.fill('#new-password', 'no-script-password');
    await page.click('#create-user-submit');
    await expect(page).toHaveURL(/\/users$/);
    await expect(page.locator(`tr[data-user="${name}"]`)).toBeVisible();

    const row = page.locator(`tr[data-user="${name}"]`);
    await row.locator('.disable-submit').click();
    await expect(page.locator(`tr[data-user="${name}"] .status`)).toHaveText('disabled');

    await page.click('#lang-switch');
    await expect(page.locator('#sign-out')).toHaveText('退出登录');
    await page.click('#lang-switch');
    await page.click('#sign-out');
    await expect(page).toHaveURL(/\/login$/);
  });
});
