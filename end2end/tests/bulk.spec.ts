import { test, expect, APIRequestContext } from '@playwright/test';
import { ADMIN_PASSWORD, hydrated, signIn } from './helpers';

// Users made by the e2e setup: olivia (operator), sam and sue (supervisors).
const PASSWORD = ADMIN_PASSWORD;
const API_TOKEN = process.env.API_TOKEN ?? '';
const SANDBOX_URL = process.env.SANDBOX_URL ?? '';
if (!API_TOKEN || !SANDBOX_URL) throw new Error('API_TOKEN and SANDBOX_URL come from the e2e setup');

const today = () => new Date().toISOString().slice(0, 10);
const tag = () => `${Date.now().toString(36).toUpperCase()}${Math.floor(Math.random() * 1000)}`;

/** A payment made through the merchant API, its provider transaction once the sandbox has one. */
async function payment(request: APIRequestContext, order: string): Promise<{ no: string; txn: string }> {
  const created = await request.post('/api/v1/payments', {
    headers: { authorization: `Bearer ${API_TOKEN}`, 'idempotency-key': `bulk-${order}` },
    data: { order_no: order, provider: 'sandbox', amount_minor: 1500, currency: 'CNY' },
  });
  expect(created.status(), await created.text()).toBe(201);
  const no = (await created.json()).payment_no as string;
  let txn = '';
  await expect
    .poll(async () => {
      const r = await request.get(`${SANDBOX_URL}/v1/payments/${no}`);
      if (r.ok()) txn = (await r.json()).txn_id;
      return txn;
    })
    .not.toBe('');
  return { no, txn };
}

async function uploadStatement(request: APIRequestContext, rows: { txn: string; no: string }[]) {
  const at = new Date().toISOString().replace(/\.\d+Z$/, 'Z');
  const csv =
    'kind,txn_id,payment_no,refund_id,refund_no,status,amount,currency,occurred_at\n' +
    rows.map((r) => `payment,${r.txn},${r.no},,,SUCCEEDED,15.00,CNY,${at}`).join('\n') +
    `\n#summary,rows=${rows.length},total_minor=${rows.length * 1500}\n`;
  const res = await request.post('/api/v1/recon/runs', {
    headers: { authorization: `Bearer ${API_TOKEN}` },
    multipart: {
      provider: 'sandbox',
      business_date: today(),
      file: { name: 'sandbox-statement.csv', mimeType: 'text/csv', buffer: Buffer.from(csv) },
    },
  });
  expect(res.status(), await res.text()).toBe(201);
}

// The sandbox's slow settling is this test's own: reset even when it fails,
// so the specs after it see a sandbox that settles at once.
test.afterEach(async ({ request }) => {
  await request.post(`${SANDBOX_URL}/v1/chaos`, { data: {} });
});

test('a bulk backfill is proposed from ticked tickets and approved in the browser by a second supervisor', async ({
  page,
  request,
}) => {
  const t = tag();
  // The sandbox settles late: the statement says paid, Reckon still pending.
  expect((await request.post(`${SANDBOX_URL}/v1/chaos`, { data: { settle_ms: 600_000 } })).ok()).toBe(true);
  const paid = [];
  for (let i = 0; i < 3; i++) paid.push(await payment(request, `ORDER-BULK-${t}-${i}`));
  await uploadStatement(request, paid);

  // sam ticks the three tickets and proposes one backfill for them.
  await signIn(page, 'sam', PASSWORD);
  await expect(page.locator('#who')).toContainText('sam');
  await page.goto('/tickets?class=STATUS_LAG');
  await hydrated(page);
  for (const p of paid) {
    // The list shows ids shortened; the copy button carries the whole one.
    const row = page.locator(`#tickets tbody tr:has([data-copy="${p.no}"])`);
    await row.locator('input.pick').check();
  }
  await expect(page.locator('#bp-scope')).toHaveValue('ids');
  await page.selectOption('#bulk-kind', 'BACKFILL');
  await page.fill('#bulk-reason', 'paid at the provider; settlement late');
  await page.fill('#bulk-evidence', 'statement of ' + today());
  await page.click('#bulk-propose-submit');
  await expect(page.locator('#bulk-proposal-link')).toBeVisible();
  await page.locator('#bulk-proposal-link').click();
  await hydrated(page);
  await expect(page.locator('#bulk-pending')).toHaveText('3', { timeout: 15_000 });
  // His own: nothing to approve.
  await expect(page.locator('#bulk-approve-submit')).toHaveCount(0);
  await expect(page.locator('#bulk-summary .own')).toBeVisible();
  const url = page.url();
  await page.click('#sign-out');
  await expect(page).toHaveURL(/\/login$/);

  // sue approves it whole; each item executes once.
  await signIn(page, 'sue', PASSWORD);
  await expect(page.locator('#who')).toContainText('sue');
  await page.goto(url);
  await hydrated(page);
  await expect(page.locator('#bulk-items article.proposal')).toHaveCount(3);
  await page.fill('#bulk-approve-comment', 'matches the statement');
  await page.click('#bulk-approve-submit');
  await expect(page.locator('#bulk-executed')).toHaveText('3', { timeout: 20_000 });
  await expect(page.locator('#bulk-jobs .job[data-status="DONE"]').first()).toBeVisible({ timeout: 20_000 });
  for (const p of paid) {
    const r = await request.get(`/api/v1/payments/${p.no}`, { headers: { authorization: `Bearer ${API_TOKEN}` } });
    expect((await r.json()).payment?.status).toBe('SUCCEEDED');
  }
  await request.post(`${SANDBOX_URL}/v1/chaos`, { data: {} });
});
