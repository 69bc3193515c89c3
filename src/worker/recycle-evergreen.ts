import type { Task } from 'graphile-worker';
import type { AppContext } from '../registry/context.js';
import { CronPayload, enqueueRecycle, TASK } from './queue.js';
import { defineTask } from './task.js';

/** Queues the due run of every enabled rule (each tick of the crontab; the rule's job key keeps it one job a rule). */
function recycleEvergreenTask(app: AppContext): Task {
  return async (payload) => {
    CronPayload.parse(payload ?? {});
    await enqueueRecycle(app.db);
  };
}

export default defineTask(TASK.recycleEvergreen, recycleEvergreenTask);
