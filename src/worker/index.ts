import { Logger as WorkerLogger, run, type Runner } from 'graphile-worker';
import type { Logger } from '../logger.js';
import { tasks } from './tasks.js';

/** Runs the graphile-worker runner on the service's database; it installs its own schema on first start. */
export async function startWorker(connectionString: string, concurrency: number, logger: Logger): Promise<Runner> {
  return run({
    connectionString,
    concurrency,
    taskList: tasks,
    // Shutdown is ordered by src/main.ts.
    noHandleSignals: true,
    logger: new WorkerLogger((scope) => (level, message, meta) => {
      const write = level === 'error' ? logger.error : level === 'warning' ? logger.warn : logger.debug;
      write(message, { component: 'worker', ...scope, ...meta });
    }),
  });
}
