import { test, expect, Page, APIRequestContext } from '@playwright/test';
import { ADMIN_PASSWORD, clickNav, hydrated, signIn, nowIso, uploadStatement } from './helpers';

// What a person meets touring the console, reached by clicking: a payment's
// outbox messages and their indented payloads, the resend controls (the
// server has a sink: .ci/test sets RECKON_OUTBOX_SINKS), a comment on a
// proposal before deciding it, and a day's reopening asked in the page.
// Users made by .ci/test: olivia (operator), sam and sue (supervisors).
const API_TOKEN = process.env.API_TOKEN ?? '';
if (!API_TOKEN) throw new Error('API_TOKEN comes from .ci/test');
const auth = { authorization: `Bearer ${API_TOKEN}` };

const tag = () => `${Date.now().toString(36).toUpperCase()}${Math.floor(Math.random() * 1000)}`;
const today = () => new Date().toISOString().slice(0, 10);

/** Collects uncaught errors of the page. */
function watchErrors(page: Page): string[] {
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  return errors;
}

async function signInAs(page: Page, user: string) {
  await signIn(page, user, ADMIN_PASSWORD);
  await expect(page.locator('#who')).toContainText(user);
  await hydrated(page);
}

async function signOut(page: Page) {
  await page.click('#sign-out');
  await expect(page).toHaveURL(/\/login$/);
}

async function noFailure(page: Page) {
  await expect(page.locator('p.error[role="alert"]')).toHaveCount(0);
}

/** A payment through the merchant API, paid by the sandbox. */
async function paidPayment(request: APIRequestContext, order: string): Promise<string> {
  const created = await request.post('/api/v1/payments', {
    headers: { ...auth, 'idempotency-key': `tour-${order}` },
    data: { order_no: order, provider: 'sandbox', amount_minor: 4321, currency: 'CNY' },
  });
  expect(created.status(), await created.text()).toBe(201);
  const no = (await created.json()).payment_no as string;
  await expect
    .poll(async () => (await (await request.get(`/api/v1/payments/${no}`, { headers: auth })).json()).payment?.status, {
      timeout: 30_000,
    })
    .toBe('SUCCEEDED');
  return no;
}

test('a payment links its outbox messages; a message reads as indented JSON and can be resent', async ({
  page,
  request,
}) => {
  const no = await paidPayment(request, `ORDER-TOUR-${tag()}`);
  const errors = watchErrors(page);
  await signInAs(page, 'olivia');

  await clickNav(page, '#nav-payments');
  await expect(page).toHaveURL(/\/payments$/);
  await hydrated(page);
  await page.fill('#p-q', no);
  await page.click('#p-search');
  await expect(page).toHaveURL(/q=/);
  await page.locator('#payments a.open-payment').first().click();
  await expect(page).toHaveURL(new RegExp(`/payments/${no}$`));
  await expect(page.locator('#payment-status')).toHaveText('SUCCEEDED');
  const message = page.locator('#outbox td.what a[href^="/outbox/"]');
  await expect(message).toHaveCount(1);
  await expect(message).toContainText('payment.succeeded');
  await expect(page.locator('#outbox')).toContainText('attempt');

  // The message: its payload one field a line, and a resend offered.
  await message.click();
  await expect(page).toHaveURL(/\/outbox\/[0-9a-f-]+$/);
  await expect(page.locator('#event-type')).toHaveText('payment.succeeded');
  const payload = (await page.locator('#payload').textContent()) ?? '';
  expect(payload.startsWith('{\n  "')).toBe(true);
  expect(payload).toContain(`"payment_no": "${no}"`);
  await expect(page.locator('#resend-all')).toBeVisible();
  await expect(page.locator('#no-sink')).toHaveCount(0);

  // Back to the payment, and to the outbox page filtered to it.
  await page.click('#message-payment');
  await expect(page).toHaveURL(new RegExp(`/payments/${no}$`));
  await page.click('#outbox a.more');
  await expect(page).toHaveURL(new RegExp(`/outbox\\?payment=${no}$`));
  await expect(page.locator('#o-payment')).toHaveValue(no);
  await expect(page.locator('#outbox tbody tr[data-message]')).toHaveCount(1);
  await expect(page.locator('#bulk-resend')).toBeVisible();
  await expect(page.locator('#no-sink')).toHaveCount(0);
  await noFailure(page);
  expect(errors).toEqual([]);
});

/** A statement of today with one payment Reckon does not have. */
async function providerOnly(request: APIRequestContext, no: string, txn: string) {
  await uploadStatement(request, today(), [{ txn, no, minor: 2345, at: nowIso() }]);
}

test('a supervisor comments on a proposal, then rejects it with the comment box as the reason', async ({
  page,
  request,
}) => {
  const t = tag();
  const no = `PAYTOURCMT${t}`;
  await providerOnly(request, no, `SBXTOURCMT${t}`);
  const errors = watchErrors(page);

  // The operator proposes a backfill from the ticket, reached from the list.
  await signInAs(page, 'olivia');
  await page.click('#nav-tickets');
  await expect(page).toHaveURL(/\/tickets/);
  await hydrated(page);
  await page.selectOption('#f-class', 'PROVIDER_ONLY');
  await page.fill('#f-q', no);
  await page.click('#apply-filters');
  await expect(page.locator('#tickets tbody tr')).toHaveCount(1);
  const href = await page.locator('#tickets tbody tr a.open-ticket').first().getAttribute('href');
  await page.goto(href!);
  await hydrated(page);
  await page.fill('#fix-order', `ORDER-${t}`);
  await page.fill('#fix-reason', 'paid at the provider; our callback was lost');
  await page.fill('#fix-evidence', 'provider console');
  await page.click('#propose-submit');
  await expect(page.locator('#ticket')).toHaveAttribute('data-status', 'AWAITING_APPROVAL');
  const ticketUrl = page.url();
  await signOut(page);

  // The supervisor asks a question on the card: nothing is decided.
  await signInAs(page, 'sam');
  await page.click('#nav-approvals');
  await expect(page).toHaveURL(/\/approvals$/);
  await hydrated(page);
  const card = page.locator(`article.proposal:has-text("${no}")`);
  await expect(card).toHaveCount(1);
  await expect(card.locator('input.proposal-comment')).toHaveCount(1);
  await expect(card.locator('.approve-submit')).toBeDisabled();
  await card.locator('input.proposal-comment').fill('which order is it?');
  await card.locator('.comment-proposal-submit').click();
  await expect(card.locator('.proposal-comment-item')).toHaveCount(1);
  await expect(card.locator('.proposal-comment-item')).toContainText('which order is it?');
  await expect(card.locator('.proposal-comment-item .comment-author')).toHaveText('sam');
  await expect(card.locator('input.proposal-comment')).toHaveValue('');
  await expect(card).toHaveAttribute('data-status', 'PENDING');

  // After a reload it is still on the card.
  await page.reload();
  await hydrated(page);
  await expect(card.locator('.proposal-comment-item')).toContainText('which order is it?');

  // Rejected with the box's text as the reason, asked first.
  await card.locator('input.proposal-comment').fill('no order matches this payment');
  await card.locator('.reject-submit').click();
  await expect(card.locator('.confirm-question')).toContainText('Reject');
  await card.locator('.confirm-yes').click();
  await expect(page.locator(`article.proposal:has-text("${no}")`)).toHaveCount(0);
  await expect(page.locator('#decided')).toContainText('REJECTED');

  // The ticket keeps the comment among its notes.
  await page.goto(ticketUrl);
  await hydrated(page);
  await expect(page.locator('#notes')).toContainText('which order is it?');
  await noFailure(page);
  expect(errors).toEqual([]);
});

/** A day in 2025 no other test uses, with one unknown statement line. */
async function pastDayWithRun(request: APIRequestContext): Promise<string> {
  const day = new Date(Date.UTC(2025, 0, 1) + Math.floor(Math.random() * 300) * 86_400_000)
    .toISOString()
    .slice(0, 10);
  const txn = `SBXREOPEN${tag()}`;
  const csv =
    'kind,txn_id,payment_no,refund_id,refund_no,status,amount,currency,occurred_at\n' +
    `payment,${txn},PAY${txn},,,SUCCEEDED,5.00,CNY,${day}T10:00:00Z\n` +
    '#summary,rows=1,total_minor=500\n';
  const res = await request.post('/api/v1/recon/runs', {
    headers: auth,
    multipart: {
      provider: 'sandbox',
      business_date: day,
      file: { name: 'sandbox-statement.csv', mimeType: 'text/csv', buffer: Buffer.from(csv) },
    },
  });
  expect(res.status(), await res.text()).toBe(201);
  return day;
}

test('reopening a closed day and approving the reopening each ask in the page first', async ({ page, request }) => {
  const day = await pastDayWithRun(request);
  const errors = watchErrors(page);
  await signInAs(page, 'sam');
  await page.goto(`/?day=${day}&provider=sandbox`);
  await hydrated(page);
  const row = page.locator('#close-table tr[data-provider="sandbox"]');
  await expect(row).toHaveAttribute('data-state', 'OPEN');
  await row.locator('.close-day .close-reason').fill('closing for the tour');
  await row.locator('.close-day .close-submit').click();
  await row.locator('.close-day .confirm-yes').click();
  await expect(row).toHaveAttribute('data-state', 'CLOSED');

  // Proposing a reopening asks first; Cancel sends nothing.
  await row.locator('.propose-reopen .close-reason').fill('a late statement line');
  await row.locator('.propose-reopen .close-submit').click();
  await expect(row.locator('.propose-reopen .confirm-question')).toContainText(day);
  await row.locator('.propose-reopen .confirm-no').click();
  await expect(row.locator('.reopen-pending')).toHaveCount(0);
  await row.locator('.propose-reopen .close-submit').click();
  await row.locator('.propose-reopen .confirm-yes').click();
  await expect(row.locator('.reopen-pending')).toContainText('sam');
  await signOut(page);

  // Another supervisor approves, asked first.
  await signInAs(page, 'sue');
  await page.goto(`/?day=${day}&provider=sandbox`);
  await hydrated(page);
  await expect(row.locator('.reject-reopen .close-submit')).toBeVisible();
  await row.locator('.approve-reopen .close-submit').click();
  await expect(row.locator('.approve-reopen .confirm-question')).toContainText(day);
  await expect(row).toHaveAttribute('data-state', 'CLOSED');
  await row.locator('.approve-reopen .confirm-yes').click();
  await expect(row).toHaveAttribute('data-state', 'REOPENED');
  await noFailure(page);
  expect(errors).toEqual([]);
});
