import { test, expect, APIRequestContext, Page, Response } from '@playwright/test';
import { ADMIN_PASSWORD, hydrated, signIn, providerOnlyTickets } from './helpers';

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

/** `n` PROVIDER_ONLY tickets on a day of 2023 no other spec uses; the
 * prefix their transactions start with. */
async function providerOnly(request: APIRequestContext, n: number): Promise<string> {
  const prefix = `SBXB${tag()}`;
  await providerOnlyTickets(request, prefix, 2023, n);
  return prefix;
}

/** The tickets list searched for `prefix`, once the run has opened all `n` tickets. */
async function listOf(page: Page, prefix: string, n: number) {
  await expect
    .poll(async () => {
      await page.goto(`/tickets?q=${prefix}`);
      await hydrated(page);
      return page.locator('#tickets tbody tr').count();
    }, { timeout: 30_000 })
    .toBe(n);
}

/** Every request that would start, propose or undo bulk work. */
function bulkRequests(page: Page): string[] {
  const sent: string[] = [];
  page.on('request', (r) => {
    if (/\/api\/bulk\/(action|propose|undo)/.test(r.url())) sent.push(r.url());
  });
  return sent;
}

/** The ids of the jobs the bulk bar lists. */
async function jobIds(page: Page): Promise<string[]> {
  return page.locator('#bulk-jobs .job').evaluateAll((jobs) => jobs.map((j) => j.getAttribute('data-job') ?? ''));
}

/** The jobs the tickets page lists, once the fetch it makes after hydrating
 * has answered and its answer is drawn. */
async function loadedJobIds(page: Page, answered: Promise<Response>): Promise<string[]> {
  const jobs: unknown[] = await (await answered).json();
  await expect.poll(async () => (await jobIds(page)).length).toBe(jobs.length);
  return jobIds(page);
}

const jobsAnswered = (page: Page) => page.waitForResponse((r) => r.url().includes('/api/bulk/jobs') && r.ok());

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
  // The ticked ones, not the whole filter; asked with their count first.
  await expect(page.locator('#scope-ticked')).toBeChecked();
  await expect(page.locator('#scope-all')).not.toBeChecked();
  await expect(page.locator('#bulk-count')).toHaveAttribute('data-count', '3');
  await page.selectOption('#bulk-kind', 'BACKFILL');
  await page.fill('#bulk-reason', 'paid at the provider; settlement late');
  await page.fill('#bulk-evidence', 'statement of ' + today());
  await page.click('#bulk-propose-submit');
  const form = page.locator('#bulk-propose-form');
  await expect(form.locator('.confirm-question')).toContainText('BACKFILL for 3 tickets');
  await form.locator('.confirm-yes').click();
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
  await expect(page.locator('#bulk-approve-form .confirm-question')).toContainText('all 3 waiting items');
  await page.locator('#bulk-approve-form .confirm-yes').click();
  await expect(page.locator('#bulk-executed')).toHaveText('3', { timeout: 20_000 });
  await expect(page.locator('#bulk-jobs .job[data-status="DONE"]').first()).toBeVisible({ timeout: 20_000 });
  for (const p of paid) {
    const r = await request.get(`/api/v1/payments/${p.no}`, { headers: { authorization: `Bearer ${API_TOKEN}` } });
    expect((await r.json()).payment?.status).toBe('SUCCEEDED');
  }
  await request.post(`${SANDBOX_URL}/v1/chaos`, { data: {} });
});

test('with nothing ticked, bulk work sends nothing and says why', async ({ page, request }) => {
  const prefix = await providerOnly(request, 2);
  await signIn(page, 'olivia', PASSWORD);
  await expect(page.locator('#who')).toContainText('olivia');
  const answered = jobsAnswered(page);
  await listOf(page, prefix, 2);
  const sent = bulkRequests(page);
  const before = await loadedJobIds(page, answered);

  // Nothing ticked and the whole filter not chosen: both starts are off,
  // and the page says what to do.
  await expect(page.locator('#scope-ticked')).toBeChecked();
  await expect(page.locator('#scope-all')).not.toBeChecked();
  await expect(page.locator('#bulk-none')).toBeVisible();
  await expect(page.locator('#bulk-count')).toHaveAttribute('data-count', '0');
  await page.selectOption('#bulk-action', 'CLOSE');
  await page.fill('#bulk-text', 'should never be sent');
  await expect(page.locator('#bulk-action-submit')).toBeDisabled();
  await expect(page.locator('#bulk-propose-submit')).toBeDisabled();
  // Enter in the field submits nothing either.
  await page.locator('#bulk-text').press('Enter');
  await expect(page.locator('.confirm-question')).toHaveCount(0);

  // No request went, no job appeared, the tickets are as they were.
  expect(sent).toEqual([]);
  const again = jobsAnswered(page);
  await page.reload();
  await hydrated(page);
  expect(await loadedJobIds(page, again)).toEqual(before);
  await expect(page.locator('#tickets td.status')).toHaveText(['open', 'open']);
});

test('all matching the filter is chosen by hand, states its count and asks: Cancel sends nothing, Confirm runs it', async ({
  page,
  request,
}) => {
  const prefix = await providerOnly(request, 3);
  await signIn(page, 'olivia', PASSWORD);
  await expect(page.locator('#who')).toContainText('olivia');
  await listOf(page, prefix, 3);
  const sent = bulkRequests(page);

  await expect(page.locator('#ticket-total')).toContainText('3');
  await expect(page.locator('label:has(#scope-all)')).toContainText('all 3 matching the filter');
  await page.locator('#scope-all').check();
  await expect(page.locator('#bulk-count')).toHaveAttribute('data-count', '3');
  await expect(page.locator('#bulk-none')).toHaveCount(0);
  await page.selectOption('#bulk-action', 'COMMENT');
  await page.fill('#bulk-text', 'checked against the bank statement');
  await page.click('#bulk-action-submit');
  const form = page.locator('#bulk-action-form');
  await expect(form.locator('.confirm-question')).toHaveText('Add this comment to all 3 tickets matching the filter?');

  // Cancel: the question goes, nothing is sent.
  await form.locator('.confirm-no').click();
  await expect(form.locator('.confirm-question')).toHaveCount(0);
  await expect(page.locator('#bulk-action-submit')).toBeEnabled();
  expect(sent).toEqual([]);

  // Asked again and confirmed: one request, one job over all three.
  await page.click('#bulk-action-submit');
  await form.locator('.confirm-yes').click();
  await expect(page.locator('#bulk-started')).toContainText('3');
  const job = await page.locator('#bulk-started').getAttribute('data-job');
  const row = page.locator(`#bulk-jobs .job[data-job="${job}"]`);
  await expect(row).toHaveAttribute('data-status', 'DONE', { timeout: 20_000 });
  await expect(row.locator('.job-done')).toHaveText('3');
  expect(sent).toHaveLength(1);
  // The whole filter is not kept for the next bulk.
  await expect(page.locator('#scope-ticked')).toBeChecked();
});

test('a bulk close is undone from its job: the tickets it closed are reopened', async ({ page, request }) => {
  const prefix = await providerOnly(request, 2);
  await signIn(page, 'olivia', PASSWORD);
  await expect(page.locator('#who')).toContainText('olivia');
  await listOf(page, prefix, 2);
  await page.locator('#pick-page').check();
  await expect(page.locator('#bulk-count')).toHaveAttribute('data-count', '2');
  await page.selectOption('#bulk-action', 'CLOSE');
  await page.fill('#bulk-text', 'sandbox test charges');
  await page.click('#bulk-action-submit');
  const form = page.locator('#bulk-action-form');
  await expect(form.locator('.confirm-question')).toContainText('Close 2 tickets');
  await expect(form.locator('.confirm-question')).toContainText('10 minutes');
  await form.locator('.confirm-yes').click();
  const job = await page.locator('#bulk-started').getAttribute('data-job');
  const row = page.locator(`#bulk-jobs .job[data-job="${job}"]`);
  await expect(row).toHaveAttribute('data-status', 'DONE', { timeout: 20_000 });
  await page.reload();
  await hydrated(page);
  await expect(page.locator('#tickets td.status')).toHaveText(['closed', 'closed']);

  // The job offers its undo, and says until when.
  await expect(row.locator('.undo-submit')).toContainText('reopen the 2 tickets');
  await expect(row.locator('.undo-until')).toContainText('10 minutes after the job ended');
  await row.locator('.undo-submit').click();
  const reopening = await page.locator('#bulk-undone').getAttribute('data-job');
  await expect(page.locator(`#bulk-jobs .job[data-job="${reopening}"]`)).toHaveAttribute('data-status', 'DONE', {
    timeout: 20_000,
  });
  await expect(page.locator(`#bulk-jobs .job[data-job="${reopening}"]`)).toHaveAttribute('data-kind', 'REOPEN');
  await expect(row.locator('.undone')).toContainText(reopening!);
  await expect(row.locator('.undo-submit')).toHaveCount(0);
  await page.reload();
  await hydrated(page);
  await expect(page.locator('#tickets td.status')).toHaveText(['in progress', 'in progress']);
});
