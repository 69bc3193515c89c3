import { z } from 'zod';
import { revokeErased } from '../../src/channels/open-account.js';
import type { Platform } from '../../src/platforms/index.js';
import { uuid } from '../../src/registry/fields.js';
import { defineOperation } from '../../src/registry/operation.js';
import { cancelRefresh } from '../../src/worker/queue.js';
import { recordIntegrationEvent } from '../events/event.js';
import { Integration, selectIntegrations, toIntegration } from './integration.js';

export default defineOperation({
  id: 'disconnectIntegration',
  method: 'POST',
  path: '/integrations/{id}/disconnect',
  summary: 'Disconnect a channel: forget its credentials, keep the channel',
  description:
    'Erases the channel\'s stored credentials and stops refreshing them: `tokenStatus` MISSING, `connectionErrorCode` DISCONNECTED. The ' +
    'channel, its posts and schedules stay; schedules that come due fail with a reason to connect it again, which `POST ' +
    '/integrations/connect` does for the same account (same channel). Disconnecting again changes nothing. Once the credentials are ' +
    'erased, their tokens are revoked at the platform where it has a revocation endpoint (LinkedIn), best effort: a refusal or no ' +
    'answer within PLATFORM_TIMEOUT_MS is logged and the disconnect still succeeds. Internal (dashboard).',
  input: { path: z.object({ id: uuid }) },
  output: Integration,
  errors: ['NOT_FOUND'],
  async handler({ id }, context) {
    const { db, auth, fail } = context;
    // The credentials as they were, read under the row lock, so two disconnects at once revoke them once.
    const erased = await db.begin(async (tx) => {
      const [row] = await tx<{ platform: Platform; credentials: Buffer | null; wasDisconnected: boolean }[]>`
        WITH before AS (
          SELECT id, credentials, connection_error_code IS NOT DISTINCT FROM 'DISCONNECTED' AS was_disconnected
          FROM integrations WHERE id = ${id} AND organization_id = ${auth.workspaceId} FOR UPDATE)
        UPDATE integrations i SET credentials = NULL, token_status = 'MISSING', connection_error_code = 'DISCONNECTED',
          connection_error = 'Disconnected: connect the channel again to publish to it', expires_at = NULL, updated_at = now()
        FROM before WHERE i.id = before.id
        RETURNING i.platform, before.credentials, before.was_disconnected`;
      if (row) {
        await cancelRefresh(tx, id);
        if (!row.wasDisconnected) await recordIntegrationEvent(tx, auth.workspaceId, 'integration.disconnected', id);
      }
      return row;
    });
    if (!erased) return fail('NOT_FOUND', 'No such integration');
    await revokeErased(context, { integrationId: id, platform: erased.platform, credentials: erased.credentials });
    const [integration] = await selectIntegrations(db, auth.workspaceId, id);
    return toIntegration(integration!);
  },
});
