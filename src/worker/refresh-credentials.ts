import type { Task } from 'graphile-worker';
import { z } from 'zod';
import { renewCredentials } from '../channels/open-account.js';
import { PlatformError } from '../platforms/index.js';
import type { AppContext } from '../registry/context.js';
import { recordIntegrationEvent } from '../../operations/events/event.js';
import { TASK } from './queue.js';
import { defineTask } from './task.js';

const Payload = z.strictObject({ integrationId: z.uuid() });

/**
 * The refresh-credentials task: refreshes a channel's access token before it expires (queued by enqueueRefresh in
 * src/worker/queue.ts when a refreshable token is stored, and again after each refresh). A channel gone, disconnected
 * or revoked is left as it is; a refused refresh marks the channel (reconnect), one refused otherwise warns that the token
 * will expire (integration.token_expiring); a platform that did not answer throws, so graphile-worker retries the job.
 */
function refreshCredentialsTask(app: AppContext): Task {
  return async (payload, helpers) => {
    const { integrationId } = Payload.parse(payload);
    const [integration] = await app.db`
      SELECT 1 FROM integrations WHERE id = ${integrationId} AND token_status = 'VALID' AND connect_status = 'ACTIVE' AND credentials IS NOT NULL`;
    if (!integration) return;
    try {
      await renewCredentials(app, integrationId, helpers.abortSignal ?? new AbortController().signal);
    } catch (error) {
      if (!(error instanceof PlatformError) || error.kind === 'transient' || error.kind === 'unknown') throw error;
      app.logger.warn('a channel\'s token could not be refreshed', { integrationId, reason: error.message, platformCode: error.detail.platformCode });
      // Refused for good, but not for its credentials (those mark the channel): the token will run out unrenewed, which
      // integration.token_expiring says now, once for this token (the hourly warning does not repeat it).
      if (error.kind === 'permanent') {
        await app.db.begin(async (tx) => {
          const [warned] = await tx<{ organizationId: string }[]>`
            UPDATE integrations SET expiry_warned_for = expires_at
            WHERE id = ${integrationId} AND expires_at IS NOT NULL AND expiry_warned_for IS DISTINCT FROM expires_at
            RETURNING organization_id`;
          if (warned) await recordIntegrationEvent(tx, warned.organizationId, 'integration.token_expiring', integrationId);
        });
      }
    }
  };
}

export default defineTask(TASK.refreshCredentials, refreshCredentialsTask);
