import { test, expect, Page } from '@playwright/test';
import { ADMIN_PASSWORD, clickNav, hydrated, signIn } from './helpers';

// Under a policy that holds a user's creation, an admin creates a user on
// the Users page and is told it waits; a second admin (`ada`, made on the
// host by .ci/test) finds it on the Approvals page, reached by clicking,
// and approves it there: the user exists. The policy is put back after, so
// the shared server behaves as before for the other specs.

async function putInForce(root: Page, ada: Page, text: string) {
  await clickNav(root, '#nav-policy');
  await expect(root).toHaveURL(/\/policy$/);
  await hydrated(root);
  await root.fill('#policy-text', text);
  await root.fill('#policy-reason', 'month-end controls');
  await root.click('#propose-policy-submit');
  await expect(root.locator('#policy-pending')).toBeVisible();
  await clickNav(ada, '#nav-policy');
  await hydrated(ada);
  await ada.fill('#policy-comment', 'agreed');
  await ada.click('#approve-policy');
  await ada.locator('#policy-pending .confirm-yes').click();
  await expect(ada.locator('#policy-result')).toContainText('is in force');
}

test('a held user creation is approved by another admin on the Approvals page', async ({ browser }) => {
  const rootCtx = await browser.newContext();
  const root = await rootCtx.newPage();
  await signIn(root, 'admin', ADMIN_PASSWORD);
  await hydrated(root);
  const adaCtx = await browser.newContext();
  const ada = await adaCtx.newPage();
  await signIn(ada, 'ada', ADMIN_PASSWORD);
  await hydrated(ada);
  await putInForce(root, ada, 'USER_CREATE 1');

  const name = `held${Date.now() % 100000}`;
  await clickNav(root, '#nav-users');
  await expect(root).toHaveURL(/\/users$/);
  await hydrated(root);
  await root.fill('#new-username', name);
  await root.selectOption('#new-role', 'operator');
  await root.fill('#new-password', 'a long enough password');
  await root.click('#create-user-submit');
  await expect(root.locator('[role="alert"]')).toContainText('Held for approval');
  await expect(root.locator(`tr[data-user="${name}"]`)).toHaveCount(0);

  await clickNav(ada, '#nav-approvals');
  await expect(ada).toHaveURL(/\/approvals$/);
  await hydrated(ada);
  const held = ada.locator('.held-action', { hasText: `create user ${name}` });
  await expect(held).toBeVisible();
  await expect(held.locator('.held-proposer')).toHaveText('admin');
  await held.locator('.held-approve').click();
  await expect(ada.locator('#held-result')).toContainText(`user ${name} created`);
  await expect(ada.locator('#held-decided')).toContainText(name);

  await root.reload();
  await hydrated(root);
  await expect(root.locator(`tr[data-user="${name}"]`)).toBeVisible();

  await putInForce(root, ada, 'USER_CREATE 0');
  await rootCtx.close();
  await adaCtx.close();
});
