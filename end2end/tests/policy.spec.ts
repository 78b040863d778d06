import { test, expect } from '@playwright/test';
import { ADMIN_PASSWORD, clickNav, hydrated, signIn } from './helpers';

// One admin proposes a change of the approval policy on the Policy page;
// a second admin (`ada`, made on the host by .ci/test) approves it there,
// and the new version is in force. The change raises a count only above
// an amount no other spec reaches, so the shared server behaves as before.
test('an admin proposes a policy change by clicking and another admin approves it', async ({ browser }) => {
  const rootCtx = await browser.newContext();
  const root = await rootCtx.newPage();
  await signIn(root, 'admin', ADMIN_PASSWORD);
  await expect(root).toHaveURL(/\/$/);
  await hydrated(root);
  await clickNav(root, '#nav-policy');
  await expect(root).toHaveURL(/\/policy$/);
  await hydrated(root);
  const before = Number(await root.locator('#policy-version').innerText());

  // A threshold in an unknown currency is refused with a clear error.
  await root.fill('#policy-text', 'MERGE 2 above 1000.00 XYZ');
  await root.fill('#policy-reason', 'finance review');
  await root.click('#propose-policy-submit');
  await expect(root.locator('p.error')).toContainText('unknown currency');

  await root.fill('#policy-text', 'MERGE 1\nMERGE 2 above 99999999.00 CNY');
  await root.click('#propose-policy-submit');
  const pending = root.locator('#policy-pending');
  await expect(pending).toBeVisible();
  await expect(root.locator('#policy-approvals')).toContainText('0 of 1 approvals');
  await expect(pending.locator('#approve-policy')).toHaveCount(0);

  const adaCtx = await browser.newContext();
  const ada = await adaCtx.newPage();
  await signIn(ada, 'ada', ADMIN_PASSWORD);
  await expect(ada).toHaveURL(/\/$/);
  await hydrated(ada);
  await clickNav(ada, '#nav-policy');
  await hydrated(ada);
  await expect(ada.locator('#policy-pending tr[data-action="MERGE"]').nth(1)).toContainText('99999999.00 CNY');
  await ada.fill('#policy-comment', 'agreed');
  await ada.click('#approve-policy');
  await ada.locator('#policy-pending .confirm-yes').click();
  await expect(ada.locator('#policy-result')).toContainText(`version ${before + 1} is in force`);
  await expect(ada.locator('#policy-version')).toHaveText(String(before + 1));
  await expect(ada.locator('#policy-pending')).toHaveCount(0);
  await expect(ada.locator('#policy-active')).toContainText('99999999.00 CNY');
  await rootCtx.close();
  await adaCtx.close();
});
