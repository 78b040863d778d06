import { test, expect, Page, APIRequestContext } from '@playwright/test';
import { ADMIN_PASSWORD, hydrated, signIn, switchLanguage, nowIso, uploadStatement as uploadRun } from './helpers';

// Money as money: a run's checks, an approval card and the audit log read
// amounts in major units with their currency and times with their zone.
const API_TOKEN = process.env.API_TOKEN ?? '';
if (!API_TOKEN) throw new Error('API_TOKEN comes from .ci/test');

const today = () => new Date().toISOString().slice(0, 10);
const tag = () => `${Date.now().toString(36).toUpperCase()}${Math.floor(Math.random() * 1000)}`;
// A time as the console shows one standing alone: in the business zone, named.
const ZONED = /\d{4}-\d{2}-\d{2} \d{2}:\d{2} (UTC|[A-Za-z_]+\/[A-Za-z_/+-]+)/;

/** Uploads a sandbox statement for today whose rows are all paid; its run. */
async function uploadStatement(request: APIRequestContext, rows: { txn: string; no: string; amount: string }[]) {
  const at = nowIso();
  const listed = rows.map((r) => ({ txn: r.txn, no: r.no, minor: Math.round(parseFloat(r.amount) * 100), at }));
  return (await uploadRun(request, today(), listed)).run_id;
}

async function signInEnglish(page: Page, user: string) {
  await signIn(page, user, ADMIN_PASSWORD);
  await expect(page.locator('#who')).toContainText(user);
  await hydrated(page);
  if ((await page.locator('html').getAttribute('lang')) !== 'en') await switchLanguage(page, 'en');
}

test('a run, an approval card and the audit log read money in major units with the currency', async ({
  page,
  request,
}) => {
  const t = tag();
  const lost = { txn: `SBXM${t}`, no: `PAYM${t}`, amount: '15.00' };
  const big = { txn: `SBXMB${t}`, no: `PAYMB${t}`, amount: '12345.67' };
  const run = await uploadStatement(request, [lost, big]);

  // The run's own checks: the total with its currency and grouped digits.
  await signInEnglish(page, 'olivia');
  await page.goto(`/runs?run=${run}`);
  await hydrated(page);
  const row = page.locator(`#runs tr[data-run="${run}"]`);
  await expect(row).toHaveAttribute('data-status', 'COMPLETED', { timeout: 120_000 });
  await expect(row.locator('[data-check="total_minor"]')).toHaveText('total 12,360.67 CNY = 12,360.67 CNY');
  await expect(row.locator('[data-check="rows"]')).toHaveText('rows 2 = 2');

  // The operator proposes the backfill of the lost payment.
  await page.goto(`/tickets?class=PROVIDER_ONLY&q=${lost.no}`);
  const href = await page.locator('#tickets a.open-ticket').first().getAttribute('href');
  await page.goto(href!);
  await hydrated(page);
  await page.fill('#fix-order', `ORDER-M${t}`);
  await page.fill('#fix-reason', 'paid at the provider; our callback was lost');
  await page.fill('#fix-evidence', `provider console, transaction ${lost.txn}`);
  await page.click('#propose-submit');
  await expect(page.locator('#ticket')).toHaveAttribute('data-status', 'AWAITING_APPROVAL');

  // Its card reads as a sentence and a table of what changes.
  const card = page.locator(`#proposals article.proposal`).first();
  await expect(card.locator('.proposal-sentence')).toHaveText(
    `Backfill payment ${lost.no}: create it for order ORDER-M${t} and mark it paid 15.00 CNY as the statement says`,
  );
  const field = (key: string) => card.locator(`.proposal-fields tr[data-field="${key}"]`);
  await expect(field('amount_minor').locator('th')).toHaveText('Amount');
  await expect(field('amount_minor').locator('.before')).toHaveText('—');
  await expect(field('amount_minor').locator('.after')).toHaveText('15.00 CNY');
  await expect(field('order_no').locator('.after')).toHaveText(`ORDER-M${t}`);
  await expect(field('status').locator('.after')).toHaveText('SUCCEEDED');
  await expect(field('paid_at').locator('.after')).toHaveText(ZONED);
  await expect(card).toContainText(ZONED);
  await expect(card.locator('.proposal-fields')).not.toContainText('1500');
  const ticketUrl = page.url();
  await page.click('#sign-out');
  await expect(page).toHaveURL(/\/login$/);

  // The supervisor sees the same card in the queue, in Chinese too.
  await signInEnglish(page, 'sam');
  await page.goto('/approvals');
  await hydrated(page);
  const queued = page.locator(`article.proposal:has-text("${lost.no}")`);
  await expect(queued.locator('.proposal-sentence')).toContainText('mark it paid 15.00 CNY as the statement says');
  await switchLanguage(page, 'zh-CN');
  await expect(queued.locator('.proposal-sentence')).toHaveText(
    `补单 ${lost.no}：为订单 ORDER-M${t} 创建支付单，并按账单标记为已支付 15.00 CNY`,
  );
  await expect(queued.locator('.proposal-fields tr[data-field="amount_minor"] th')).toHaveText('金额');
  await expect(queued.locator('.proposal-fields thead')).toContainText('差额');
  await switchLanguage(page, 'en');

  // The audit log: the proposal's entry links its ticket, its time is in
  // the zone, what it intends reads in major units.
  await page.goto('/audit?action=fix.propose');
  await hydrated(page);
  const entry = page.locator('#audit tr[data-action="fix.propose"]').filter({ hasText: `ORDER-M${t}` });
  await expect(entry).toHaveCount(1);
  await expect(entry.locator('a.object-link')).toHaveAttribute('href', new URL(ticketUrl).pathname);
  await expect(entry.locator('td.when')).toHaveText(/^\d{4}-\d{2}-\d{2} \d{2}:\d{2}$/);
  await expect(entry).toContainText('"amount": "15.00 CNY"');
  await expect(entry).not.toContainText('amount_minor');
  await expect(page.locator('#audit thead')).toContainText(/Time \((UTC|[A-Za-z_]+\/[A-Za-z_]+)\)/);
  await entry.locator('a.object-link').click();
  await expect(page).toHaveURL(new RegExp(`${new URL(ticketUrl).pathname}$`));
});
