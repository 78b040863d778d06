import { defineConfig } from '@playwright/test';

// The server is started by .ci/test, which passes its address and the admin
// password. Chromium is Debian's (never a downloaded browser build).
const baseURL = process.env.BASE_URL;
if (!baseURL) throw new Error('BASE_URL is not set: run the end-to-end tests through .ci/test');

export default defineConfig({
  testDir: './tests',
  timeout: 180_000,
  // As nextest in .ci/test: a test that fails is run once more and, if it
  // then passes, reported flaky rather than hiding the run's other results.
  retries: 1,
  expect: { timeout: 10_000 },
  workers: 1,
  reporter: [['list']],
  outputDir: 'test-results',
  use: {
    baseURL,
    screenshot: 'only-on-failure',
    launchOptions: {
      executablePath: '/usr/bin/chromium',
      args: [
        '--headless',
        '--no-sandbox',
        '--disable-gpu',
        '--disable-quic',
        '--no-first-run',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
      ],
    },
  },
});
