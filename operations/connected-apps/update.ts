import { z } from 'zod';
import { NOT_FOUND_MESSAGE } from '../../src/registry/errors.js';
import { defineOperation } from '../../src/registry/operation.js';
import { CONNECTED_APP_COLUMNS, ConnectedApp, connectionId, mayManageConnection, postsNeedApproval, toConnectedApp, type ConnectedAppRow } from './connected-app.js';

export default defineOperation({
  id: 'updateConnectedApp',
  method: 'PATCH',
  path: '/connected-apps/{id}',
  summary: 'Set whether the posts a connected app writes need approval',
  description:
    'The member who connected the app changes it; the owner changes any (FORBIDDEN otherwise). The change applies to the posts the ' +
    'app writes from then on: posts already waiting for approval stay waiting. Answers the connected app. Internal: a key or a ' +
    'connected app cannot change it.',
  input: { path: z.object({ id: connectionId }), body: z.strictObject({ postsNeedApproval }) },
  output: ConnectedApp,
  errors: ['NOT_FOUND', 'FORBIDDEN'],
  async handler({ id, postsNeedApproval }, { db, auth, fail }) {
    const mayChange = await mayManageConnection(db, auth.workspaceId, auth.userId, id);
    if (mayChange === undefined) return fail('NOT_FOUND', NOT_FOUND_MESSAGE);
    if (!mayChange) return fail('FORBIDDEN', 'Only the owner of this workspace may change an app another member connected');
    const [row] = await db<ConnectedAppRow[]>`
      WITH c AS (UPDATE oauth_connections SET posts_need_approval = ${postsNeedApproval} WHERE id = ${id} AND organization_id = ${auth.workspaceId} RETURNING *)
      SELECT ${db.unsafe(CONNECTED_APP_COLUMNS)} FROM c JOIN users u ON u.id = c.user_id`;
    // Disconnected between the check and the change.
    if (!row) return fail('NOT_FOUND', NOT_FOUND_MESSAGE);
    return toConnectedApp(row);
  },
});
