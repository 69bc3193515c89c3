import type { Task } from 'graphile-worker';
import { z } from 'zod';
import { learnInstance } from '../channels/mastodon-instance.js';
import type { AppContext } from '../registry/context.js';
import { CronPayload, TASK } from './queue.js';
import { defineTask } from './task.js';

/** The daily run's (the crontab's), or one server's, after it answered a post "too long" (enqueueInstanceRead). */
const Payload = CronPayload.extend({ host: z.string().min(1).optional() });

/**
 * Reads again the limits of every Mastodon server a channel is on (queued each day by the worker's crontab,
 * src/worker/queue.ts), or of one (`host`), so a server that raises or lowers its limits is checked by its new ones. A
 * server that does not answer keeps its last limits, with the reason in `refresh_error`. Running it twice reads each
 * server twice, harmlessly.
 */
function refreshInstanceLimitsTask(app: AppContext): Task {
  return async (payload) => {
    const { host: only } = Payload.parse(payload ?? {});
    const hosts = await app.db<{ host: string }[]>`
      SELECT DISTINCT instance_host AS host FROM integrations
      WHERE instance_host IS NOT NULL AND credentials IS NOT NULL ${only ? app.db`AND instance_host = ${only}` : app.db``}`;
    for (const { host } of hosts) {
      const read = await learnInstance(app, host, AbortSignal.timeout(app.config.platformTimeoutMs * 4));
      if ('refused' in read) await app.db`UPDATE mastodon_instances SET refresh_error = ${read.refused} WHERE host = ${host}`;
    }
  };
}

export default defineTask(TASK.refreshInstanceLimits, refreshInstanceLimitsTask);
