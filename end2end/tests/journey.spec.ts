import { test, expect, Page } from '@playwright/test';
import AxeBuilder from '@axe-core/playwright';
import { ADMIN_PASSWORD, clickNav, hydrated, signIn, switchLanguage, unique } from './helpers';

// A person's tour of the console: signed in, the page interactive, every
// page reached by clicking the top bar, its group opened first (client-side
// navigation, never a typed address), each list filtered, cleared, paged and a row opened and
// left again — in English, then in Chinese.
const API_TOKEN = process.env.API_TOKEN ?? '';
if (!API_TOKEN) throw new Error('API_TOKEN comes from the e2e setup');

type List = {
  nav: string;
  path: string;
  table: string;
  form: string;
  /** A field of the filter form and a value to filter by. */
  field: string;
  value: string;
  /** A row's link to its detail page. */
  open?: string;
};

const LISTS: List[] = [
  { nav: '#nav-tickets', path: '/tickets', table: '#tickets', form: '#ticket-filters', field: '#f-provider', value: 'sandbox', open: 'a.open-ticket' },
  { nav: '#nav-callbacks', path: '/callbacks', table: '#callbacks', form: '#callback-filters', field: '#c-provider', value: 'sandbox', open: 'a.open-callback' },
  { nav: '#nav-payments', path: '/payments', table: '#payments', form: '#payment-filters', field: '#p-provider', value: 'sandbox', open: 'a.open-payment' },
  { nav: '#nav-outbox', path: '/outbox', table: '#outbox', form: '#outbox-filters', field: '#o-type', value: 'payment.succeeded', open: 'a.open-message' },
  { nav: '#nav-refused', path: '/refused', table: '#refused', form: '#refused-filters', field: '#r-provider', value: 'sandbox', open: 'a.open-refused' },
  { nav: '#nav-audit', path: '/audit', table: '#audit', form: '#audit-filters', field: '#a-actor', value: 'admin' },
];

// Pages that are not lists: reached by a click, they show without an error.
const PAGES = ['#nav-dashboard', '#nav-runs', '#nav-alerts', '#nav-approvals', '#nav-bank', '#nav-sinks', '#nav-users'];

/** Collects the page's uncaught errors; the caller asserts none. */
function watchErrors(page: Page): string[] {
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(e.message));
  return errors;
}

/** No failure shown: no error note, no failed request's words. */
async function noFailure(page: Page, where: string) {
  await expect(page.locator('p.error[role="alert"]'), where).toHaveCount(0);
  const text = await page.locator('main, body').first().innerText();
  expect(text, where).not.toMatch(/The request failed|请求失败|Something went wrong|服务器内部错误/);
}

/** axe-core's critical and serious findings on the page as it stands. */
const barriers: string[] = [];
async function accessible(page: Page, where: string) {
  const { violations } = await new AxeBuilder({ page }).analyze();
  for (const v of violations.filter((v) => v.impact === 'critical' || v.impact === 'serious')) {
    const targets = v.nodes.slice(0, 3).map((n) => n.target.join(' ')).join(', ');
    barriers.push(`${where}: ${v.impact} ${v.id} (${v.help}) at ${targets}`);
  }
}

async function pathIs(page: Page, path: string) {
  await expect.poll(() => new URL(page.url()).pathname).toBe(path);
}

async function walkList(page: Page, l: List) {
  await clickNav(page, l.nav);
  await pathIs(page, l.path);
  await expect(page.locator(l.table)).toBeVisible();
  await noFailure(page, `${l.path} reached by a click`);
  await accessible(page, l.path);

  // Filtered, through the form as a person submits it.
  await page.fill(l.field, l.value);
  await page.locator(`${l.form} button[type="submit"]`).click();
  await expect.poll(() => page.url()).toContain(`=${encodeURIComponent(l.value)}`);
  await expect(page.locator(l.table)).toBeVisible();
  await noFailure(page, `${l.path} filtered`);

  // Cleared: the empty filter is a filter too.
  await page.locator(`${l.form} a[href="${l.path}"]`).click();
  await expect.poll(() => page.url()).not.toContain('?');
  await expect(page.locator(l.table)).toBeVisible();
  await expect(page.locator(l.field)).toHaveValue('');
  await noFailure(page, `${l.path} cleared`);

  // The next page, where there is one, and back.
  const next = page.locator('#next-page');
  if ((await next.count()) > 0) {
    await next.click();
    await expect.poll(() => page.url()).toMatch(/(after|before)=/);
    await expect(page.locator(l.table)).toBeVisible();
    await noFailure(page, `${l.path} next page`);
    await page.goBack();
    await expect.poll(() => page.url()).not.toMatch(/(after|before)=/);
    await expect(page.locator(l.table)).toBeVisible();
  }

  // A row opened, then back to the list.
  if (l.open) {
    const row = page.locator(`${l.table} ${l.open}`).first();
    if ((await row.count()) > 0) {
      await row.click();
      await expect.poll(() => new URL(page.url()).pathname).not.toBe(l.path);
      await expect(page.locator('h1')).toBeVisible();
      await noFailure(page, `a row of ${l.path} opened`);
      await accessible(page, new URL(page.url()).pathname);
      await page.goBack();
      await pathIs(page, l.path);
      await expect(page.locator(l.table)).toBeVisible();
      await noFailure(page, `${l.path} after coming back`);
    }
  }
}

async function tour(page: Page) {
  for (const nav of PAGES) {
    await clickNav(page, nav);
    await expect(page.locator('h1').first()).toBeVisible();
    await noFailure(page, `${nav} reached by a click`);
    await accessible(page, new URL(page.url()).pathname);
  }
  for (const l of LISTS) await walkList(page, l);
  await clickNav(page, '#nav-dashboard');
  await pathIs(page, '/');
  await noFailure(page, 'the dashboard again');
}

test('every page reached by clicking works as on a full load, in both languages', async ({ page, request }) => {
  // More payments than a page holds, so the lists have a next page.
  const t = unique('JOURNEY-');
  for (let i = 0; i < 52; i++) {
    const res = await request.post('/api/v1/payments', {
      headers: { authorization: `Bearer ${API_TOKEN}`, 'idempotency-key': `${t}-${i}` },
      data: { order_no: `ORDER-${t}-${i}`, provider: 'sandbox', amount_minor: 1000 + i, currency: 'CNY' },
    });
    expect(res.status(), await res.text()).toBe(201);
  }
  const errors = watchErrors(page);
  await page.goto('/login');
  await hydrated(page);
  await accessible(page, '/login');
  await signIn(page, 'admin', ADMIN_PASSWORD);
  await expect(page.locator('#who')).toContainText('admin');
  await hydrated(page);

  await tour(page);
  await switchLanguage(page, 'zh-CN');
  await tour(page);
  await switchLanguage(page, 'en');
  expect(errors, 'uncaught errors in the page').toEqual([]);
  expect(barriers, 'critical or serious accessibility findings').toEqual([]);
});
