import { test, expect, APIRequestContext, Page } from '@playwright/test';
import { ADMIN_PASSWORD, clickNav, hydrated, signIn, uploadStatement } from './helpers';

// A fix two people approved closes its discrepancy for good: a backfill of
// a past day's statement line, proposed by an operator and approved by a
// supervisor in the browser, then the next day's statement and the same
// day's statement again reconciled — nothing new opened, held or alerted.
const PASSWORD = ADMIN_PASSWORD;
const API_TOKEN = process.env.API_TOKEN ?? '';
if (!API_TOKEN) throw new Error('API_TOKEN comes from the e2e setup');

const tag = () => `${Date.now().toString(36).toUpperCase()}${Math.floor(Math.random() * 1000)}`;

async function signInAs(page: Page, user: string) {
  await signIn(page, user, PASSWORD);
  await expect(page.locator('#who')).toContainText(user);
  await hydrated(page);
}

async function signOut(page: Page) {
  await page.click('#sign-out');
  await expect(page).toHaveURL(/\/login$/);
}

/** The payment as the merchant API shows it: its tickets, alerts, effects. */
async function paymentOf(request: APIRequestContext, no: string) {
  const res = await request.get(`/api/v1/payments/${no}`, { headers: { authorization: `Bearer ${API_TOKEN}` } });
  expect(res.ok(), await res.text()).toBe(true);
  return res.json();
}

test('a backfill approved by another supervisor leaves nothing behind through the next day', async ({ page, request }) => {
  const t = tag();
  // A past day of 2021 no other spec uses, and the day after it.
  const base = Date.UTC(2021, 0, 1) + Math.floor(Math.random() * 300) * 86_400_000;
  const day = new Date(base).toISOString().slice(0, 10);
  const next = new Date(base + 86_400_000).toISOString().slice(0, 10);
  const lost = { txn: `SBXFIX${t}`, no: `PAYFIX${t}`, minor: 5_555, at: `${day}T09:30:00Z` };
  const other = { txn: `SBXFIXO${t}`, no: `PAYFIXO${t}`, minor: 100, at: `${day}T11:00:00Z` };
  await uploadStatement(request, day, [lost]);

  // The operator finds the ticket from the top bar and proposes the backfill.
  await signInAs(page, 'olivia');
  await clickNav(page, '#nav-tickets');
  await expect(page).toHaveURL(/\/tickets$/);
  await hydrated(page);
  await page.fill('#f-q', lost.no);
  await page.click('#apply-filters');
  await expect(page.locator('#ticket-total strong')).toHaveText('1');
  await page.locator('#tickets a.open-ticket').first().click();
  await expect(page).toHaveURL(/\/tickets\/[0-9a-f-]+/);
  await hydrated(page);
  await page.fill('#fix-order', `ORDER-FIX-${t}`);
  await page.fill('#fix-reason', 'paid at the provider; our callback was lost');
  await page.fill('#fix-evidence', `provider console, transaction ${lost.txn}`);
  await page.click('#propose-submit');
  await expect(page.locator('#ticket')).toHaveAttribute('data-status', 'AWAITING_APPROVAL');
  await signOut(page);

  // Another person, a supervisor, approves it from the queue.
  await signInAs(page, 'sue');
  await clickNav(page, '#nav-approvals');
  await expect(page).toHaveURL(/\/approvals$/);
  await hydrated(page);
  const card = page.locator(`article.proposal:has-text("${lost.no}")`);
  await expect(card.locator('.proposer')).toHaveText('olivia');
  await card.locator('.approve-comment').fill('matches the provider record');
  await card.locator('.approve-submit').click();
  await card.locator('.confirm-yes').click();
  await expect(page.locator(`article.proposal:has-text("${lost.no}")`)).toHaveCount(0);

  const paid = await paymentOf(request, lost.no);
  expect(paid.payment.status).toBe('SUCCEEDED');

  // The next day's statement, then the day's own statement again (another
  // line added, so it is a new file; each run completes before its answer):
  // the payment matches, and nothing new is opened, held or alerted.
  await uploadStatement(request, next, [{ ...other, at: `${next}T08:00:00Z` }]);
  const again = await uploadStatement(request, day, [lost, other]);
  const after = await paymentOf(request, lost.no);
  expect(after.payment.status).toBe('SUCCEEDED');
  expect(after.discrepancies.map((d: { class: string; status: string }) => `${d.class}:${d.status}`)).toEqual([
    'PROVIDER_ONLY:CLOSED',
  ]);
  expect(after.alerts).toEqual([]);
  expect(after.effects).toHaveLength(1);
  // The day's run, as the runs page shows it: the payment matched.
  await clickNav(page, '#nav-runs');
  await expect(page).toHaveURL(/\/runs$/);
  await hydrated(page);
  const run = page.locator(`#runs tr[data-run="${again.run_id}"]`);
  await expect(run.locator('[data-class="MATCHED"] strong')).toHaveText('1');
  await expect(run.locator('[data-class="LOCAL_ONLY"]')).toHaveCount(0);
});
