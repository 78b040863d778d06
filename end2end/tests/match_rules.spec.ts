import { test, expect, APIRequestContext } from '@playwright/test';
import { ADMIN_PASSWORD, clickNav, hydrated, signIn } from './helpers';

// A supervisor proposes an amount tolerance on the Settings page by
// clicking: the proposal shows what it would do on the sandbox's latest
// statement (run again under both rule sets, nothing written) before anyone
// approves it; the proposer withdraws it, so no other test runs under it.
const API_TOKEN = process.env.API_TOKEN ?? '';
if (!API_TOKEN) throw new Error('API_TOKEN comes from the e2e setup');

/** A day in 2023 no other test uses. */
function pastDay(): string {
  const d = new Date(Date.UTC(2023, 0, 1) + Math.floor(Math.random() * 360) * 86_400_000);
  return d.toISOString().slice(0, 10);
}

async function uploadUnknownRow(request: APIRequestContext, day: string) {
  const txn = `SBXRULES${Date.now().toString(36).toUpperCase()}`;
  const csv =
    'kind,txn_id,payment_no,refund_id,refund_no,status,amount,currency,occurred_at\n' +
    `payment,${txn},PAY${txn},,,SUCCEEDED,12.34,CNY,${day}T10:00:00Z\n` +
    '#summary,rows=1,total_minor=1234\n';
  const res = await request.post('/api/v1/recon/runs', {
    headers: { authorization: `Bearer ${API_TOKEN}` },
    multipart: {
      provider: 'sandbox',
      business_date: day,
      file: { name: 'sandbox-statement.csv', mimeType: 'text/csv', buffer: Buffer.from(csv) },
    },
  });
  expect(res.status(), await res.text()).toBe(201);
}

test('a proposed matching rule shows its preview on the latest statement before approval', async ({ page, request }) => {
  await uploadUnknownRow(request, pastDay());
  await signIn(page, 'sam', ADMIN_PASSWORD);
  await expect(page).toHaveURL(/\/$/);
  await hydrated(page);
  await clickNav(page, '#nav-settings');
  await expect(page).toHaveURL(/\/settings$/);
  await expect(page.locator('#settings-match-keys')).toHaveValue('txn, payment_no');

  // A bad tolerance is refused, naming the host's variable.
  await page.fill('#settings-tolerance', 'sandbox:CNY=0');
  await page.fill('#settings-reason', 'card rounding');
  await page.click('#settings-propose-submit');
  await expect(page.locator('p.error')).toContainText('RECKON_AMOUNT_TOLERANCE');

  await page.fill('#settings-tolerance', 'sandbox:CNY=5');
  await page.fill('#settings-reason', 'card rounding');
  await page.click('#settings-propose-submit');
  const pending = page.locator('#settings-pending');
  await expect(pending).toBeVisible();
  await expect(pending.locator('li[data-setting="matching.amount_tolerance_minor.sandbox:CNY"] ins')).toHaveText('5');
  const preview = pending.locator('#settings-preview tr[data-provider="sandbox"]');
  await expect(preview).toBeVisible();
  await expect(preview.locator('.preview-matched')).toContainText('→');
  await expect(preview.locator('.preview-tickets')).toContainText('→');

  await pending.locator('#settings-reject').click();
  await expect(page.locator('#settings-pending')).toHaveCount(0);
});
