import { test, expect, APIRequestContext } from '@playwright/test';
import { ADMIN_PASSWORD, hydrated, signIn } from './helpers';

// A supervisor closes a day on the dashboard: sam (supervisor, made by the
// e2e script) closes a past day of the sandbox whose run left a HIGH ticket
// open (so it did not close by itself), with a reason; the row then shows
// it closed, by sam, with its hash and the signed report's link. A past day
// of its own, so no other test's statement of today is refused.
const API_TOKEN = process.env.API_TOKEN ?? '';
const SHOTS = process.env.SCREENSHOTS ?? 'test-results/screenshots';
if (!API_TOKEN) throw new Error('API_TOKEN comes from .ci/test');

/** A day in 2024 no other test uses, and a transaction no one knows. */
function pastDay(): string {
  const d = new Date(Date.UTC(2024, 0, 1) + Math.floor(Math.random() * 360) * 86_400_000);
  return d.toISOString().slice(0, 10);
}

async function uploadUnknownRow(request: APIRequestContext, day: string) {
  const txn = `SBXCLOSE${Date.now().toString(36).toUpperCase()}`;
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

test('a supervisor closes a day on the dashboard and sees it closed, with its signed report', async ({
  page,
  request,
}) => {
  const day = pastDay();
  await uploadUnknownRow(request, day);
  await signIn(page, 'sam', ADMIN_PASSWORD);
  await expect(page.locator('#who')).toContainText('sam');
  await page.goto(`/?day=${day}&provider=sandbox`);
  await hydrated(page);
  const row = page.locator('#close-table tr[data-provider="sandbox"]');
  await expect(row).toHaveAttribute('data-state', 'OPEN');
  await expect(row.locator('td.num').first()).toContainText('12.34 CNY');
  await row.locator('.close-day .close-reason').fill('the unknown payment is a test charge');
  // Asked first, naming the day: Cancel leaves it open.
  await row.locator('.close-day .close-submit').click();
  await expect(row.locator('.close-day .confirm-question')).toContainText(day);
  await row.locator('.close-day .confirm-no').click();
  await expect(row.locator('.close-day .confirm-question')).toHaveCount(0);
  await expect(row).toHaveAttribute('data-state', 'OPEN');
  await row.locator('.close-day .close-submit').click();
  await row.locator('.close-day .confirm-yes').click();
  await expect(row).toHaveAttribute('data-state', 'CLOSED');
  await expect(row.locator('.close-by')).toContainText('sam');
  await expect(row.locator('.close-hash')).toHaveText(/^[0-9a-f]{12}$/);
  await expect(row.locator('.close-day')).toHaveCount(0);
  await expect(row.locator('.propose-reopen')).toHaveCount(1);
  await page.screenshot({ path: `${SHOTS}/dashboard-day-closed.png`, fullPage: true });

  // The link gives the signed report, and it verifies.
  const href = await row.locator('a.close-export').getAttribute('href');
  const report = await page.request.get(href!);
  expect(report.status()).toBe(200);
  const doc = await report.json();
  expect(doc.report.how).toBe('supervisor');
  expect(doc.report.closed_by).toBe('sam');
  const checked = await request.post('/api/v1/recon/closes/verify', {
    headers: { authorization: `Bearer ${API_TOKEN}` },
    data: doc,
  });
  expect((await checked.json()).valid).toBe(true);
});
