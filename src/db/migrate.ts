import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Logger } from '../process/logger.js';
import type { Database } from './index.js';

const migrationsDir = fileURLToPath(new URL('../../migrations/', import.meta.url));

/**
 * Applies the numbered SQL files in migrations/ that this database has not seen and records each one. The
 * pending files run in one transaction, so a failing file leaves the database as it was. Forward-only; numbers
 * run 1, 2, 3... without gaps. The advisory lock lets several processes start against one database at once.
 */
export async function migrate(sql: Database, logger: Logger): Promise<void> {
  const files = (await readdir(migrationsDir)).filter((name) => name.endsWith('.sql')).sort();
  files.forEach((name, index) => {
    if (Number.parseInt(name, 10) !== index + 1) throw new Error(`migrations/${name}: expected number ${index + 1}`);
  });
  await sql.begin(async (tx) => {
    await tx`SELECT pg_advisory_xact_lock(hashtext('postwise:migrate'))`;
    await tx`CREATE TABLE IF NOT EXISTS schema_migrations (
      version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`;
    const applied = new Set((await tx<{ version: number }[]>`SELECT version FROM schema_migrations`).map((row) => row.version));
    for (const [index, name] of files.entries()) {
      if (applied.has(index + 1)) continue;
      await tx.unsafe(await readFile(join(migrationsDir, name), 'utf8'));
      await tx`INSERT INTO schema_migrations (version, name) VALUES (${index + 1}, ${name})`;
      logger.info('migration applied', { migration: name });
    }
  });
}
