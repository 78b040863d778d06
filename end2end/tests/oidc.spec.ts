import { test, expect } from '@playwright/test';
import { hydrated, watch } from './helpers';

// The provider is npm oidc-provider, started by .ci/test on another site
// (localhost) than the console (127.0.0.1); its account `ivy` is in the
// group mapped to operator.
const PROVIDER = process.env.OIDC_NAME ?? '';

test('a user signs in with the identity provider from the login page and lands in the console', async ({ page, baseURL }) => {
  expect(PROVIDER, 'OIDC_NAME is set by .ci/test').not.toBe('');
  watch(page);
  await page.goto('/login');
  await hydrated(page);
  const button = page.locator('#sso-sign-in');
  await expect(button).toHaveText(`Sign in with ${PROVIDER}`);
  // Password sign-in stays on beside it for the other specs.
  await expect(page.locator('#login-form')).toBeVisible();
  await button.click();

  // The provider's own login page, then its consent page.
  await expect(page).toHaveURL(/\/interaction\//);
  await page.fill('input[name="login"]', 'ivy');
  await page.fill('input[name="password"]', 'any password');
  await page.click('button[type="submit"]');
  await expect(page.locator('button:has-text("Continue")')).toBeVisible();
  await page.click('button:has-text("Continue")');

  // Back in the console, signed in.
  await expect(page).toHaveURL(`${baseURL}/`);
  await hydrated(page);
  await expect(page.locator('#who')).toContainText('ivy');
});
