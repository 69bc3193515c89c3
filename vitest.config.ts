import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // chromium.ts: where the dashboard tests' browser is unpacked, once per run (test/support/browser.ts).
    globalSetup: ['test/support/postgres.ts', 'test/support/pds.ts', 'test/support/chromium.ts'],
    pool: 'forks',
    testTimeout: 30_000,
    hookTimeout: 90_000,
  },
});
