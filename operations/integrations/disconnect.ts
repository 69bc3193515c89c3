import { z } from 'zod';
import { uuid } from '../../src/registry/fields.js';
import { defineOperation } from '../../src/registry/operation.js';
import { REFRESH_TASK } from '../../src/worker/jobs.js';
import { Integration, selectIntegrations, toIntegration } from './integration.js';

export default defineOperation({
  id: 'disconnectIntegration',
  method: 'POST',
  path: '/integrations/{id}/disconnect',
  summary: 'Disconnect a channel: forget its credentials, keep the channel',
  description:
    'Erases the channel\'s stored credentials and stops refreshing them: `tokenStatus` MISSING, `connectionErrorCode` DISCONNECTED. The ' +
    'channel, its posts and schedules stay; schedules that come due fail with a reason to connect it again, which `POST ' +
    '/integrations/connect` does for the same account (same channel). Disconnecting again changes nothing. The token is not revoked at ' +
    'the platform (the member can remove the app in the platform\'s settings). Internal (dashboard).',
  input: { path: z.object({ id: uuid }) },
  output: Integration,
  errors: ['NOT_FOUND'],
  async handler({ id }, { db, auth, fail }) {
    const disconnected = await db.begin(async (tx) => {
      const [row] = await tx`
        UPDATE integrations SET credentials = NULL, token_status = 'MISSING', connection_error_code = 'DISCONNECTED',
          connection_error = 'Disconnected: connect the channel again to publish to it', expires_at = NULL, updated_at = now()
        WHERE id = ${id} AND organization_id = ${auth.workspaceId} RETURNING id`;
      if (row) await tx`SELECT graphile_worker.remove_job(${`${REFRESH_TASK}:${id}`})`;
      return Boolean(row);
    });
    if (!disconnected) return fail('NOT_FOUND', 'No such integration');
    const [integration] = await selectIntegrations(db, auth.workspaceId, id);
    return toIntegration(integration!);
  },
});
