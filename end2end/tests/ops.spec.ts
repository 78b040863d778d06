import { test, expect, Page, APIRequestContext } from '@playwright/test';
import { execFileSync } from 'node:child_process';
import { ADMIN_PASSWORD, hydrated, signIn, switchLanguage, uploadedRunCompletes } from './helpers';

// The server runs with RECKON_CALLBACK_MAX_TRIES=1 (a callback that fails
// once is DEAD) and the sandbox provider as its own process.
const API_TOKEN = process.env.API_TOKEN ?? '';
const SANDBOX_URL = process.env.SANDBOX_URL ?? '';
const DB = process.env.RECKON_DB ?? '';
const SHOTS = process.env.SCREENSHOTS ?? 'test-results/screenshots';
if (!API_TOKEN || !SANDBOX_URL || !DB) throw new Error('API_TOKEN, SANDBOX_URL and RECKON_DB come from .ci/test');

const tag = () => `${Date.now().toString(36).toUpperCase()}${Math.floor(Math.random() * 1000)}`;
const yesterday = () => new Date(Date.now() - 86_400_000).toISOString().slice(0, 10);
const today = () => new Date().toISOString().slice(0, 10);

/** A payment made at the provider that Reckon does not have: its
 * notification fails (unknown payment) and, with one try allowed, is DEAD. */
async function deadCallback(request: APIRequestContext, no: string, amount: string) {
  const r = await request.post(`${SANDBOX_URL}/v1/payments`, { data: { payment_no: no, amount, currency: 'CNY' } });
  expect(r.ok(), await r.text()).toBe(true);
  const auth = { headers: { authorization: `Bearer ${API_TOKEN}` } };
  await expect
    .poll(async () => (await request.get(`/api/v1/payments/${no}`, auth)).status(), { timeout: 10_000 })
    .toBe(404);
}

/** The payment's row, inserted late (as when its insert failed and was
 * redone from the order system): CREATED, unpaid. */
function latePayment(no: string, minor: number) {
  const now = Date.now() * 1000;
  execFileSync('python3', [
    '-c',
    `import sqlite3,sys
c = sqlite3.connect(sys.argv[1], timeout=10)
c.execute("INSERT INTO payments (payment_no, order_no, attempt_no, provider, amount_minor, currency, status, version, created_by, awaiting_recon, created_at, updated_at) VALUES (?, ?, 1, 'sandbox', ?, 'CNY', 'CREATED', 0, 'e2e', 0, ?, ?)", (sys.argv[2], 'ORDER-' + sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[4])))
c.commit()`,
    DB,
    no,
    String(minor),
    String(now),
  ]);
}

/** The DEAD callback of payment `no`, once the sandbox has stopped
 * redelivering it: every delivery of a callback for an unknown payment is
 * answered "unknown payment", and one that finds the payment there applies
 * it, so a late payment inserted while the sandbox still retries (three
 * tries, a second apart) would be settled by the provider, not by a replay. */
async function deadCallbackId(page: Page, no: string): Promise<string> {
  let id = '';
  await expect
    .poll(async () => {
      await page.goto(`/callbacks?q=${no}&status=DEAD`);
      const link = page.locator('#callbacks a.open-callback').first();
      if ((await link.count()) === 0) return '';
      id = ((await link.getAttribute('href')) ?? '').replace('/callbacks/', '');
      return id;
    }, { timeout: 15_000 })
    .not.toBe('');
  await expect
    .poll(async () => {
      await page.goto(`/callbacks/${id}`);
      return page.locator('#duplicates').textContent();
    }, { timeout: 15_000 })
    .toBe('2');
  return id;
}

async function paidAtSandbox(request: APIRequestContext, order: string, minor: number) {
  const res = await request.post('/api/v1/payments', {
    headers: { authorization: `Bearer ${API_TOKEN}`, 'idempotency-key': order },
    data: { order_no: order, provider: 'sandbox', amount_minor: minor, currency: 'CNY' },
  });
  expect(res.status(), await res.text()).toBe(201);
  const no = (await res.json()).payment_no as string;
  let txn = '';
  await expect
    .poll(async () => {
      const r = await request.get(`/api/v1/payments/${no}`, { headers: { authorization: `Bearer ${API_TOKEN}` } });
      const p = (await r.json()).payment;
      txn = p?.provider_txn_id ?? '';
      return p?.status;
    }, { timeout: 15_000 })
    .toBe('SUCCEEDED');
  return { no, txn };
}

test('a statement uploaded in the console completes with its counts, and the dashboard shows them', async ({ page, request }) => {
  const t = tag();
  const matched = await paidAtSandbox(request, `ORDER-OK-${t}`, 1000);
  const off = await paidAtSandbox(request, `ORDER-OFF-${t}`, 2000);
  const at = new Date().toISOString().replace(/\.\d+Z$/, 'Z');
  const rows = [
    `payment,${matched.txn},${matched.no},,,SUCCEEDED,10.00,CNY,${at}`,
    `payment,${off.txn},${off.no},,,SUCCEEDED,20.50,CNY,${at}`,
    `payment,SBXNOWHERE1${t},PAYNOWHERE1${t},,,SUCCEEDED,3.00,CNY,${at}`,
    `payment,SBXNOWHERE2${t},PAYNOWHERE2${t},,,SUCCEEDED,4.00,CNY,${at}`,
  ];
  const csv =
    'kind,txn_id,payment_no,refund_id,refund_no,status,amount,currency,occurred_at\n' +
    rows.join('\n') +
    `\n#summary,rows=4,total_minor=${1000 + 2050 + 300 + 400}\n`;

  await signIn(page, 'olivia', ADMIN_PASSWORD);
  await expect(page.locator('#who')).toContainText('olivia');
  // A retry of this test reconciles the same day again: the day's open
  // tickets before the upload are the baseline.
  await hydrated(page);
  const before = await sandboxDay(page);
  await page.goto('/runs');
  await hydrated(page);
  await page.selectOption('#u-provider', 'sandbox');
  await page.fill('#u-day', yesterday());
  await page.setInputFiles('#u-file', { name: `sandbox-${t}.csv`, mimeType: 'text/csv', buffer: Buffer.from(csv) });
  await page.click('#u-submit');
  const run = await uploadedRunCompletes(page);
  const row = page.locator(`#runs tr[data-run="${run}"]`);
  await expect(row.locator('td.rows')).toHaveText('4');
  await expect(row.locator('[data-class="MATCHED"] strong')).toHaveText('1');
  await expect(row.locator('[data-class="PROVIDER_ONLY"] strong')).toHaveText('2');
  await expect(row.locator('[data-class="AMOUNT_MISMATCH"] strong')).toHaveText('1');
  await page.screenshot({ path: `${SHOTS}/5-runs.png`, fullPage: true });

  // The dashboard opens on yesterday: the latest run's numbers, the day's
  // open tickets (an earlier run's included), and the chart.
  await sandboxDay(page);
  await expect(page.locator('#fig-to-process .n')).toHaveText('4');
  await expect(page.locator('#fig-matched .n')).toHaveText('1');
  await expect(page.locator('#fig-unknown .n')).toHaveText(String(before.unknown + 3));
  await expect(page.locator('#classes [data-class="PROVIDER_ONLY"] strong')).toHaveText('2');
  await expect(page.locator('#trend polyline.series-matched')).toHaveCount(1);
  await expect(page.locator('#trend .legend text')).toHaveCount(3);
  await page.screenshot({ path: `${SHOTS}/6-dashboard.png`, fullPage: true });
  // Each number leads to its list.
  await page.click('#fig-unknown');
  await expect(page).toHaveURL(/\/tickets\?day=.*status=ACTIVE/);
  await expect(page.locator('#ticket-total strong')).toHaveText(String(before.unknown + 3));
});

/** The dashboard of yesterday for the sandbox, reached through the top bar,
 * and its open tickets as they stand. */
async function sandboxDay(page: Page) {
  await page.click('#nav-dashboard');
  await expect(page.locator('#dash-day')).toHaveText(yesterday());
  await page.selectOption('#d-provider', 'sandbox');
  await page.click('#d-show');
  await expect(page).toHaveURL(/provider=sandbox/);
  // A plain GET form: the whole new page loaded before anything is read.
  await page.waitForLoadState('load');
  await hydrated(page);
  await expect(page.locator('#fig-to-process .n')).toHaveCount(1);
  const n = async (at: string) => Number((await page.locator(at).innerText()).replace(/[^0-9]/g, ''));
  return { unknown: await n('#fig-unknown .n') };
}

test('a DEAD callback is replayed from its page; the payment is SUCCEEDED with one effect; its secrets stay masked', async ({ page, request }) => {
  const t = tag();
  const no = `PAYDEAD${t}`;
  await signIn(page, 'olivia', ADMIN_PASSWORD);
  await expect(page.locator('#who')).toContainText('olivia');
  await deadCallback(request, no, '8.80');
  const id = await deadCallbackId(page, no);
  latePayment(no, 880);
  await page.goto(`/callbacks/${id}`);
  await hydrated(page);
  await expect(page.locator('#callback')).toHaveAttribute('data-status', 'DEAD');
  const signature = page.locator('#headers tr:has(th:text-is("webhook-signature")) code');
  await expect(signature).toContainText('****');
  await expect(page.locator('#payload')).toContainText(no);
  await page.screenshot({ path: `${SHOTS}/7-callback.png`, fullPage: true });
  await page.click('#replay-submit');
  await expect(page.locator('#action-result .replay-class')).toHaveText('applied');
  await expect(page.locator('#callback')).toHaveAttribute('data-status', 'SUCCESS');
  await page.click('#callback-payment');
  await expect(page.locator('#payment-status')).toHaveText('SUCCEEDED');
  await expect(page.locator('#effects tbody tr')).toHaveCount(1);
  await expect(page.locator('#effects')).toContainText('ORDER_PAID');
});

test('a bulk replay of DEAD callbacks shows its progress and a summary', async ({ page, request }) => {
  const t = tag();
  const nos = [1, 2, 3].map((i) => `PAYBULK${i}${t}`);
  for (const no of nos) await deadCallback(request, no, '1.10');
  await signIn(page, 'olivia', ADMIN_PASSWORD);
  await expect(page.locator('#who')).toContainText('olivia');
  for (const no of nos) await deadCallbackId(page, no);
  for (const no of nos) latePayment(no, 110);

  await page.goto('/callbacks');
  await hydrated(page);
  await page.fill('#b-provider', 'sandbox');
  await page.fill('#b-from', today());
  await page.fill('#b-to', today());
  await page.click('#b-start');
  const job = page.locator('#jobs .job').first();
  await expect(job.locator('progress')).toBeVisible();
  await expect(job).toHaveAttribute('data-status', 'DONE', { timeout: 20_000 });
  await expect(job.locator('.job-count')).toHaveText(/^(\d+) \/ \1$/);
  await expect(job.locator('.job-summary')).toContainText('applied: 3');
  for (const no of nos) {
    await page.goto(`/payments/${no}`);
    await expect(page.locator('#payment-status')).toHaveText('SUCCEEDED');
    await expect(page.locator('#effects tbody tr')).toHaveCount(1);
  }
});

test.describe('without JavaScript', () => {
  test.use({ javaScriptEnabled: false });

  test('every console page reads in both languages, and an alert is acknowledged with a plain form', async ({ page }) => {
    await signIn(page, 'olivia', ADMIN_PASSWORD, { hydrate: false });
    await expect(page.locator('#who')).toContainText('olivia');
    await page.goto('/');
    await expect(page.locator('#figures a.figure')).toHaveCount(5);
    await expect(page.locator('#trend title')).toHaveCount(1);
    for (const [path, table] of [
      ['/callbacks', '#callbacks'],
      ['/payments', '#payments'],
      ['/runs', '#runs'],
      ['/tickets', '#tickets'],
    ]) {
      await page.goto(path);
      await expect(page.locator(table)).toBeVisible();
    }
    // The DEAD callbacks above raised alerts; one is acknowledged.
    await page.goto('/alerts?state=open');
    const first = page.locator('#alerts tbody tr[data-state="open"]').first();
    const id = await first.getAttribute('data-alert');
    await first.locator('input.pick').check();
    await page.fill('#ack-comment', 'seen: replayed from the callbacks page');
    // Without JavaScript the form is sent at once (no confirmation step).
    await page.click('#ack-ticked');
    await expect(page).toHaveURL(/\/alerts/);
    await expect(page.locator(`#alerts tr[data-alert="${id}"][data-state="open"]`)).toHaveCount(0);
    await page.goto('/alerts?state=acknowledged');
    await expect(page.locator(`#alerts tr[data-alert="${id}"]`)).toContainText('seen: replayed from the callbacks page');

    // 中文: the same pages in the other language.
    await page.goto('/');
    await switchLanguage(page, 'zh-CN');
    await page.goto('/');
    await expect(page.locator('html')).toHaveAttribute('lang', 'zh-CN');
    await expect(page.locator('h1')).toContainText('总览');
    await expect(page.locator('#fig-unknown .label')).toHaveText('仍未明');
    await page.goto('/callbacks');
    await expect(page.locator('h1')).toHaveText('回调');
    await page.goto('/runs');
    await expect(page.locator('h1')).toHaveText('对账批次');
    await switchLanguage(page, 'en');
  });
});
