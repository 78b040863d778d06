import { test, expect, Page, APIRequestContext } from '@playwright/test';
import { ADMIN_PASSWORD, clickNav, hydrated, signIn, switchLanguage, unique, nowIso, proposeBackfill, uploadStatement } from './helpers';

// The console's layout as people meet it: the top bar on one line on a
// laptop, no table wider than its page at 1,366 and 1,440 px, a supervisor
// approving on a phone, empty lists that say why, and Chinese pages that
// show codes as words.
const API_TOKEN = process.env.API_TOKEN ?? '';
if (!API_TOKEN) throw new Error('API_TOKEN comes from the e2e setup');

const PAGES = [
  '/',
  '/tickets',
  '/callbacks',
  '/payments',
  '/runs',
  '/alerts',
  '/approvals',
  '/bank',
  '/outbox',
  '/sinks',
  '/refused',
  '/audit',
  '/users',
];
// A detail page of each kind, reached from its list's first row.
const DETAILS: [string, string][] = [
  ['/tickets', '#tickets a.open-ticket'],
  ['/payments', '#payments a.open-payment'],
  ['/callbacks', '#callbacks a.open-callback'],
  ['/outbox', '#outbox a.open-message'],
];
const CLASSES = [
  'PROVIDER_ONLY', 'LOCAL_ONLY', 'AMOUNT_MISMATCH', 'CURRENCY_MISMATCH', 'ONE_TO_MANY', 'DUPLICATE',
  'STATUS_LAG', 'REFUND_MISMATCH', 'TXN_MISMATCH', 'PROVIDER_MISMATCH', 'PAID_AFTER_CLOSE',
  'PAYOUT_MISSING', 'BANK_ONLY', 'PAYOUT_AMOUNT_MISMATCH', 'FEE_MISMATCH',
];
const CODES = new RegExp(`\\b(${[...CLASSES, 'CRITICAL', 'HIGH', 'MEDIUM', 'LOW', 'OPEN', 'IN_PROGRESS', 'AWAITING_APPROVAL', 'CLOSED'].join('|')})\\b`);

function today() {
  return new Date().toISOString().slice(0, 10);
}

/** A PROVIDER_ONLY ticket of today (the statement lists a payment Reckon
 * does not have); its payment number. */
async function providerOnly(request: APIRequestContext) {
  const no = `PAYL${unique('').toUpperCase()}`;
  await uploadStatement(request, today(), [{ txn: `SBX${no}`, no, minor: 880, at: nowIso() }]);
  return no;
}


/** The page loaded, hydrated and its parts rendered. */
async function settled(page: Page) {
  await hydrated(page);
  await expect(page.locator('main h1').first()).toBeVisible();
  await expect(page.locator('p.loading')).toHaveCount(0);
}

/** Nothing wider than the viewport: not the page, not any table (noted
 * softly, so one run names every page that does not fit). */
async function fits(page: Page, where: string) {
  const found = await page.evaluate(() => {
    const width = document.documentElement.clientWidth;
    const out: string[] = [];
    if (document.documentElement.scrollWidth > width) {
      out.push(`the page is ${document.documentElement.scrollWidth} px wide in ${width}`);
    }
    document.querySelectorAll('table').forEach((t) => {
      const box = t.getBoundingClientRect();
      if (box.width === 0) return;
      const room = t.parentElement?.clientWidth ?? width;
      const name = t.id ? `#${t.id}` : t.className || 'table';
      if (t.scrollWidth > room + 1) out.push(`${name} is ${t.scrollWidth} px wide in ${room}`);
      if (box.right > width + 1) out.push(`${name} ends at ${Math.round(box.right)} px of ${width}`);
    });
    return out;
  });
  expect.soft(found, where).toEqual([]);
}

/** The top bar is one line: every item of it beside the brand, none below. */
async function oneLineBar(page: Page, where: string) {
  const lines = await page.evaluate(() => {
    const bar = document.querySelector('header.topbar')!;
    const items = Array.from(
      bar.querySelectorAll('.brand, #main-nav > a, #main-nav > details > summary, #who, #lang-switch, #sign-out'),
    ).filter((e) => (e as HTMLElement).offsetParent !== null);
    const brand = bar.querySelector('.brand')!.getBoundingClientRect();
    const below = items
      .map((e) => ({ e, r: e.getBoundingClientRect() }))
      .filter(({ r }) => r.top >= brand.bottom || r.bottom <= brand.top)
      .map(({ e }) => e.textContent?.trim());
    return { count: items.length, below, height: bar.getBoundingClientRect().height };
  });
  expect.soft(lines.count, `${where}: top bar items`).toBeGreaterThanOrEqual(10);
  expect.soft(lines.below, `${where}: top bar items on a second line`).toEqual([]);
  expect.soft(lines.height, `${where}: top bar height`).toBeLessThan(64);
}

test('every page fits 1,366 and 1,440 px with the top bar on one line, in both languages', async ({ page, request }) => {
  await providerOnly(request);
  await page.setViewportSize({ width: 1440, height: 900 });
  await signIn(page, 'admin', ADMIN_PASSWORD);
  await expect(page.locator('#who')).toContainText('admin');
  if ((await page.locator('html').getAttribute('lang')) !== 'en') await switchLanguage(page, 'en');
  const details: string[] = [];
  for (const [list, link] of DETAILS) {
    await page.goto(list);
    await settled(page);
    const href = await page.locator(link).first().getAttribute('href');
    if (href) details.push(href);
  }
  for (const lang of ['en', 'zh-CN'] as const) {
    if (lang === 'zh-CN') await switchLanguage(page, 'zh-CN');
    for (const width of [1366, 1440]) {
      await page.setViewportSize({ width, height: 900 });
      for (const path of [...PAGES, ...details]) {
        await page.goto(path);
        await settled(page);
        await expect(page.locator('html')).toHaveAttribute('lang', lang);
        await oneLineBar(page, `${lang} ${width} ${path}`);
        await fits(page, `${lang} ${width} ${path}`);
      }
    }
  }
  // Each group opens in place and leads to its pages.
  await page.goto('/');
  await settled(page);
  await clickNav(page, '#nav-audit');
  await expect.poll(() => new URL(page.url()).pathname).toBe('/audit');
  await expect(page.locator('#nav-group-admin > summary')).toHaveCSS('font-weight', '600');
  await switchLanguage(page, 'en');
});

test('on a phone, a supervisor opens Approvals from the menu and approves a proposal without scrolling sideways', async ({
  browser,
  request,
}) => {
  const no = await providerOnly(request);
  const olivia = await browser.newPage();
  await signIn(olivia, 'olivia', ADMIN_PASSWORD);
  await expect(olivia.locator('#who')).toContainText('olivia');
  const ticket = await proposeBackfill(olivia, no);
  await olivia.close();

  const phone = await browser.newContext({ viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true });
  const page = await phone.newPage();
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(e.message));
  await signIn(page, 'sue', ADMIN_PASSWORD);
  await expect(page.locator('#who')).toContainText('sue');
  await settled(page);
  await fits(page, 'the dashboard on a phone');
  // The links hide behind the menu until it is opened.
  await expect(page.locator('#nav-approvals')).toBeHidden();
  await page.click('#menu-button');
  await expect(page.locator('#nav-approvals')).toBeVisible();
  await page.click('#nav-approvals');
  await expect.poll(() => new URL(page.url()).pathname).toBe('/approvals');
  await settled(page);

  const card = page.locator(`article.proposal[data-ticket="${ticket}"]`);
  await expect(card.locator('.proposal-sentence')).toBeVisible();
  await expect(card.locator('.proposal-sentence')).toContainText(no);
  await expect(card.locator('table.proposal-fields')).toBeVisible();
  await fits(page, 'approvals on a phone');
  // The sentence and the field table lie within the screen.
  for (const part of ['.proposal-sentence', 'table.proposal-fields', '.approve-submit']) {
    const box = (await card.locator(part).boundingBox())!;
    expect(box.x, part).toBeGreaterThanOrEqual(0);
    expect(box.x + box.width, part).toBeLessThanOrEqual(390);
  }

  await card.locator('.approve-comment').fill('matches the provider console');
  await card.locator('.approve-submit').click();
  await card.locator('.confirm-yes').click();
  await expect(page.locator('#action-result')).toBeVisible();
  await expect(page.locator(`article.proposal[data-ticket="${ticket}"]`)).toHaveCount(0);
  await fits(page, 'approvals on a phone after the decision');
  expect(errors, 'uncaught errors in the page').toEqual([]);
  await phone.close();
});

test('an empty list says why and what to do; a Chinese list shows codes as words', async ({ page, request }) => {
  const no = await providerOnly(request);
  await signIn(page, 'admin', ADMIN_PASSWORD);
  await expect(page.locator('#who')).toContainText('admin');
  if ((await page.locator('html').getAttribute('lang')) !== 'en') await switchLanguage(page, 'en');

  // A filter nothing matches: the note says so and clears it.
  const nothing = unique('NOTHING-');
  await page.goto(`/tickets?q=${nothing}`);
  await settled(page);
  const empty = page.locator('#empty-list');
  await expect(empty).toContainText('No discrepancies match this filter.');
  await expect(empty.locator('a.empty-action')).toHaveAttribute('href', '/tickets');
  await page.goto(`/payments?q=${nothing}`);
  await settled(page);
  await expect(page.locator('#empty-list')).toContainText('No payments match this filter.');
  await expect(page.locator('#empty-list a.empty-action')).toHaveAttribute('href', '/payments');
  // A list with rows has no such note.
  await page.goto(`/tickets?q=${no}`);
  await settled(page);
  await expect(page.locator('#tickets tbody tr')).toHaveCount(1);
  await expect(page.locator('#empty-list')).toHaveCount(0);
  // English keeps the code, its words in the tooltip.
  await expect(page.locator('#tickets a.open-ticket')).toHaveText('PROVIDER_ONLY');
  await expect(page.locator('#tickets a.open-ticket .code')).toHaveAttribute('title', 'Only on the statement');

  await switchLanguage(page, 'zh-CN');
  await page.goto(`/tickets?q=${nothing}`);
  await settled(page);
  await expect(page.locator('#empty-list')).toContainText('没有符合此筛选条件的差异工单。');
  await page.goto(`/tickets?q=${no}`);
  await settled(page);
  const row = page.locator('#tickets tbody tr');
  await expect(row).toHaveAttribute('data-class', 'PROVIDER_ONLY');
  await expect(row.locator('a.open-ticket')).toHaveText('仅渠道有');
  await expect(row.locator('a.open-ticket .code')).toHaveAttribute('title', 'PROVIDER_ONLY');
  // No ticket code is the visible text of the list (ids aside).
  expect(await row.innerText()).not.toMatch(CODES);
  expect(await page.locator('section.counts').innerText()).not.toMatch(CODES);
  await switchLanguage(page, 'en');
});
