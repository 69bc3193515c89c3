import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';
import { startEmbeddedPostgres } from '../../src/db/embedded.js';
import { createLogger } from '../../src/process/logger.js';
import { removeDataDir } from './processes.js';

declare module 'vitest' {
  export interface ProvidedContext {
    /** A Postgres server the tests may create databases on: TEST_DATABASE_URL, or an embedded one started here. */
    postgresUrl: string;
  }
}

/** One Postgres server for the run; every test file makes its own fresh database on it (test/support/service.ts). */
export default async function setup(project: TestProject) {
  const external = process.env.TEST_DATABASE_URL;
  if (external) {
    project.provide('postgresUrl', external);
    return;
  }
  const dataDir = await mkdtemp(join(tmpdir(), 'postwise-test-'));
  const postgres = await startEmbeddedPostgres(dataDir, createLogger('warn'));
  project.provide('postgresUrl', postgres.url);
  return async () => {
    await postgres.stop();
    await removeDataDir(dataDir);
  };
}
