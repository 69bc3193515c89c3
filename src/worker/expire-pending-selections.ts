import type { Task } from 'graphile-worker';
import { revokeErased } from '../channels/open-account.js';
import { PENDING_SELECTION_TTL_HOURS } from '../../operations/integrations/integration.js';
import type { Platform } from '../platforms/index.js';
import type { AppContext } from '../registry/context.js';
import { CronPayload, TASK } from './queue.js';
import { defineTask } from './task.js';

/** Channels erased at a time: the revocations of a batch are sent at once, so LinkedIn gets a few at a time. */
const BATCH = 25;

/** The channel's connectionErrorCode and connectionError once its tokens are erased so. */
const SELECTION_EXPIRED = 'SELECTION_EXPIRED';
const FORGOTTEN =
  `The account to post as was not picked within ${PENDING_SELECTION_TTL_HOURS} hours of connecting, so the connection was forgotten: ` +
  'connect the channel again (POST /integrations/connect)';

/**
 * The expire-pending-selections task (queued by the worker's crontab, src/worker/queue.ts): a channel left
 * PENDING_SELECTION for more than PENDING_SELECTION_TTL_HOURS since its connect (it is PENDING_SELECTION only from its
 * creation, so `created_at` says since when) loses its stored tokens: tokenStatus MISSING, connectionErrorCode
 * SELECTION_EXPIRED, a connectionError saying to connect again. The tokens are then revoked at the platform, best
 * effort, after the erasure committed. A channel already erased no longer matches, so running it again does nothing.
 */
function expirePendingSelectionsTask(app: AppContext): Task {
  return async (payload, helpers) => {
    CronPayload.parse(payload ?? {});
    for (;;) {
      const erased = await eraseDue(app);
      if (erased.length) app.logger.info('channels left PENDING_SELECTION lost their tokens', { integrationIds: erased.map((row) => row.integrationId) });
      await Promise.all(erased.map((row) => revokeErased(app, row, helpers.abortSignal)));
      if (erased.length < BATCH || helpers.abortSignal?.aborted) return;
    }
  };
}

/** Erases (committed when it answers) a batch of the channels due, and answers their credentials as they were. */
function eraseDue(app: AppContext) {
  return app.db<{ integrationId: string; platform: Platform; credentials: Buffer }[]>`
    WITH due AS (
      SELECT id, credentials FROM integrations
      WHERE connect_status = 'PENDING_SELECTION' AND credentials IS NOT NULL
        AND created_at < now() - ${PENDING_SELECTION_TTL_HOURS} * interval '1 hour'
      ORDER BY created_at LIMIT ${BATCH} FOR UPDATE SKIP LOCKED)
    UPDATE integrations i SET credentials = NULL, token_status = 'MISSING', connection_error_code = ${SELECTION_EXPIRED},
      connection_error = ${FORGOTTEN}, expires_at = NULL, updated_at = now()
    FROM due WHERE i.id = due.id
    RETURNING i.id AS integration_id, i.platform, due.credentials`;
}

export default defineTask(TASK.expirePendingSelections, expirePendingSelectionsTask);
