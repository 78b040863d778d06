import { test, expect } from '@playwright/test';
import { execFileSync } from 'node:child_process';
import { ADMIN_PASSWORD, hydrated, signIn, uploadedRunCompletes } from './helpers';

// Issue 27 (helper B): the dashboard's ageing section, the tickets list at a
// laptop's width, and working the queue from a ticket with the keyboard.
const DB = process.env.RECKON_DB ?? '';
const SHOTS = process.env.SCREENSHOTS ?? 'test-results/screenshots';
if (!DB) throw new Error('RECKON_DB comes from .ci/test');

const tag = () => `${Date.now().toString(36).toUpperCase()}${Math.floor(Math.random() * 1000)}`;
// Three days back: yesterday's figures belong to the other specs.
const businessDay = () => new Date(Date.now() - 3 * 86_400_000).toISOString().slice(0, 10);
const today = () => new Date().toISOString().slice(0, 10);

/** Time passing for one ticket: found `days` earlier than it was. */
function olderBy(paymentNo: string, days: number) {
  execFileSync('python3', [
    '-c',
    `import sqlite3,sys
c = sqlite3.connect(sys.argv[1], timeout=10)
c.execute("UPDATE discrepancies SET found_at = found_at - ? WHERE payment_no = ?", (int(sys.argv[3]) * 86400000000, sys.argv[2]))
c.commit()`,
    DB,
    paymentNo,
    String(days),
  ]);
}

test('the dashboard ages open tickets per class; the list fits 1400 px and a ticket queue is worked by keys', async ({ page }) => {
  await page.setViewportSize({ width: 1400, height: 900 });
  const t = tag();
  const at = `${businessDay()}T10:00:00Z`;
  const nos = [1, 2, 3].map((i) => `PAYAGE${i}${t}`);
  const rows = nos.map((no, i) => `payment,SBXAGE${i}${t}0123456789,${no},,,SUCCEEDED,${i + 1}234.50,CNY,${at}`);
  const total = nos.reduce((sum, _, i) => sum + i * 100000 + 123450, 0);
  const csv =
    'kind,txn_id,payment_no,refund_id,refund_no,status,amount,currency,occurred_at\n' +
    rows.join('\n') +
    `\n#summary,rows=3,total_minor=${total}\n`;

  await signIn(page, 'olivia', ADMIN_PASSWORD);
  await expect(page.locator('#who')).toContainText('olivia');
  await page.goto('/runs');
  await hydrated(page);
  await page.selectOption('#u-provider', 'sandbox');
  await page.fill('#u-day', businessDay());
  await page.setInputFiles('#u-file', { name: `sandbox-age-${t}.csv`, mimeType: 'text/csv', buffer: Buffer.from(csv) });
  await page.click('#u-submit');
  await uploadedRunCompletes(page);
  // One of the three was found ten days ago (past PROVIDER_ONLY's 24 h SLA).
  olderBy(nos[0], 10);

  // Today's dashboard: the three are new today; by age, per class.
  await page.goto(`/?day=${today()}&provider=sandbox`);
  await hydrated(page);
  const ageing = page.locator('#ageing');
  await expect(ageing).toBeVisible();
  const po = ageing.locator('#ageing-table tbody tr[data-class="PROVIDER_ONLY"]');
  await expect(po.locator('td[data-bucket="8-30"]')).toHaveText(/^[1-9]\d*$/);
  await expect(po.locator('td[data-bucket="0-1"]')).toHaveText(/^([2-9]|\d\d+)$/);
  expect(Number(await po.locator('td[data-overdue]').getAttribute('data-overdue'))).toBeGreaterThanOrEqual(1);
  expect(Number(await page.locator('#change-new td.today').innerText())).toBeGreaterThanOrEqual(2);
  await expect(page.locator('#change-new td.before')).toHaveText(/^\d+$/);
  await page.screenshot({ path: `${SHOTS}/b1-dashboard-ageing.png`, fullPage: true });

  // A bucket leads to its tickets: open, that old, that class.
  await po.locator('td[data-bucket="8-30"] a').click();
  await expect(page).toHaveURL(/\/tickets\?.*age=8-30/);
  await hydrated(page);
  const aged = page.locator(`#tickets tr:has(span.id[title="${nos[0]}"])`);
  await expect(aged).toHaveCount(1);
  await expect(aged).toHaveClass(/overdue/);
  await expect(aged.locator('td.age')).toContainText('10');

  // The fresh ones, at 1400 px: one line per row, nothing wider than the page.
  await page.goto('/tickets?status=ACTIVE&class=PROVIDER_ONLY&provider=sandbox');
  await hydrated(page);
  const table = page.locator('#tickets');
  const fits = await table.evaluate((el) => el.scrollWidth <= document.documentElement.clientWidth);
  expect(fits).toBe(true);
  const row = page.locator(`#tickets tr:has(span.id[title="${nos[1]}"])`);
  const rowHeight = (await row.boundingBox())!.height;
  expect(rowHeight).toBeLessThan(48);
  // Long ids shortened, the whole in the title; amounts right-aligned with their currency.
  await expect(row.locator('td .id').first()).toContainText('…');
  const amount = row.locator('td.amount').nth(1);
  await expect(amount.locator('.cur')).toHaveText('CNY');
  expect(await amount.evaluate((el) => getComputedStyle(el).textAlign)).toBe('right');
  await page.screenshot({ path: `${SHOTS}/b2-tickets-1400.png`, fullPage: true });
  // The copy button puts the whole id on the clipboard.
  await page.context().grantPermissions(['clipboard-read', 'clipboard-write']);
  await row.locator('button.copy').first().click();
  expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(nos[1]);

  // From the list to a ticket, its neighbours in the same queue by keys,
  // and back to the list with the filters kept.
  const listUrl = page.url();
  await row.locator('a.open-ticket').click();
  await expect(page).toHaveURL(/\/tickets\/[^?]+\?.*class=PROVIDER_ONLY/);
  await hydrated(page);
  const first = page.url();
  await expect(page.locator('#ticket-age')).toContainText('0');
  await page.screenshot({ path: `${SHOTS}/b3-ticket-1400.png`, fullPage: true });
  const next = page.locator('#next-ticket');
  const hasNext = (await next.getAttribute('href')) !== null;
  await page.keyboard.press(hasNext ? 'j' : 'k');
  await expect(page).not.toHaveURL(first);
  await expect(page).toHaveURL(/\/tickets\/[^?]+\?.*class=PROVIDER_ONLY/);
  await expect(page.locator('#ticket')).toBeVisible();
  // Typing in a field moves nothing.
  const moved = page.url();
  const field = page.locator('#comment-text');
  if (await field.count()) {
    await field.fill('');
    await field.press('j');
    await expect(field).toHaveValue('j');
    expect(page.url()).toBe(moved);
    await field.fill('');
  }
  await page.locator('h1').click();
  await page.keyboard.press(hasNext ? 'k' : 'j');
  await expect(page).toHaveURL(first);
  await page.keyboard.press('u');
  await expect(page).toHaveURL(/\/tickets\?/);
  const back = new URL(page.url()).searchParams;
  const before = new URL(listUrl).searchParams;
  for (const key of ['status', 'class', 'provider']) expect(back.get(key)).toBe(before.get(key));
  await expect(page.locator(`#tickets tr:has(span.id[title="${nos[1]}"])`)).toHaveCount(1);
});
