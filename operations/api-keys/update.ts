import { z } from 'zod';
import { NOT_FOUND_MESSAGE } from '../../src/registry/errors.js';
import { text, uuid } from '../../src/registry/fields.js';
import { defineOperation } from '../../src/registry/operation.js';
import { API_KEY_COLUMNS, ApiKey, mayManageKey, postsNeedApproval, toApiKey, type ApiKeyRow } from './api-key.js';

export default defineOperation({
  id: 'updateApiKey',
  method: 'PATCH',
  path: '/api-keys/{id}',
  summary: 'Rename an API key, or set whether the posts written with it need approval',
  description:
    'A member changes their own keys; the owner changes any (FORBIDDEN otherwise). A change of `postsNeedApproval` applies to the ' +
    'posts written from then on: posts already waiting for approval stay waiting. Answers the key. Internal: an API key cannot ' +
    'change keys.',
  input: {
    path: z.object({ id: uuid }),
    body: z.strictObject({ name: text.trim().min(1).max(100).optional(), postsNeedApproval: postsNeedApproval.optional() }),
  },
  output: ApiKey,
  errors: ['NOT_FOUND', 'FORBIDDEN', 'VALIDATION_ERROR'],
  async handler({ id, name, postsNeedApproval }, { db, auth, fail }) {
    const mayChange = await mayManageKey(db, auth.workspaceId, auth.userId, id);
    if (mayChange === undefined) return fail('NOT_FOUND', NOT_FOUND_MESSAGE);
    if (!mayChange) return fail('FORBIDDEN', 'Only the owner of this workspace may change another member\'s key');
    const [row] = await db<ApiKeyRow[]>`
      WITH k AS (
        UPDATE api_keys SET name = coalesce(${name ?? null}, name), posts_need_approval = coalesce(${postsNeedApproval ?? null}::boolean, posts_need_approval)
        WHERE id = ${id} RETURNING *)
      SELECT ${db.unsafe(API_KEY_COLUMNS)} FROM k LEFT JOIN users u ON u.id = k.user_id`;
    return toApiKey(row!);
  },
});
