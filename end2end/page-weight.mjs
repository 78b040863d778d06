// The console's weight on the wire and its time to interactive over a slow
// office link: a fresh browser (empty cache, as a private window) signs in,
// then opens the tickets page under Chromium's network throttling; prints
// the bytes received (as sent: compressed where the server compressed) by
// kind, and the time from navigation until the page is hydrated. Medians
// of ROUNDS runs. Not a test: BENCHMARKS.md records its figures.
//
//   BASE_URL=http://127.0.0.1:3000 USERNAME=admin PASSWORD=… \
//     MBIT=9 ROUNDS=5 node end2end/page-weight.mjs
import { chromium } from '@playwright/test';

const base = process.env.BASE_URL;
const username = process.env.USERNAME ?? 'admin';
const password = process.env.PASSWORD;
const mbit = Number(process.env.MBIT ?? '9');
const rounds = Number(process.env.ROUNDS ?? '5');
const latencyMs = Number(process.env.LATENCY_MS ?? '40');
const path = process.env.PAGE ?? '/tickets';
if (!base || !password) throw new Error('BASE_URL and PASSWORD are required');

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

async function round(browser) {
  const context = await browser.newContext();
  const page = await context.newPage();
  // Signed in unthrottled: the figure is the page, not the sign-in.
  await page.goto(`${base}/login`);
  await page.waitForSelector('body[data-hydrated="true"]');
  await page.fill('#username', username);
  await page.fill('#password', password);
  await page.click('#sign-in');
  await page.waitForSelector('#who');

  const cdp = await context.newCDPSession(page);
  await cdp.send('Network.enable');
  await cdp.send('Network.setCacheDisabled', { cacheDisabled: true });
  await cdp.send('Network.emulateNetworkConditions', {
    offline: false,
    latency: latencyMs,
    downloadThroughput: (mbit * 1_000_000) / 8,
    uploadThroughput: (mbit * 1_000_000) / 8,
  });
  const types = new Map();
  const bytes = {};
  cdp.on('Network.responseReceived', (e) => types.set(e.requestId, e.type));
  cdp.on('Network.loadingFinished', (e) => {
    const kind = (types.get(e.requestId) ?? 'Other').toLowerCase();
    bytes[kind] = (bytes[kind] ?? 0) + e.encodedDataLength;
  });
  const start = Date.now();
  await page.goto(`${base}${path}`, { waitUntil: 'commit' });
  await page.waitForSelector('body[data-hydrated="true"]', { timeout: 120_000 });
  const tti = Date.now() - start;
  await page.waitForLoadState('networkidle');
  await context.close();
  return { tti, bytes };
}

const browser = await chromium.launch({
  executablePath: '/usr/bin/chromium',
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
    '--disable-background-networking', '--disable-component-update', '--disable-sync'],
});
const results = [];
for (let i = 0; i < rounds; i++) results.push(await round(browser));
await browser.close();
const kinds = [...new Set(results.flatMap((r) => Object.keys(r.bytes)))].sort();
const total = results.map((r) => Object.values(r.bytes).reduce((a, b) => a + b, 0));
console.log(`${path} at ${mbit} Mbit/s, ${latencyMs} ms latency, ${rounds} rounds (medians)`);
console.log(`time to interactive: ${median(results.map((r) => r.tti))} ms (min ${Math.min(...results.map((r) => r.tti))}, max ${Math.max(...results.map((r) => r.tti))})`);
for (const k of kinds) console.log(`  ${k}: ${median(results.map((r) => r.bytes[k] ?? 0))} bytes`);
console.log(`  total: ${median(total)} bytes`);
