import { test, expect } from '@playwright/test';
import { ADMIN_PASSWORD, clickNav, hydrated, signIn } from './helpers';

test('a supervisor proposes a settings change by clicking, cannot approve it, and a second supervisor approves it', async ({ browser }) => {
  const sam = await browser.newPage();
  await signIn(sam, 'sam', ADMIN_PASSWORD);
  await expect(sam).toHaveURL(/\/$/);
  await hydrated(sam);
  await clickNav(sam, '#nav-settings');
  await expect(sam).toHaveURL(/\/settings$/);
  await expect(sam.locator('h1')).toHaveText('Settings');
  const before = Number((await sam.locator('#settings-version').innerText()).trim());
  expect(before).toBeGreaterThan(0);

  // A bad value is refused, naming the host's variable.
  await sam.fill('#settings-missing', '0');
  await sam.fill('#settings-reason', 'month-end statements come late');
  await sam.click('#settings-propose-submit');
  await expect(sam.locator('p.error')).toContainText('RECKON_STATEMENT_MISSING_HOURS');

  const hours = 7 + (before % 5);
  await sam.fill('#settings-missing', String(hours));
  await sam.fill('#settings-reason', 'month-end statements come late');
  await sam.click('#settings-propose-submit');
  const pending = sam.locator('#settings-pending');
  await expect(pending).toBeVisible();
  await expect(pending.locator('li[data-setting="statement_missing_hours"]')).toContainText(String(hours));
  // The proposer may withdraw, never approve.
  await expect(pending.locator('#settings-approve')).toHaveCount(0);
  await expect(pending.locator('#settings-reject')).toHaveText('Withdraw');

  const sue = await browser.newPage();
  await signIn(sue, 'sue', ADMIN_PASSWORD);
  await expect(sue).toHaveURL(/\/$/);
  await hydrated(sue);
  await clickNav(sue, '#nav-settings');
  await expect(sue).toHaveURL(/\/settings$/);
  await expect(sue.locator('#settings-pending .proposer')).toHaveText('sam');
  await sue.click('#settings-approve');
  await expect(sue.locator('#settings-pending')).toHaveCount(0);
  await expect(sue.locator('#settings-version')).toHaveText(String(before + 1));
  const latest = sue.locator(`#settings-history tr[data-version="${before + 1}"]`);
  await expect(latest).toContainText('sue');
  await expect(latest).toContainText('sam');
  await expect(latest.locator('li[data-setting="statement_missing_hours"] ins')).toHaveText(String(hours));
});
