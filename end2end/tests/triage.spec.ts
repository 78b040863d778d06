import { test, expect, Locator, Page, APIRequestContext } from '@playwright/test';
import { ADMIN_PASSWORD, hydrated, signIn, nowIso, uploadStatement as uploadRun } from './helpers';

/** Opens the ticket a list row links to, by its address: once bulk jobs
 * exist the tickets page polls them, and a click can race that re-render. */
async function openTicket(page: Page, link: Locator) {
  const href = await link.first().getAttribute('href');
  expect(href).toBeTruthy();
  await page.goto(href!);
}

// Users made by .ci/test with the same password: olivia (operator), sam and
// sue (supervisors). The sandbox provider runs as its own process.
const PASSWORD = ADMIN_PASSWORD;
const API_TOKEN = process.env.API_TOKEN ?? '';
const SANDBOX_URL = process.env.SANDBOX_URL ?? '';
const SHOTS = process.env.SCREENSHOTS ?? 'test-results/screenshots';
if (!API_TOKEN || !SANDBOX_URL) throw new Error('API_TOKEN and SANDBOX_URL come from .ci/test');

const today = () => new Date().toISOString().slice(0, 10);
const tag = () => `${Date.now().toString(36).toUpperCase()}${Math.floor(Math.random() * 1000)}`;

/** Uploads a sandbox statement for today whose rows are all paid. */
async function uploadStatement(request: APIRequestContext, rows: { txn: string; no: string; amount: string }[]) {
  const at = nowIso();
  const listed = rows.map((r) => ({ txn: r.txn, no: r.no, minor: Math.round(parseFloat(r.amount) * 100), at }));
  await uploadRun(request, today(), listed);
}

/** Signs in and makes sure the console speaks `lang`. */
async function signInAs(page: Page, user: string, lang: 'en' | 'zh') {
  await signIn(page, user, PASSWORD);
  await expect(page.locator('#who')).toContainText(user);
  await hydrated(page);
  const current = await page.locator('html').getAttribute('lang');
  if ((lang === 'zh') !== (current === 'zh-CN')) {
    await page.click('#lang-switch');
    await expect(page.locator('html')).toHaveAttribute('lang', lang === 'zh' ? 'zh-CN' : 'en');
  }
}

async function signOut(page: Page) {
  await page.click('#sign-out');
  await expect(page).toHaveURL(/\/login$/);
}

for (const lang of ['en', 'zh'] as const) {
  test(`[${lang}] operator proposes a backfill for a PROVIDER_ONLY ticket; another supervisor approves; it runs once`, async ({
    page,
    request,
  }) => {
    const t = tag();
    const lost = { txn: `SBXLOST${t}`, no: `PAYLOST${t}`, amount: '66.60' };
    const own = { txn: `SBXOWN${t}`, no: `PAYOWN${t}`, amount: '12.00' };
    await uploadStatement(request, [lost, own]);

    // The operator filters the list to the ticket and opens it.
    await signInAs(page, 'olivia', lang);
    await page.goto('/tickets');
    await hydrated(page);
    await page.selectOption('#f-class', 'PROVIDER_ONLY');
    await page.fill('#f-q', lost.no);
    await page.click('#apply-filters');
    await expect(page).toHaveURL(/class=PROVIDER_ONLY/);
    await expect(page.locator('#ticket-total strong')).toHaveText('1');
    const row = page.locator('#tickets tbody tr');
    await expect(row).toHaveCount(1);
    await expect(row).toHaveAttribute('data-class', 'PROVIDER_ONLY');
    if (lang === 'en') await page.screenshot({ path: `${SHOTS}/1-ticket-list.png`, fullPage: true });
    await openTicket(page, row.locator('a.open-ticket'));
    // The list's filters travel with the ticket (its queue: previous, next, back).
    await expect(page).toHaveURL(/\/tickets\/[0-9a-f-]+\?class=PROVIDER_ONLY&q=/);
    await hydrated(page);
    await expect(page.locator('#sides tr[data-field="amount"] .provider-side')).toContainText('66.60 CNY');
    await expect(page.locator('#sides tr[data-field="amount"] .local-side')).toHaveText('—');

    // Proposes the backfill with its evidence.
    await page.fill('#fix-order', `ORDER-${t}`);
    await page.fill('#fix-reason', 'paid at the provider; our callback was lost');
    await page.fill('#fix-evidence', 'provider console, transaction ' + lost.txn);
    await page.click('#propose-submit');
    await expect(page.locator('#ticket')).toHaveAttribute('data-status', 'AWAITING_APPROVAL');
    await expect(page.locator('#ticket-status')).toHaveText(lang === 'en' ? 'awaiting approval' : '待审批');
    if (lang === 'en') await page.screenshot({ path: `${SHOTS}/2-ticket-detail.png`, fullPage: true });
    const ticketUrl = page.url();
    await signOut(page);

    // Sam (a supervisor) proposes the other ticket's fix himself …
    await signInAs(page, 'sam', lang);
    await page.goto('/tickets?class=PROVIDER_ONLY&q=' + own.no);
    await openTicket(page, page.locator('#tickets a.open-ticket'));
    await hydrated(page);
    await page.fill('#fix-order', `ORDER-OWN-${t}`);
    await page.fill('#fix-reason', 'same cause');
    await page.fill('#fix-evidence', 'provider console');
    await page.click('#propose-submit');
    await expect(page.locator('#ticket')).toHaveAttribute('data-status', 'AWAITING_APPROVAL');

    // … and in the queue sees no Approve button on his own proposal, while
    // he may decide olivia's.
    await page.goto('/approvals');
    await hydrated(page);
    const mine = page.locator(`article.proposal:has-text("${own.no}")`);
    const hers = page.locator(`article.proposal:has-text("${lost.no}")`);
    await expect(mine).toHaveCount(1);
    await expect(mine.locator('.approve-submit')).toHaveCount(0);
    await expect(mine.locator('.own')).toBeVisible();
    await expect(hers.locator('.proposer')).toHaveText('olivia');
    if (lang === 'en') await page.screenshot({ path: `${SHOTS}/3-approvals.png`, fullPage: true });
    await hers.locator('.approve-comment').fill('matches the provider record');
    // Asked in the page, in the page's language, before anything is sent.
    await hers.locator('.approve-submit').click();
    await expect(hers.locator('.confirm-question')).toContainText(lang === 'en' ? 'Approve and execute' : '批准并立即执行');
    await hers.locator('.confirm-no').click();
    await expect(hers.locator('.confirm-question')).toHaveCount(0);
    await expect(hers).toHaveCount(1);
    await hers.locator('.approve-submit').click();
    await hers.locator('.confirm-yes').click();
    await expect(page.locator('#action-result')).toBeVisible();
    await expect(page.locator(`article.proposal:has-text("${lost.no}")`)).toHaveCount(0);

    // The ticket is closed with the conclusion; the payment is SUCCEEDED
    // with exactly one effect.
    await page.goto(ticketUrl);
    await hydrated(page);
    await expect(page.locator('#ticket')).toHaveAttribute('data-status', 'CLOSED');
    await expect(page.locator('#ticket-status')).toHaveText(lang === 'en' ? 'closed' : '已关闭');
    await expect(page.locator('#ticket-conclusion')).toContainText('matches the provider record');
    await expect(page.locator('#sides tr[data-field="status"] .local-side')).toHaveText('SUCCEEDED');
    await expect(page.locator('#timeline tr[data-kind="effect"]')).toHaveCount(1);
    await expect(page.locator('#timeline tr[data-kind="effect"]')).toContainText('ORDER_PAID');
    if (lang === 'en') await page.screenshot({ path: `${SHOTS}/4-ticket-closed.png`, fullPage: true });
    await signOut(page);

    // Another supervisor does see the Approve button on sam's proposal.
    await signInAs(page, 'sue', lang);
    await page.goto('/approvals');
    await expect(page.locator(`article.proposal:has-text("${own.no}") .approve-submit`)).toHaveCount(1);
    // The audit page lists the steps.
    await page.goto('/audit?action=fix');
    await expect(page.locator('#audit tr[data-action="fix.execute"]').first()).toBeVisible();
    await signOut(page);
  });
}

test('a STATUS_LAG ticket: the callback that came late is replayed from the ticket, and nothing happens twice', async ({
  page,
  request,
}) => {
  const t = tag();
  // The sandbox settles slowly, so the statement says paid while Reckon
  // (and the sandbox's own query) still says pending.
  expect((await request.post(`${SANDBOX_URL}/v1/chaos`, { data: { settle_ms: 6000 } })).ok()).toBe(true);
  const created = await request.post('/api/v1/payments', {
    headers: { authorization: `Bearer ${API_TOKEN}`, 'idempotency-key': `lag-${t}` },
    data: { order_no: `ORDER-LAG-${t}`, provider: 'sandbox', amount_minor: 4200, currency: 'CNY' },
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
  await uploadStatement(request, [{ txn, no, amount: '42.00' }]);
  await request.post(`${SANDBOX_URL}/v1/chaos`, { data: {} });
  // The late callback arrives and is applied.
  await expect
    .poll(async () => {
      const r = await request.get(`/api/v1/payments/${no}`, { headers: { authorization: `Bearer ${API_TOKEN}` } });
      return (await r.json()).payment?.status;
    }, { timeout: 20_000 })
    .toBe('SUCCEEDED');

  await signInAs(page, 'olivia', 'en');
  await page.goto(`/tickets?class=STATUS_LAG&q=${no}`);
  await openTicket(page, page.locator('#tickets a.open-ticket'));
  await hydrated(page);
  await expect(page.locator('#ticket')).toHaveAttribute('data-status', 'OPEN');
  const replay = page.locator('#callbacks button.replay-submit').first();
  await replay.click();
  await expect(page.locator('#action-result')).toContainText('duplicate');
  await expect(page.locator('#ticket')).toHaveAttribute('data-status', 'CLOSED');
  await expect(page.locator('#timeline tr[data-kind="effect"]')).toHaveCount(1);
  await signOut(page);
});

test.describe('without JavaScript', () => {
  test.use({ javaScriptEnabled: false });

  test('the list filters and the ticket page reads and takes a comment as plain forms', async ({ page, request }) => {
    const t = tag();
    const row = { txn: `SBXNOJS${t}`, no: `PAYNOJS${t}`, amount: '3.30' };
    await uploadStatement(request, [row]);
    await signIn(page, 'olivia', PASSWORD, { hydrate: false });
    await expect(page.locator('#who')).toContainText('olivia');
    await page.goto('/tickets');
    await page.fill('#f-q', row.no);
    await page.click('#apply-filters');
    await expect(page.locator('#tickets tbody tr')).toHaveCount(1);
    await openTicket(page, page.locator('#tickets a.open-ticket'));
    await expect(page.locator('#sides')).toBeVisible();
    await page.fill('#comment-text', 'checked without scripts');
    await page.click('#comment-submit');
    await expect(page.locator('#notes li[data-kind="comment"]')).toContainText('checked without scripts');
    await expect(page.locator('#ticket')).toHaveAttribute('data-status', 'IN_PROGRESS');
  });
});
