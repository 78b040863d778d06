import { test, expect } from '@playwright/test';
import { execFileSync } from 'node:child_process';
import http from 'node:http';
import { ADMIN_PASSWORD, clickNav, hydrated, signIn } from './helpers';

// The outbox page lists a message, its page shows the attempts, and a
// resend from the browser delivers it again (same webhook-id) — in English
// and in Chinese. The server's sink `e2e-shop`
// points at the receiver this spec serves (.ci/test sets it).
const DB = process.env.RECKON_DB ?? '';
const SINK_PORT = Number(process.env.OUTBOX_SINK_PORT ?? '0');
if (!DB) throw new Error('RECKON_DB comes from .ci/test');
if (!SINK_PORT) throw new Error('OUTBOX_SINK_PORT (and RECKON_OUTBOX_SINKS) come from .ci/test');

const received: string[] = [];
let server: http.Server;

test.beforeAll(async () => {
  server = http.createServer((req, res) => {
    received.push(String(req.headers['webhook-id'] ?? ''));
    req.resume();
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.end('thanks');
    });
  });
  await new Promise<void>((ok) => server.listen(SINK_PORT, '127.0.0.1', ok));
});

test.afterAll(async () => {
  await new Promise<void>((ok) => server.close(() => ok()));
});

const tag = () => `${Date.now().toString(36).toUpperCase()}${Math.floor(Math.random() * 1000)}`;

/** A message whose delivery to e2e-shop went DEAD after a 500. */
function deadMessage(messageId: string, paymentNo: string) {
  execFileSync('python3', [
    '-c',
    `import sqlite3,sys,time
now = int(time.time() * 1_000_000)
m, p = sys.argv[2], sys.argv[3]
c = sqlite3.connect(sys.argv[1], timeout=10)
c.execute("INSERT INTO outbox_events (message_id, aggregate_type, aggregate_id, event_type, payload, available_at, created_at) VALUES (?, 'payment', ?, 'payment.succeeded', ?, ?, ?)", (m, p, '{"type":"payment.succeeded","payment_no":"%s"}' % p, now, now))
c.execute("INSERT INTO outbox_deliveries (message_id, sink, status, attempts, next_attempt_at, last_error) VALUES (?, 'e2e-shop', 'DEAD', 12, ?, 'sink answered 500 Internal Server Error')", (m, now))
c.execute("INSERT INTO outbox_attempts (attempt_id, message_id, sink, at, status_code, latency_us, answer_head, error, origin) VALUES (?, ?, 'e2e-shop', ?, 500, 1200, 'down for maintenance', 'sink answered 500 Internal Server Error', 'RELAY')", ('A' + m, m, now))
c.commit()`,
    DB,
    messageId,
    paymentNo,
  ]);
}

/** A message whose delivery to e2e-shop failed twice and waits for the
 * schedule's 5-minute step (`dueInSeconds` from now). */
function waitingMessage(messageId: string, paymentNo: string, dueInSeconds = 300) {
  execFileSync('python3', [
    '-c',
    `import sqlite3,sys,time
now = int(time.time() * 1_000_000)
m, p = sys.argv[2], sys.argv[3]
c = sqlite3.connect(sys.argv[1], timeout=10)
c.execute("INSERT INTO outbox_events (message_id, aggregate_type, aggregate_id, event_type, payload, available_at, created_at) VALUES (?, 'payment', ?, 'payment.succeeded', ?, ?, ?)", (m, p, '{"type":"payment.succeeded","payment_no":"%s"}' % p, now, now))
c.execute("INSERT INTO outbox_deliveries (message_id, sink, status, attempts, next_attempt_at, last_error) VALUES (?, 'e2e-shop', 'PENDING', 2, ?, 'sink answered 500 Internal Server Error')", (m, now + int(sys.argv[4]) * 1_000_000))
c.commit()`,
    DB,
    messageId,
    paymentNo,
    String(dueInSeconds),
  ]);
}

test('retry now on the sinks page sends a delivery waiting for its next step', async ({ page }) => {
  const t = tag();
  // The sink was down until this spec's receiver listened, and a down sink
  // is probed with whatever is next in line, due or not: a message due now
  // received first shows it is up, so the one waiting below stays waiting.
  const canary = `msg-e2e-up-${t}`;
  waitingMessage(canary, `PAYUP${t}`, 0);
  await expect.poll(() => received.includes(canary), { timeout: 30_000 }).toBe(true);
  const message = `msg-e2e-rn-${t}`;
  waitingMessage(message, `PAYRN${t}`);

  await signIn(page, 'olivia', ADMIN_PASSWORD);
  await expect(page.locator('#who')).toContainText('olivia');
  await hydrated(page);
  await clickNav(page, '#nav-sinks');
  await expect(page).toHaveURL(/\/sinks$/);
  await hydrated(page);
  const row = page.locator('#sinks tr[data-sink="e2e-shop"]');
  await row.locator('input.sink-retry-reason').fill('the shop is back');
  await row.locator('button.sink-retry').click();
  await expect(page.locator('#retry-result')).toContainText('e2e-shop · deliveries due now:');
  expect(Number(await page.locator('#retry-result').getAttribute('data-made-due'))).toBeGreaterThanOrEqual(1);
  // The relay sends it at once, not in five minutes.
  await expect.poll(() => received.filter((id) => id === message).length, { timeout: 30_000 }).toBe(1);
});

test('the outbox lists a DEAD message, shows its attempts, and a resend delivers it again', async ({ page }) => {
  const t = tag();
  const [message, payment] = [`msg-e2e-${t}`, `PAYOB${t}`];
  deadMessage(message, payment);

  await signIn(page, 'olivia', ADMIN_PASSWORD);
  await expect(page.locator('#who')).toContainText('olivia');
  await page.goto(`/outbox?payment=${payment}`);
  await hydrated(page);
  await expect(page.locator('h1')).toHaveText('Outbox');
  const row = page.locator(`#outbox tr[data-message="${message}"][data-sink="e2e-shop"]`);
  await expect(row).toHaveAttribute('data-status', 'DEAD');
  await expect(row.locator('.delivery-status')).toHaveText('DEAD');

  await page.goto(`/outbox/${message}`);
  await hydrated(page);
  await expect(page.locator('#attempts tr.attempt[data-code="500"]')).toHaveCount(1);
  await expect(page.locator('#attempts')).toContainText('down for maintenance');
  await page.click('#deliveries tr[data-sink="e2e-shop"] button.resend-sink');
  await expect(page.locator('#action-result')).toContainText('Queued again for: e2e-shop');
  // The relay delivers it, under the same webhook-id.
  await expect.poll(() => received.filter((id) => id === message).length, { timeout: 30_000 }).toBe(1);
  await expect(async () => {
    await page.reload();
    await expect(page.locator('#attempts tr.attempt[data-code="200"]')).toHaveCount(1, { timeout: 1_000 });
  }).toPass({ timeout: 20_000 });
  await expect(page.locator('#deliveries tr[data-sink="e2e-shop"]')).toHaveAttribute('data-status', 'DELIVERED');
  await expect(page.locator('#attempts')).toContainText('thanks');
});

test('in Chinese: the outbox page and a resend', async ({ page }) => {
  const t = tag();
  const [message, payment] = [`msg-e2e-zh-${t}`, `PAYOBZH${t}`];
  deadMessage(message, payment);

  await signIn(page, 'sue', ADMIN_PASSWORD);
  await expect(page.locator('#who')).toContainText('sue');
  await hydrated(page);
  await page.click('#lang-switch');
  await expect(page.locator('html')).toHaveAttribute('lang', 'zh-CN');
  try {
    await page.goto(`/outbox?payment=${payment}`);
    await hydrated(page);
    await expect(page.locator('#nav-outbox')).toHaveText('消息外发');
    await expect(page.locator('h1')).toHaveText('消息外发');
    await expect(page.locator(`#outbox tr[data-message="${message}"]`)).toHaveAttribute('data-status', 'DEAD');

    await page.goto(`/outbox/${message}`);
    await hydrated(page);
    await expect(page.locator('#attempts tr.attempt[data-code="500"]')).toHaveCount(1);
    await page.click('#resend-all');
    await expect(page.locator('#action-result')).toContainText('已重新排队');
    await expect.poll(() => received.filter((id) => id === message).length, { timeout: 30_000 }).toBe(1);
    await expect(async () => {
      await page.reload();
      await expect(page.locator('#deliveries tr[data-sink="e2e-shop"] .delivery-status')).toHaveText('已送达', { timeout: 1_000 });
    }).toPass({ timeout: 20_000 });
  } finally {
    await page.click('#lang-switch');
    await expect(page.locator('html')).toHaveAttribute('lang', 'en');
  }
});
