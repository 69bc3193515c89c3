import type { Task } from 'graphile-worker';
import { UNUSED_REGISTRATION_HOURS } from '../oauth/adapter.js';
import type { AppContext } from '../registry/context.js';
import { CronPayload, TASK } from './queue.js';
import { defineTask } from './task.js';

/**
 * Forgets what OAuth no longer needs (queued each hour by the worker's crontab, src/worker/queue.ts): expired codes,
 * tokens, sessions and consent requests, connections past their end, and registered apps that no connection has used
 * for UNUSED_REGISTRATION_HOURS (src/oauth/adapter.ts already treats those as gone). Running it twice deletes each row once.
 */
function pruneOAuthTask(app: AppContext): Task {
  return async (payload) => {
    CronPayload.parse(payload ?? {});
    await app.db`DELETE FROM oauth_artifacts WHERE expires_at < now()`;
    await app.db`DELETE FROM oauth_connections WHERE expires_at < now()`;
    await app.db`
      DELETE FROM oauth_clients k WHERE created_at < now() - make_interval(hours => ${UNUSED_REGISTRATION_HOURS})
        AND NOT EXISTS (SELECT 1 FROM oauth_connections c WHERE c.client_id = k.client_id)`;
  };
}

export default defineTask(TASK.pruneOAuth, pruneOAuthTask);
