import type { Task } from 'graphile-worker';
import type { AppContext } from '../registry/context.js';
import type { TaskId } from './queue.js';

/** A task of the worker: its id (the name of its file) and its handler, made once with the app's context. */
export interface WorkerTask {
  id: TaskId;
  make(app: AppContext): Task;
}

/**
 * Declares a task in its own file (`src/worker/<id>.ts`). Its handler validates its payload with zod first and is
 * idempotent: a job runs at least once.
 */
export const defineTask = (id: TaskId, make: (app: AppContext) => Task): WorkerTask => ({ id, make });
