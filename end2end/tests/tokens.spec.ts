import { test, expect } from '@playwright/test';
import { ADMIN_PASSWORD, clickNav, hydrated, signIn, unique } from './helpers';

test('an admin makes a token with one scope on the tokens page, sees it once, and revokes it', async ({ page, request }) => {
  const name = unique('tok');
  const bearer = (token: string) => ({ headers: { authorization: `Bearer ${token}` } });

  await signIn(page, 'admin', ADMIN_PASSWORD);
  await expect(page).toHaveURL(/\/$/);
  await hydrated(page);
  await clickNav(page, '#nav-tokens');
  await expect(page).toHaveURL(/\/tokens$/);
  await expect(page.locator('h1')).toHaveText('API tokens');

  // The token comes back in the script's answer only: the button waits for it.
  await expect(page.locator('#create-token-submit')).toBeEnabled();
  await page.fill('#token-name', name);
  await page.check('#token-scopes input[data-scope="payments:read"]');
  await page.fill('#token-expiry', '7');
  await page.click('#create-token-submit');

  const shown = page.locator('#new-token');
  await expect(shown).toBeVisible();
  const token = (await shown.innerText()).trim();
  expect(token).toMatch(/^rk_[0-9a-f]{64}$/);
  const row = page.locator(`#tokens tr[data-token="${name}"]`);
  await expect(row).toBeVisible();
  await expect(row.locator('code.scope')).toHaveText(['payments:read']);
  await expect(row).toContainText('admin');
  await expect(row).not.toContainText(token);

  // It may read payments, and nothing else.
  expect((await request.get('/api/v1/whoami', bearer(token))).status()).toBe(200);
  const refused = await request.get('/api/v1/outbox', bearer(token));
  expect(refused.status()).toBe(403);
  expect((await refused.json()).error).toContain('outbox:read');

  // Shown once: the page loaded again lists the token, never the token itself.
  await page.reload();
  await hydrated(page);
  await expect(row).toBeVisible();
  await expect(page.locator('#new-token')).toHaveCount(0);
  await expect(page.locator('main')).not.toContainText(token);

  // Revoking asks first; then the row says when, and the token is refused.
  await row.locator('.revoke-submit').click();
  await row.locator('.confirm-yes').click();
  await expect(row.locator('td.revoked time')).toBeVisible();
  await expect(row.locator('.revoke-submit')).toHaveCount(0);
  expect((await request.get('/api/v1/whoami', bearer(token))).status()).toBe(401);
});
