import { z } from 'zod';
import { NOT_FOUND_MESSAGE } from '../../src/registry/errors.js';
import { success, uuid } from '../../src/registry/fields.js';
import { defineOperation } from '../../src/registry/operation.js';
import { mayManageKey } from './api-key.js';

export default defineOperation({
  id: 'revokeApiKey',
  method: 'DELETE',
  path: '/api-keys/{id}',
  summary: 'Revoke an API key of the workspace',
  description:
    'Takes effect on the very next request. A member revokes their own keys; the owner revokes any (FORBIDDEN otherwise). ' +
    'Revoking a revoked key succeeds and changes nothing.',
  input: { path: z.object({ id: uuid }) },
  output: success,
  errors: ['NOT_FOUND', 'FORBIDDEN'],
  async handler({ id }, { db, auth, fail }) {
    const mayRevoke = await mayManageKey(db, auth.workspaceId, auth.userId, id);
    if (mayRevoke === undefined) return fail('NOT_FOUND', NOT_FOUND_MESSAGE);
    if (!mayRevoke) return fail('FORBIDDEN', 'Only the owner of this workspace may revoke another member\'s key');
    await db`UPDATE api_keys SET revoked_at = coalesce(revoked_at, now()) WHERE id = ${id}`;
    return { success: true };
  },
});
