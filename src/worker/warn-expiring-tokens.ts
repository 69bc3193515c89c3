import type { Task } from 'graphile-worker';
import { recordIntegrationEvent } from '../../operations/events/event.js';
import { EXPIRY_WARNING_DAYS } from '../../operations/integrations/integration.js';
import type { AppContext } from '../registry/context.js';
import { CronPayload, TASK } from './queue.js';
import { defineTask } from './task.js';

/**
 * Writes integration.token_expiring for each channel whose token cannot be refreshed and expires within
 * EXPIRY_WARNING_DAYS (its tokenStatus turns EXPIRING then), once per token: queued each hour by the worker's crontab
 * (src/worker/queue.ts). Two runs at once warn once: the row update decides.
 */
function warnExpiringTokensTask(app: AppContext): Task {
  return async (payload) => {
    CronPayload.parse(payload ?? {});
    await app.db.begin(async (tx) => {
      const expiring = await tx<{ id: string; organizationId: string }[]>`
        UPDATE integrations SET expiry_warned_for = expires_at
        WHERE auto_refresh_unavailable AND token_status = 'VALID' AND credentials IS NOT NULL
          AND expires_at > now() AND expires_at <= now() + ${EXPIRY_WARNING_DAYS} * interval '1 day'
          AND expiry_warned_for IS DISTINCT FROM expires_at
        RETURNING id, organization_id`;
      for (const integration of expiring) await recordIntegrationEvent(tx, integration.organizationId, 'integration.token_expiring', integration.id);
    });
  };
}

export default defineTask(TASK.warnExpiringTokens, warnExpiringTokensTask);
