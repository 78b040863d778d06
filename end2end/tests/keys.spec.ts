import { test, expect, APIRequestContext, Page } from '@playwright/test';
import { ADMIN_PASSWORD, hydrated, signIn, switchLanguage, providerOnlyTickets } from './helpers';

// Ticket work from the keyboard: an operator reaches the discrepancies list
// by the top bar, then works it with keys alone — the skip link, the list's
// keys, the ticket's Assign to me and comment box — each post sent once.
const API_TOKEN = process.env.API_TOKEN ?? '';
if (!API_TOKEN) throw new Error('API_TOKEN comes from the e2e setup');

const tag = () => `${Date.now().toString(36).toUpperCase()}${Math.floor(Math.random() * 1000)}`;

/** `n` PROVIDER_ONLY tickets on a day of 2022 no other spec uses; the
 * prefix their transactions start with. */
async function providerOnly(request: APIRequestContext, n: number): Promise<string> {
  const prefix = `SBXK${tag()}`;
  await providerOnlyTickets(request, prefix, 2022, n);
  return prefix;
}

const focusedId = (page: Page) => page.evaluate(() => document.activeElement?.id ?? '');

/** Tab (forwards) until the element `id` has the keyboard. */
async function tabTo(page: Page, id: string) {
  for (let i = 0; i < 80; i++) {
    if ((await focusedId(page)) === id) return;
    await page.keyboard.press('Tab');
  }
  expect(await focusedId(page), `Tab never reached #${id}`).toBe(id);
}

/** The list's row the keys work on: exactly one, and it has the keyboard. */
async function currentRow(page: Page, index: number) {
  const rows = page.locator('#tickets tbody tr[data-ticket]');
  await expect(page.locator('#tickets tbody tr.current')).toHaveCount(1);
  await expect(rows.nth(index)).toHaveClass(/\bcurrent\b/);
  await expect(rows.nth(index)).toHaveAttribute('aria-current', 'true');
  await expect(rows.nth(index)).toBeFocused();
  return (await rows.nth(index).getAttribute('data-ticket'))!;
}

test('an operator works the discrepancies list and a ticket with the keyboard alone', async ({ page, request }) => {
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(e.message));
  const posts: string[] = [];
  page.on('request', (r) => {
    if (r.method() === 'POST' && /\/api\/tickets\/comment$/.test(new URL(r.url()).pathname)) posts.push(r.url());
  });

  const prefix = await providerOnly(request, 3);
  await signIn(page, 'olivia', ADMIN_PASSWORD);
  await expect(page).toHaveURL(/\/$/);
  await hydrated(page);
  await page.click('#nav-tickets');
  await expect.poll(() => new URL(page.url()).pathname).toBe('/tickets');
  await expect(page.locator('#tickets')).toBeVisible();

  // The skip link is the first stop of Tab, shown while focused, and leads
  // past the top bar to the page's content.
  await page.keyboard.press('Tab');
  await expect(page.locator('#skip-link')).toBeFocused();
  await expect(page.locator('#skip-link')).toHaveText('Skip to content');
  await expect(page.locator('#skip-link')).toBeInViewport();
  await page.keyboard.press('Enter');
  expect(await focusedId(page)).toBe('main');

  // The search field, reached by Tab, filters to this test's tickets.
  await tabTo(page, 'f-q');
  await page.keyboard.type(prefix);
  await page.keyboard.press('Enter');
  await expect.poll(() => page.url()).toContain(`q=${prefix}`);
  const rows = page.locator('#tickets tbody tr[data-ticket]');
  await expect
    .poll(
      async () => {
        if ((await rows.count()) === 3) return 3;
        // The run opens its tickets in the background: ask again.
        await page.reload();
        await hydrated(page);
        return rows.count();
      },
      { timeout: 60_000 },
    )
    .toBe(3);
  await hydrated(page);

  // No key acts while typing in a field, nor with a modifier held.
  await page.locator('#f-provider').focus();
  await page.keyboard.press('j');
  await expect(page.locator('#f-provider')).toHaveValue('j');
  await expect(page.locator('#tickets tbody tr.current')).toHaveCount(0);
  await page.locator('#f-provider').evaluate((el: HTMLInputElement) => {
    el.value = '';
    el.blur();
  });
  await page.keyboard.press('Alt+j');
  await expect(page.locator('#tickets tbody tr.current')).toHaveCount(0);

  // j and k move the current row; x ticks it.
  await page.keyboard.press('j');
  const first = await currentRow(page, 0);
  await page.keyboard.press('j');
  await currentRow(page, 1);
  await page.keyboard.press('k');
  await currentRow(page, 0);
  await page.keyboard.press('x');
  await expect(rows.nth(0).locator('input.pick')).toBeChecked();
  await expect(rows.nth(1).locator('input.pick')).not.toBeChecked();

  // ? lists the keys; Esc closes the list.
  await page.keyboard.press('?');
  const help = page.locator('#keys-help');
  await expect(help).toBeVisible();
  await expect(help).toContainText('assign the ticket to me');
  await page.keyboard.press('Escape');
  await expect(help).toBeHidden();

  // a assigns the current row to me.
  await page.keyboard.press('a');
  await expect(page.locator('#list-result')).toHaveText('Assigned to you.');
  await expect(page.locator(`#tickets tr[data-ticket="${first}"]`)).toContainText('olivia');
  await expect(page.locator(`#tickets tr[data-ticket="${first}"]`)).toHaveClass(/\bcurrent\b/);

  // o opens the next row's ticket.
  await page.keyboard.press('j');
  const second = await currentRow(page, 1);
  await page.keyboard.press('o');
  await expect.poll(() => new URL(page.url()).pathname).toBe(`/tickets/${second}`);
  await expect(page.locator('#ticket')).toHaveAttribute('data-status', 'OPEN');

  // The work sits beside the evidence on a wide screen.
  const evidence = (await page.locator('#sides').boundingBox())!;
  const work = (await page.locator('#work').boundingBox())!;
  expect(work.x).toBeGreaterThan(evidence.x + evidence.width - 1);
  expect(work.y).toBeLessThan(evidence.y + evidence.height);

  // Assign to me, by Tab and Enter.
  await page.keyboard.press('Tab');
  await expect(page.locator('#skip-link')).toBeFocused();
  await page.keyboard.press('Enter');
  await tabTo(page, 'assign-me');
  await page.keyboard.press('Enter');
  await expect(page.locator('#ticket-owner')).toHaveText('olivia');
  await expect(page.locator('#ticket')).toHaveAttribute('data-status', 'IN_PROGRESS');
  await expect(page.locator('#assign-me')).toHaveCount(0);

  // A comment, sent by Enter on its button pressed twice at once: posted
  // once, the box emptied and given the keyboard back.
  await tabTo(page, 'comment-text');
  await page.keyboard.type('asked the provider: just kidding');
  await tabTo(page, 'comment-submit');
  await page.keyboard.press('Enter');
  await page.keyboard.press('Enter');
  const comments = page.locator('#notes li[data-kind="comment"]');
  await expect(comments).toHaveCount(1);
  await expect(comments).toContainText('asked the provider: just kidding');
  await expect(page.locator('#comment-text')).toHaveValue('');
  await expect(page.locator('#comment-text')).toBeFocused();

  // Ctrl+Enter in the box sends it too, and twice at once sends it once.
  await page.keyboard.type('second thought');
  await page.keyboard.press('Control+Enter');
  await page.keyboard.press('Control+Enter');
  await expect(comments).toHaveCount(2);
  await expect(page.locator('#comment-text')).toHaveValue('');

  // In Chinese, a refusal shows beside the form in Chinese, and what was
  // typed stays.
  await switchLanguage(page, 'zh-CN');
  await hydrated(page);
  await tabTo(page, 'comment-text');
  await page.keyboard.type('   ');
  await page.keyboard.press('Control+Enter');
  await expect(page.locator('#comment-error p.error')).toHaveText('备注为必填项。');
  await expect(page.locator('p.error')).toHaveCount(1);
  await expect(page.locator('#comment-text')).toHaveValue('   ');
  await expect(page.locator('#comment-text')).toBeFocused();
  await expect(comments).toHaveCount(2);
  await switchLanguage(page, 'en');

  // u leads back to the list; c opens a ticket at its comment box.
  // (The language switch, a button, holds the keyboard: keys are not for it.)
  await page.evaluate(() => (document.activeElement as HTMLElement | null)?.blur());
  await page.keyboard.press('u');
  await expect.poll(() => new URL(page.url()).pathname).toBe('/tickets');
  await expect(rows).toHaveCount(3);
  await page.keyboard.press('j');
  await page.keyboard.press('j');
  await page.keyboard.press('j');
  const third = await currentRow(page, 2);
  await page.keyboard.press('c');
  await expect.poll(() => new URL(page.url()).pathname).toBe(`/tickets/${third}`);
  await expect(page.locator('#comment-text')).toBeFocused();

  // Three comments were sent in all: two taken, the blank one refused.
  await page.goto(`/tickets/${second}`);
  await expect(comments).toHaveCount(2);
  expect(posts.length, 'comment posts sent').toBe(3);
  expect(errors, 'page errors').toEqual([]);
});
