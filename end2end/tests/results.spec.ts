import { test, expect } from '@playwright/test';
import { ADMIN_PASSWORD, clickNav, hydrated, signIn, unique, uploadStatement } from './helpers';

// A run's results reach finance from its row on the runs page: every
// statement row with its outcome, as CSV, and the same as Parquet.
test("a run's results download from its row as CSV and Parquet", async ({ page, request }) => {
  const t = unique('RES');
  // A day of its own, long past, so no other spec's run is the same day.
  const day = `2025-01-${String(1 + Math.floor(Math.random() * 28)).padStart(2, '0')}`;
  const at = `${day}T10:00:00Z`;
  const { run_id } = await uploadStatement(request, day, [
    { txn: `SBX${t}A`, no: `PAY${t}A`, minor: 1234, at },
    { txn: `SBX${t}B`, no: `PAY${t}B`, minor: 500, at },
  ]);

  await signIn(page, 'olivia', ADMIN_PASSWORD);
  await expect(page.locator('#who')).toContainText('olivia');
  await hydrated(page);
  await clickNav(page, '#nav-runs');
  await hydrated(page);
  const row = page.locator(`#runs tr[data-run="${run_id}"]`);
  await expect(row).toHaveAttribute('data-status', 'COMPLETED');

  // The links as the page draws them, fetched with the signed-in session.
  const csvLink = row.locator('a.run-results-csv');
  await expect(csvLink).toHaveAttribute('download', '');
  const csv = await page.request.get((await csvLink.getAttribute('href'))!);
  expect(csv.status()).toBe(200);
  expect(csv.headers()['content-disposition']).toContain(`reckon-run-${run_id}.csv`);
  const lines = (await csv.text()).trim().split('\n');
  expect(lines[0]).toContain('line_no,kind,provider_txn_id,payment_no');
  expect(lines).toHaveLength(3);
  expect(lines[1]).toContain(`,SBX${t}A,PAY${t}A,,12.34,1234,`);
  expect(lines[1]).toContain(',PROVIDER_ONLY,');
  expect(lines[2]).toContain(`,SBX${t}B,PAY${t}B,,5.00,500,`);

  const pq = await page.request.get((await row.locator('a.run-results-parquet').getAttribute('href'))!);
  expect(pq.status()).toBe(200);
  expect(pq.headers()['content-disposition']).toContain(`reckon-run-${run_id}.parquet`);
  const bytes = await pq.body();
  expect(bytes.subarray(0, 4).toString()).toBe('PAR1');
  expect(bytes.subarray(bytes.length - 4).toString()).toBe('PAR1');
});
