import { z } from 'zod';
import { NOT_FOUND_MESSAGE } from '../../src/registry/errors.js';
import { success } from '../../src/registry/fields.js';
import { defineOperation } from '../../src/registry/operation.js';
import { connectionId, mayManageConnection } from './connected-app.js';

export default defineOperation({
  id: 'revokeConnectedApp',
  method: 'DELETE',
  path: '/connected-apps/{id}',
  summary: 'Disconnect an app connected to the workspace by OAuth',
  description:
    'Deletes the connection and every code and token issued for it: the app is refused from its very next request, over MCP and ' +
    'REST, and must be connected again (a member allowing it once more) to come back. The posts it wrote keep its name. The member ' +
    'who connected it disconnects it; the owner disconnects any (FORBIDDEN otherwise). Internal: a key or a connected app cannot ' +
    'disconnect one.',
  input: { path: z.object({ id: connectionId }) },
  output: success,
  errors: ['NOT_FOUND', 'FORBIDDEN'],
  async handler({ id }, { db, auth, fail }) {
    const mayRevoke = await mayManageConnection(db, auth.workspaceId, auth.userId, id);
    if (mayRevoke === undefined) return fail('NOT_FOUND', NOT_FOUND_MESSAGE);
    if (!mayRevoke) return fail('FORBIDDEN', 'Only the owner of this workspace may disconnect an app another member connected');
    // Its codes and tokens go with it (ON DELETE CASCADE); its usage and posts keep their counts and the app's name.
    await db`DELETE FROM oauth_connections WHERE id = ${id} AND organization_id = ${auth.workspaceId}`;
    return { success: true };
  },
});
