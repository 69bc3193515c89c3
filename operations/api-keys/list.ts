import { z } from 'zod';
import { cursor, encodeCursor, itemList, limit, uuid } from '../../src/registry/fields.js';
import { defineOperation } from '../../src/registry/operation.js';
import { API_KEY_COLUMNS, ApiKey, toApiKey, type ApiKeyRow } from './api-key.js';

export default defineOperation({
  id: 'listApiKeys',
  method: 'GET',
  path: '/api-keys',
  summary: 'The API keys of the workspace, newest first, revoked and expired ones included',
  input: { query: z.object({ limit: limit(), cursor: cursor(z.tuple([uuid])) }) },
  output: itemList(ApiKey),
  async handler({ limit, cursor }, { db, auth }) {
    // The cursor names the last key; its own row gives the position, at the database's full timestamp precision.
    const before = cursor
      ? db`AND (k.created_at, k.id) < (SELECT created_at, id FROM api_keys WHERE id = ${cursor[0]} AND organization_id = ${auth.workspaceId})`
      : db``;
    const rows = await db<ApiKeyRow[]>`
      SELECT ${db.unsafe(API_KEY_COLUMNS)} FROM api_keys k LEFT JOIN users u ON u.id = k.user_id
      WHERE k.organization_id = ${auth.workspaceId} ${before}
      ORDER BY k.created_at DESC, k.id DESC LIMIT ${limit + 1}`;
    const items = rows.slice(0, limit);
    const last = items.at(-1);
    return { items: items.map(toApiKey), nextCursor: rows.length > limit && last ? encodeCursor([last.id]) : null };
  },
});
