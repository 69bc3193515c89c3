import { z } from 'zod';
import { NOT_FOUND_MESSAGE } from '../../src/registry/errors.js';
import { idOf, success } from '../../src/registry/fields.js';
import { defineOperation } from '../../src/registry/operation.js';

export default defineOperation({
  id: 'deleteWebhook',
  method: 'DELETE',
  path: '/webhooks/{id}',
  summary: 'Delete a webhook endpoint, with its queued deliveries and its delivery log',
  description: 'Nothing more is sent to it. Internal (dashboard, command line with a session, admin).',
  input: { path: z.object({ id: idOf('webhook endpoint') }) },
  output: success,
  errors: ['NOT_FOUND'],
  async handler({ id }, { db, auth, fail }) {
    // The deliveries' jobs find their rows gone and do nothing.
    const deleted = await db`DELETE FROM webhook_endpoints WHERE id = ${id} AND organization_id = ${auth.workspaceId}`;
    if (deleted.count === 0) return fail('NOT_FOUND', NOT_FOUND_MESSAGE);
    return { success: true };
  },
});
