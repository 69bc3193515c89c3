import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

// The test HTTPS hosts' certificate (test/support/tls), trusted as an operator would trust a private CA: Node reads
// NODE_EXTRA_CA_CERTS when a process starts, and each test file's process (pool: forks) starts with this environment.
process.env.NODE_EXTRA_CA_CERTS = fileURLToPath(new URL('test/support/tls/cert.pem', import.meta.url));

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // chromium.ts: where the dashboard tests' browser is unpacked, once per run (test/support/browser.ts).
    globalSetup: ['test/support/postgres.ts', 'test/support/pds.ts', 'test/support/chromium.ts'],
    pool: 'forks',
    // Two files at a time on two cores: most of a file's time is spent waiting (servers, child processes, a browser,
    // a worker's poll), so the pair overlaps well (the suite: 13 min one at a time, 9.5 min two at a time). Each
    // file has its own service, database and ports, so they do not meet.
    maxWorkers: 2,
    // Generous: CI runs the suite on a busy two-core machine, where a test that publishes through a PDS, drives a
    // browser or starts child processes can take several times what it takes alone. A hang still ends in a minute.
    testTimeout: 60_000,
    hookTimeout: 90_000,
  },
});
