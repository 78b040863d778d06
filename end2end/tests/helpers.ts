import { expect, APIRequestContext, Page } from '@playwright/test';

export const ADMIN_PASSWORD = process.env.ADMIN_PASSWORD ?? '';
if (!ADMIN_PASSWORD) throw new Error('ADMIN_PASSWORD is not set: run through .ci/test');

/** Waits until the WebAssembly has hydrated the page. */
export async function hydrated(page: Page) {
  await expect(page.locator('body[data-hydrated="true"]')).toHaveCount(1);
}

/**
 * What a page said to its console, the errors it threw and its runs-list
 * requests: printed when a page stops following what it shows.
 */
const pageLogs = new WeakMap<Page, string[]>();
export function watch(page: Page) {
  if (pageLogs.has(page)) return;
  const log: string[] = [];
  pageLogs.set(page, log);
  const at = () => new Date().toISOString().slice(11, 23);
  page.on('pageerror', (e) => log.push(`${at()} pageerror: ${e.message}`));
  page.on('console', (m) => {
    if (m.type() === 'error' || m.type() === 'warning') log.push(`${at()} console.${m.type()}: ${m.text()}`);
  });
  page.on('requestfailed', (r) => log.push(`${at()} request failed: ${r.url()} ${r.failure()?.errorText}`));
  page.on('response', (r) => {
    if (r.url().includes('runs/list')) log.push(`${at()} ${r.url()} ${r.status()}`);
  });
  page.on('load', () => log.push(`${at()} load ${page.url()}`));
}

export async function signIn(page: Page, username: string, password: string, opts = { hydrate: true }) {
  watch(page);
  await page.goto('/login');
  if (opts.hydrate) await hydrated(page);
  await page.fill('#username', username);
  await page.fill('#password', password);
  await page.click('#sign-in');
}

/**
 * Switches the console's language with the header's switch and waits until
 * the page is in `to`: a navigation started before the switch answered
 * would cancel it (and leave the language for the tests after).
 */
export async function switchLanguage(page: Page, to: 'zh-CN' | 'en') {
  await page.click('#lang-switch');
  await expect(page.locator('html')).toHaveAttribute('lang', to);
}

/**
 * After a statement upload: the runs page it redirected to, followed until
 * the run completes. The redirect is a full page load, and the page polls
 * the run only once hydrated. Returns the run's id.
 */
export async function uploadedRunCompletes(page: Page) {
  await expect(page).toHaveURL(/\/runs\?run=RUN/);
  await hydrated(page);
  const run = new URL(page.url()).searchParams.get('run')!;
  const row = page.locator(`#runs tr[data-run="${run}"]`);
  try {
    await expect(row).toHaveAttribute('data-status', 'COMPLETED', { timeout: 120_000 });
  } catch (e) {
    const log = (pageLogs.get(page) ?? []).slice(-40).join('\n');
    throw new Error(`${e}\n--- the page's log:\n${log}`);
  }
  return run;
}

export function unique(prefix: string) {
  return `${prefix}${Date.now().toString(36)}${Math.floor(Math.random() * 1000)}`;
}

/**
 * Clicks a link of the top bar by its id, as a person reaches it: on a
 * phone the menu is opened first, and a link inside a group (Money,
 * Reconcile, Admin) has its group opened first.
 */
export async function clickNav(page: Page, id: string) {
  const link = page.locator(id);
  if (!(await link.isVisible())) {
    const menu = page.locator('#menu-button');
    if ((await menu.isVisible()) && !(await page.locator('#main-nav').isVisible())) await menu.click();
    const group = page.locator(`details.group:has(${id})`);
    if ((await group.count()) > 0 && !(await group.evaluate((d) => (d as HTMLDetailsElement).open))) {
      await group.locator('summary').click();
    }
  }
  await link.click();
}

/** A sandbox payment a statement lists: its transaction, payment number,
 * amount in fen and the time it was paid (ISO, UTC). */
export type Listed = { txn: string; no: string; minor: number; at: string };

/**
 * Uploads the sandbox's statement of `day` listing `payments` paid, over
 * the API with the e2e token; the run completes before the answer (201),
 * which is returned.
 */
export async function uploadStatement(request: APIRequestContext, day: string, payments: Listed[]) {
  const token = process.env.API_TOKEN ?? '';
  if (!token) throw new Error('API_TOKEN comes from the e2e setup');
  const yuan = (minor: number) => `${Math.floor(minor / 100)}.${String(minor % 100).padStart(2, '0')}`;
  const rows = payments.map((p) => `payment,${p.txn},${p.no},,,SUCCEEDED,${yuan(p.minor)},CNY,${p.at}\n`);
  const total = payments.reduce((sum, p) => sum + p.minor, 0);
  const csv =
    'kind,txn_id,payment_no,refund_id,refund_no,status,amount,currency,occurred_at\n' +
    rows.join('') +
    `#summary,rows=${payments.length},total_minor=${total}\n`;
  const res = await request.post('/api/v1/recon/runs', {
    headers: { authorization: `Bearer ${token}` },
    multipart: {
      provider: 'sandbox',
      business_date: day,
      file: { name: 'sandbox-statement.csv', mimeType: 'text/csv', buffer: Buffer.from(csv) },
    },
  });
  expect(res.status(), await res.text()).toBe(201);
  return (await res.json()) as { run_id: string };
}

/** Now, as a statement writes it: ISO 8601 UTC without fractions. */
export const nowIso = () => new Date().toISOString().replace(/\.\d+Z$/, 'Z');

/** A server function called with the page's session, as its forms do. */
export async function call(page: Page, endpoint: string, form: Record<string, string>) {
  const res = await page.request.post(`/api/${endpoint}`, {
    headers: { origin: process.env.BASE_URL ?? '', accept: 'application/json' },
    form,
  });
  expect(res.ok(), await res.text()).toBe(true);
  return res.json();
}

/**
 * `n` PROVIDER_ONLY tickets (payments the provider lists and Reckon does
 * not have) on a random day of `year` (each spec its own year, so no other
 * spec's tickets share the day); their transactions start with `prefix`,
 * which the list's search finds.
 */
export async function providerOnlyTickets(request: APIRequestContext, prefix: string, year: number, n: number) {
  const day = new Date(Date.UTC(year, 0, 1) + Math.floor(Math.random() * 360) * 86_400_000)
    .toISOString()
    .slice(0, 10);
  const listed = Array.from({ length: n }, (_, i) => ({
    txn: `${prefix}-${i}`,
    no: `PAY${prefix}-${i}`,
    minor: 700,
    at: `${day}T10:00:00Z`,
  }));
  await uploadStatement(request, day, listed);
}

/**
 * `page`'s user (signed in) proposes a BACKFILL of the PROVIDER_ONLY ticket
 * of payment `no`, through the server functions its forms post to; returns
 * the ticket's id.
 */
export async function proposeBackfill(page: Page, no: string): Promise<string> {
  const list = await call(page, 'tickets/list', { 'filter[q]': no, 'filter[class]': 'PROVIDER_ONLY' });
  const ticket = list.items[0].id as string;
  await call(page, 'fixes/propose', {
    id: ticket,
    kind: 'BACKFILL',
    reason: 'paid at the provider, the callback was lost',
    evidence: 'provider console screenshot',
    order_no: `ORDER-${no}`,
  });
  return ticket;
}
