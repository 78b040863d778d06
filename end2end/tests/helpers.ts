import { expect, Page } from '@playwright/test';

export const ADMIN_PASSWORD = process.env.ADMIN_PASSWORD ?? '';
if (!ADMIN_PASSWORD) throw new Error('ADMIN_PASSWORD is not set: run through .ci/test');

/** Waits until the WebAssembly has hydrated the page. */
export async function hydrated(page: Page) {
  await expect(page.locator('body[data-hydrated="true"]')).toHaveCount(1);
}

export async function signIn(page: Page, username: string, password: string, opts = { hydrate: true }) {
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
  await expect(row).toHaveAttribute('data-status', 'COMPLETED', { timeout: 120_000 });
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
