import { Logger as WorkerLogger, run, runMigrations, type Runner } from 'graphile-worker';
import type { Database } from '../db/index.js';
import type { Logger } from '../logger.js';
import { tasks } from './tasks.js';

/** Runs the graphile-worker runner on the service's database. */
export async function startWorker(connectionString: string, concurrency: number, logger: Logger): Promise<Runner> {
  return run({
    connectionString,
    concurrency,
    taskList: tasks,
    // Shutdown is ordered by src/main.ts.
    noHandleSignals: true,
    logger: workerLogger(logger),
  });
}

/**
 * Installs or upgrades graphile-worker's schema. Every process does it at start, worker or not, because
 * operations enqueue jobs (`graphile_worker.add_job`) in their own transactions. graphile-worker does not
 * guard against two processes installing at once (CREATE SCHEMA races), so an advisory lock held by a
 * transaction of ours makes them take turns; the migration itself runs on graphile-worker's own connection.
 */
export async function installWorkerSchema(db: Database, connectionString: string, logger: Logger): Promise<void> {
  await db.begin(async (tx) => {
    await tx`SELECT pg_advisory_xact_lock(hashtext('postwise:worker-schema'))`;
    await runMigrations({ connectionString, logger: workerLogger(logger) });
  });
}

function workerLogger(logger: Logger): WorkerLogger {
  return new WorkerLogger((scope) => (level, message, meta) => {
    const write = level === 'error' ? logger.error : level === 'warning' ? logger.warn : logger.debug;
    write(message, { component: 'worker', ...scope, ...meta });
  });
}
