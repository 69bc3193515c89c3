import { z } from 'zod';
import { NOT_FOUND_MESSAGE } from '../../src/registry/errors.js';
import { success, uuid } from '../../src/registry/fields.js';
import { defineOperation } from '../../src/registry/operation.js';

export default defineOperation({
  id: 'revokeApiKey',
  method: 'DELETE',
  path: '/api-keys/{id}',
  summary: 'Revoke an API key of the workspace',
  description: 'Takes effect on the very next request. Revoking a revoked key succeeds and changes nothing.',
  input: { path: z.object({ id: uuid }) },
  output: success,
  errors: ['NOT_FOUND'],
  async handler({ id }, { db, auth, fail }) {
    const [key] = await db`
      UPDATE api_keys SET revoked_at = coalesce(revoked_at, now())
      WHERE id = ${id} AND organization_id = ${auth.workspaceId} RETURNING id`;
    return key ? { success: true } : fail('NOT_FOUND', NOT_FOUND_MESSAGE);
  },
});
