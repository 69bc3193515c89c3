import type { Task } from 'graphile-worker';
import { learnInstance } from '../channels/mastodon-instance.js';
import type { AppContext } from '../registry/context.js';
import { CronPayload, TASK } from './queue.js';
import { defineTask } from './task.js';

/**
 * Reads again the limits of every Mastodon server a channel is on (queued each day by the worker's crontab,
 * src/worker/queue.ts), so a server that raises or lowers its limits is checked by its new ones. A server that does not
 * answer keeps its last limits, with the reason in `refresh_error`. Running it twice reads each server twice, harmlessly.
 */
function refreshInstanceLimitsTask(app: AppContext): Task {
  return async (payload) => {
    CronPayload.parse(payload ?? {});
    const hosts = await app.db<{ host: string }[]>`
      SELECT DISTINCT instance_host AS host FROM integrations WHERE instance_host IS NOT NULL AND credentials IS NOT NULL`;
    for (const { host } of hosts) {
      const read = await learnInstance(app, host, AbortSignal.timeout(app.config.platformTimeoutMs * 4));
      if ('refused' in read) await app.db`UPDATE mastodon_instances SET refresh_error = ${read.refused} WHERE host = ${host}`;
    }
  };
}

export default defineTask(TASK.refreshInstanceLimits, refreshInstanceLimitsTask);
