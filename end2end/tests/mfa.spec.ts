import { test, expect, Page } from '@playwright/test';
import { createHmac } from 'node:crypto';
import { ADMIN_PASSWORD, hydrated, signIn, unique } from './helpers';

/** RFC 4648 base32 (no padding), as the console shows the key. */
function base32(text: string): Buffer {
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';
  let bits = 0;
  let value = 0;
  const out: number[] = [];
  for (const ch of text.replace(/=+$/, '').toUpperCase()) {
    const i = alphabet.indexOf(ch);
    if (i < 0) throw new Error(`not base32: ${ch}`);
    value = (value << 5) | i;
    bits += 5;
    if (bits >= 8) {
      out.push((value >>> (bits - 8)) & 0xff);
      bits -= 8;
    }
  }
  return Buffer.from(out);
}

/** The code an authenticator app shows (RFC 6238: SHA-1, 6 digits, 30 s). */
function totp(secret: string, atSeconds: number): string {
  const counter = Buffer.alloc(8);
  counter.writeBigUInt64BE(BigInt(Math.floor(atSeconds / 30)));
  const mac = createHmac('sha1', base32(secret)).update(counter).digest();
  const offset = mac[mac.length - 1] & 15;
  const number = (mac.readUInt32BE(offset) & 0x7fffffff) % 1_000_000;
  return number.toString().padStart(6, '0');
}

/**
 * A code the server takes now and has not taken yet: the next step's (one
 * step either side is accepted; enrolment took the current one).
 */
function nextCode(secret: string): string {
  return totp(secret, Date.now() / 1000 + 30);
}

async function signOut(page: Page) {
  await hydrated(page);
  await page.click('#sign-out');
  await expect(page).toHaveURL(/\/login$/);
}

test('a user sets up a second factor, then signs in with a code and with a recovery code', async ({ browser, baseURL }) => {
  // A user of this test's own: no other spec signs in as them.
  const name = unique('mfa');
  const password = 'second-factor-password-1';
  const adminContext = await browser.newContext();
  const admin = await adminContext.newPage();
  await signIn(admin, 'admin', ADMIN_PASSWORD);
  await expect(admin.locator('#who')).toContainText('admin');
  const created = await admin.request.post('/api/users/create', {
    headers: { origin: baseURL! },
    form: { username: name, role: 'operator', password },
  });
  expect(created.status(), await created.text()).toBe(200);

  const context = await browser.newContext();
  const page = await context.newPage();
  await signIn(page, name, password);
  await expect(page.locator('#who')).toContainText(name);
  await hydrated(page);

  // Their name opens their sessions; from there, the second factor.
  await page.click('#nav-sessions');
  await expect(page).toHaveURL(/\/sessions$/);
  await page.click('#security-link');
  await expect(page).toHaveURL(/\/security$/);
  await expect(page.locator('#mfa-qr')).toBeVisible();
  const secret = (await page.locator('#mfa-secret').textContent())!.trim();
  expect(secret).toMatch(/^[A-Z2-7]{32}$/);

  // A wrong code is refused in place; the right one shows the codes once.
  await page.fill('#enrol-code', '000000');
  await page.click('#enrol-submit');
  await expect(page.locator('#enrol .error')).toBeVisible();
  await page.fill('#enrol-code', totp(secret, Date.now() / 1000));
  await page.click('#enrol-submit');
  const codes = page.locator('#recovery-codes .recovery-code');
  await expect(codes).toHaveCount(10);
  const recovery = (await codes.allTextContents()).map((c) => c.trim());
  await page.reload();
  await expect(page.locator('#mfa-state')).toContainText('10');
  await expect(page.locator('#recovery-codes')).toHaveCount(0);

  // Signed out and in again: the password leads to the code.
  await signOut(page);
  await signIn(page, name, password);
  await expect(page).toHaveURL(/\/login\/code$/);
  await hydrated(page);
  await expect(page.locator('#second-step-who')).toContainText(name);
  // Nothing else is open yet.
  await page.goto('/sessions');
  await expect(page).toHaveURL(/\/login$/);
  await page.goto('/login/code');
  await hydrated(page);
  await page.fill('#mfa-code', '123456');
  await page.click('#mfa-submit');
  await expect(page.locator('main .error')).toBeVisible();
  await expect(page).toHaveURL(/\/login\/code\?/);
  await page.fill('#mfa-code', nextCode(secret));
  await page.click('#mfa-submit');
  await expect(page.locator('#who')).toContainText(name);

  // And with a recovery code instead of the app.
  await signOut(page);
  await signIn(page, name, password);
  await expect(page).toHaveURL(/\/login\/code$/);
  await hydrated(page);
  await page.fill('#mfa-code', recovery[0]);
  await page.click('#mfa-submit');
  await expect(page.locator('#who')).toContainText(name);
  await page.click('#nav-sessions');
  await page.click('#security-link');
  await expect(page.locator('#mfa-state')).toContainText('9');

  // The admin sees it on the users page and resets it: the user is out.
  await admin.goto('/users');
  await hydrated(admin);
  const row = admin.locator(`#users tr[data-user="${name}"]`);
  await expect(row.locator('.mfa-on')).toBeVisible();
  await row.locator('.mfa-reset-submit').click();
  await expect(row.locator('.mfa-on')).toHaveCount(0);
  await page.reload();
  await expect(page).toHaveURL(/\/login$/);

  await context.close();
  await adminContext.close();
});
