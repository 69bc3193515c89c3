import { Logger as WorkerLogger, run, runMigrations, type RunnerOptions } from 'graphile-worker';
import type { Config } from '../process/config.js';
import type { Database } from '../db/index.js';
import type { Logger } from '../process/logger.js';
import type { AppContext } from '../registry/context.js';
import { CRONTAB } from './queue.js';
import { recoverAbandoned } from './recovery.js';
import { tasks } from './tasks.js';

export interface Worker {
  /**
   * Stops taking jobs and lets the running ones finish. graphile-worker 0.17's graceful shutdown waits for them and,
   * after its gracefulShutdownAbortTimeout (5 s), aborts the `helpers.abortSignal` they were given; a publish then ends
   * its platform calls and puts its schedule back (src/worker/publish-failures.ts).
   */
  stop(): Promise<void>;
}

/**
 * Runs the graphile-worker runner on the service's database, with its crontab (CRONTAB in src/worker/queue.ts), and the
 * periodic recovery of schedules a crashed worker left PUBLISHING (src/worker/recovery.ts). Every worker runs that
 * recovery; the UPDATE makes running it twice harmless.
 */
export async function startWorker(app: AppContext, connectionString: string): Promise<Worker> {
  const runner = await run({
    connectionString,
    ...runnerSettings(app.config),
    taskList: tasks(app),
    crontab: CRONTAB,
    // Shutdown is ordered by src/main.ts.
    noHandleSignals: true,
    logger: workerLogger(app.logger),
  });
  let sweeping: Promise<unknown> = Promise.resolve();
  const sweep = setInterval(() => {
    sweeping = recoverAbandoned(app.db, app.storage, app.config.publishStaleMs)
      .then(({ requeued, released }) => {
        if (released.length) app.logger.warn('the jobs of workers that stopped holding them are released', { workers: released });
        if (requeued.length) app.logger.warn('schedules a stopped worker left behind are queued again', { scheduleIds: requeued });
      })
      .catch((error) => app.logger.error('recovering abandoned schedules failed', { error }));
  }, app.config.publishRecoveryIntervalMs);
  return {
    async stop() {
      clearInterval(sweep);
      await sweeping;
      await runner.stop();
    },
  };
}

/**
 * How a process takes jobs (the service's worker and the bench's runners alike). `WORKER_CONCURRENCY` jobs run at
 * once; one local queue per process fetches (and locks) up to one more than that at a time and hands them out, so
 * the process asks the database for jobs once per batch, and once per `WORKER_POLL_INTERVAL_MS` while idle, whatever
 * its concurrency. Completions are written in batches, each tick's together. graphile-worker 0.17 wakes on NOTIFY only
 * for jobs due at once; a job due later (a schedule's run_at) is found by polling, so the interval bounds how late
 * past its time a schedule starts (2 s by default there).
 *
 * A job waits in the local queue at most `PUBLISH_STALE_MS` before going back. A process that dies holding jobs leaves
 * them locked for graphile-worker's 4 hours; recoverAbandoned (src/worker/recovery.ts) releases them once one of them is
 * a due schedule's publish job held for twice that.
 */
export function runnerSettings(config: Config): Pick<RunnerOptions, 'concurrency' | 'pollInterval' | 'preset'> {
  return {
    concurrency: config.workerConcurrency,
    pollInterval: config.workerPollIntervalMs,
    preset: {
      worker: {
        localQueue: { size: config.workerConcurrency + 1, ttl: config.publishStaleMs },
        completeJobBatchDelay: 0,
        failJobBatchDelay: 0,
      },
    },
  };
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
    const write = level === 'error' ? logger.error : level === 'warning' && !poolSmallerThanConcurrency.test(message) ? logger.warn : logger.debug;
    write(message, { component: 'worker', ...scope, ...meta });
  });
}

/**
 * graphile-worker's warning, at every start, that its pool (10) is smaller than the concurrency: it assumes each job
 * holds one of its connections, but here the local queue fetches and completes jobs for the whole process, and the
 * tasks query through the service's own pool (DATABASE_POOL_SIZE). Logged as debug.
 */
const poolSmallerThanConcurrency = /^WARNING: having maxPoolSize \(\d+\) smaller than concurrency/;
