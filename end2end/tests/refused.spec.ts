import { test, expect } from '@playwright/test';
import { ADMIN_PASSWORD, signIn, switchLanguage } from './helpers';

// A webhook signed ten minutes ago reaches the sandbox account's route:
// refused, kept with its diagnosis, and shown on the refused webhooks page
// (with the dashboard's link) in English and in Chinese.
test.describe('refused webhooks', () => {
  test('a refused webhook is listed with its diagnosis, in both languages', async ({ page, request }) => {
    const id = `msg_e2e_${Date.now().toString(36)}`;
    const stale = Math.floor(Date.now() / 1000) - 600;
    const r = await request.post('/webhooks/sandbox', {
      headers: {
        'content-type': 'application/json',
        'webhook-id': id,
        'webhook-timestamp': String(stale),
        'webhook-signature': 'v1,c2lnbmVkIHRlbiBtaW51dGVzIGFnbw==',
      },
      data: JSON.stringify({ type: 'payment.succeeded', data: { payment_no: 'E2E-REFUSED' } }),
    });
    expect(r.status()).toBeGreaterThanOrEqual(400);

    await signIn(page, 'olivia', ADMIN_PASSWORD, { hydrate: false });
    await expect(page.locator('#who')).toContainText('olivia');
    await page.goto('/');
    await expect(page.locator('#refused-count')).not.toHaveText('0');
    await page.click('#refused-count');
    await expect(page).toHaveURL(/\/refused$/);
    await expect(page.locator('h1')).toHaveText('Refused webhooks');
    const row = page.locator('#refused tbody tr[data-diagnosis="timestamp_skew"]').first();
    await expect(row).toContainText('sandbox');
    await expect(row.locator('.diagnosis')).toContainText('Timestamp skew');
    await expect(row.locator('.diagnosis')).toContainText(/\d+ s behind/);
    await expect(row).toContainText('127.0.0.1');
    await expect(page.locator('#refused-hourly tr[data-reason="timestamp_skew"]')).toHaveCount(1);
    // Filtered by diagnosis, then one opened: its signature header masked.
    await page.selectOption('#r-diagnosis', 'timestamp_skew');
    await page.click('#r-search');
    await expect(page).toHaveURL(/diagnosis=timestamp_skew/);
    await page.locator('#refused tbody tr a.open-refused').first().click();
    await expect(page.locator('#diagnosis')).toContainText('Timestamp skew');
    const sig = page.locator('#headers tr', { hasText: 'webhook-signature' }).locator('code');
    await expect(sig).toContainText('****');
    await expect(sig).not.toContainText('c2lnbmVk');

    // 中文
    await page.goto('/');
    await switchLanguage(page, 'zh-CN');
    try {
      await page.goto('/refused');
      await expect(page.locator('html')).toHaveAttribute('lang', 'zh-CN');
      await expect(page.locator('h1')).toHaveText('被拒回调');
      const zhRow = page.locator('#refused tbody tr[data-diagnosis="timestamp_skew"]').first();
      await expect(zhRow.locator('.diagnosis')).toContainText('时间戳偏差');
      await expect(page.locator('#nav-refused')).toHaveText('被拒回调');
    } finally {
      await page.goto('/');
      await switchLanguage(page, 'en');
    }
  });
});
