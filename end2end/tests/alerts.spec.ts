import { test, expect, APIRequestContext } from '@playwright/test';
import { execFileSync } from 'node:child_process';
import { ADMIN_PASSWORD, hydrated, signIn, nowIso, proposeBackfill, uploadStatement } from './helpers';

// Users made by .ci/test with the same password: olivia (operator), sam and
// sue (supervisors). The server's database is the SQLite file RECKON_DB.
const PASSWORD = ADMIN_PASSWORD;
const API_TOKEN = process.env.API_TOKEN ?? '';
const DB = process.env.RECKON_DB ?? '';
const BASE = process.env.BASE_URL ?? '';
if (!API_TOKEN || !DB || !BASE) throw new Error('API_TOKEN, RECKON_DB and BASE_URL come from .ci/test');

const tag = () => `${Date.now().toString(36)}${Math.floor(Math.random() * 1000)}`;
const today = () => new Date().toISOString().slice(0, 10);

/** Alerts of a kind of this test's own, raised as the engine raises them
 * (one row each, already past the channels' router): three warnings and
 * one high, a second apart. */
function raiseAlerts(kind: string) {
  execFileSync('python3', [
    '-c',
    `import sqlite3,sys,time,uuid
c = sqlite3.connect(sys.argv[1], timeout=10)
now = int(time.time() * 1_000_000)
for i, sev in enumerate(['warning', 'warning', 'warning', 'high']):
    at = now - (10 - i) * 1_000_000
    c.execute("INSERT INTO alerts (alert_id, dedupe_key, kind, severity, payment_no, message, trace_id, created_at, routed_at) VALUES (?, ?, ?, ?, NULL, ?, NULL, ?, ?)",
              (str(uuid.uuid4()), sys.argv[2] + ':' + str(i), sys.argv[2], sev, sys.argv[2] + ' number ' + str(i), at, at))
c.commit()`,
    DB,
    kind,
  ]);
}

/** A PROVIDER_ONLY ticket of today (the statement lists a payment Reckon
 * does not have); its payment number. */
async function providerOnly(request: APIRequestContext) {
  const no = `PAYQ${tag().toUpperCase()}`;
  await uploadStatement(request, today(), [{ txn: `SBX${no}`, no, minor: 770, at: nowIso() }]);
  return no;
}


test('alerts are filtered, two acknowledged at once after a confirmation; the dashboard counts them by kind; a supervisor sees their queue', async ({
  page,
  browser,
  request,
}) => {
  const kind = `e2e_${tag()}`;
  raiseAlerts(kind);

  // Someone else's proposal waits for a supervisor: olivia proposes a
  // backfill for a PROVIDER_ONLY ticket.
  const no = await providerOnly(request);
  const olivia = await browser.newPage();
  await signIn(olivia, 'olivia', PASSWORD);
  await expect(olivia.locator('#who')).toContainText('olivia');
  await proposeBackfill(olivia, no);
  // An operator decides nothing: no badge.
  await expect(olivia.locator('#nav-approvals')).toBeVisible();
  await expect(olivia.locator('#queue-badge')).toHaveCount(0);
  await olivia.close();

  // A page that fails to hydrate stops answering clicks: none may.
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(e.message));
  await signIn(page, 'sam', PASSWORD);
  await expect(page.locator('#who')).toContainText('sam');
  await page.goto('/');
  await hydrated(page);
  // The badge and the dashboard's card say the same, and count olivia's.
  const badge = page.locator('#queue-badge');
  await expect(badge).toHaveText(/^\d+$/);
  const waiting = Number(await badge.textContent());
  expect(waiting).toBeGreaterThanOrEqual(1);
  await expect(page.locator('#queue-card #queue-count')).toHaveText(String(waiting));
  await expect(page.locator('#queue-oldest')).toContainText('UTC');

  // To the alerts by the top bar (a client-side navigation, no filter).
  await page.click('#nav-alerts');
  await expect(page).toHaveURL(/\/alerts$/);
  await expect(page.locator('#alerts tbody tr').first()).toBeVisible();

  // Filter: this kind, warnings, open.
  await page.selectOption('#a-kind', kind);
  await page.selectOption('#a-severity', 'warning');
  await page.selectOption('#a-state', 'open');
  await page.click('#a-filter');
  await expect(page).toHaveURL(new RegExp(`kind=${kind}.*severity=warning.*state=open`));
  await hydrated(page);
  const rows = page.locator('#alerts tbody tr');
  await expect(rows).toHaveCount(3);
  for (const r of await rows.all()) {
    await expect(r).toHaveAttribute('data-kind', kind);
    await expect(r).toHaveAttribute('data-severity', 'warning');
  }

  // Two ticked, one comment, confirmed in the page before it is sent.
  const ids = [await rows.nth(0).getAttribute('data-alert'), await rows.nth(1).getAttribute('data-alert')];
  await rows.nth(0).locator('input.pick').check();
  await rows.nth(1).locator('input.pick').check();
  await page.fill('#ack-comment', 'known: the e2e alerts');
  await page.click('#ack-ticked');
  const confirm = page.locator('#ack-confirm');
  await expect(confirm).toContainText('2');
  await expect(confirm).toContainText('known: the e2e alerts');
  await expect(page.locator(`#alerts tr[data-alert="${ids[0]}"]`)).toHaveAttribute('data-state', 'open');
  await page.click('#ack-confirm-yes');
  await expect(page.locator('#ack-result')).toContainText('2');
  await expect(rows).toHaveCount(1);
  await expect(page.locator(`#alerts tr[data-alert="${ids[0]}"]`)).toHaveCount(0);

  // Acknowledged, with who and why.
  await page.goto(`/alerts?kind=${kind}&state=acknowledged`);
  await expect(page.locator('#alerts tbody tr')).toHaveCount(2);
  await expect(page.locator(`#alerts tr[data-alert="${ids[1]}"] .state`)).toContainText('sam: known: the e2e alerts');

  // The dashboard: open alerts by kind, each a link to the list filtered.
  await page.goto('/');
  await hydrated(page);
  const count = page.locator(`#alert-kinds a[data-kind="${kind}"]`);
  await expect(count.locator('strong')).toHaveText('2');
  await count.click();
  await expect(page).toHaveURL(new RegExp(`/alerts\\?kind=${kind}&state=open`));
  await expect(page.locator('#alerts tbody tr')).toHaveCount(2);
  expect(errors).toEqual([]);
});
