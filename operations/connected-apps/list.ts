import { z } from 'zod';
import { cursor, encodeCursor, itemList, limit } from '../../src/registry/fields.js';
import { defineOperation } from '../../src/registry/operation.js';
import { CONNECTED_APP_COLUMNS, ConnectedApp, toConnectedApp, type ConnectedAppRow } from './connected-app.js';

export default defineOperation({
  id: 'listConnectedApps',
  method: 'GET',
  path: '/connected-apps',
  summary: 'The apps connected to the workspace by OAuth (hosted agents), newest first',
  description:
    'Every member\'s connections, as every member sees every API key: each with what it reaches, what it may do, its approval rule, ' +
    'who connected it and its last use. Internal: a key or a connected app cannot list them.',
  input: { query: z.object({ limit: limit(), cursor: cursor(z.tuple([z.string()])) }) },
  output: itemList(ConnectedApp),
  async handler({ limit, cursor }, { db, auth }) {
    // The cursor names the last connection; its own row gives the position, at the database's full timestamp precision.
    const before = cursor
      ? db`AND (c.created_at, c.id) < (SELECT created_at, id FROM oauth_connections WHERE id = ${cursor[0]} AND organization_id = ${auth.workspaceId})`
      : db``;
    const rows = await db<ConnectedAppRow[]>`
      SELECT ${db.unsafe(CONNECTED_APP_COLUMNS)} FROM oauth_connections c JOIN users u ON u.id = c.user_id
      WHERE c.organization_id = ${auth.workspaceId} ${before}
      ORDER BY c.created_at DESC, c.id DESC LIMIT ${limit + 1}`;
    const items = rows.slice(0, limit);
    const last = items.at(-1);
    return { items: items.map(toConnectedApp), nextCursor: rows.length > limit && last ? encodeCursor([last.id]) : null };
  },
});
