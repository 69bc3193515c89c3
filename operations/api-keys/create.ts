import { z } from 'zod';
import { text, timestamp } from '../../src/registry/fields.js';
import { defineOperation } from '../../src/registry/operation.js';
import { ApiKey, insertApiKey, postsNeedApproval, toApiKey } from './api-key.js';

export default defineOperation({
  id: 'createApiKey',
  method: 'POST',
  path: '/api-keys',
  summary: 'Create an API key for the calling user in this workspace',
  description: 'The key is in the answer once and never again; only its SHA-256 is stored. Internal: an API key cannot create keys.',
  input: {
    body: z.strictObject({
      name: text.trim().min(1).max(100).default('API key'),
      expiresAt: timestamp.optional().meta({ description: 'When the key stops working; it never expires unless given.' }),
      postsNeedApproval: postsNeedApproval.default(false),
    }),
  },
  output: ApiKey.extend({ key: z.string() }).meta({ id: 'CreatedApiKey' }),
  status: 201,
  errors: ['VALIDATION_ERROR'],
  async handler({ name, expiresAt, postsNeedApproval }, { db, auth, fail }) {
    const expiry = expiresAt ? new Date(expiresAt) : null;
    if (expiry && expiry.getTime() <= Date.now()) fail('VALIDATION_ERROR', 'expiresAt: must be in the future');
    const created = await insertApiKey(db, { workspaceId: auth.workspaceId, userId: auth.userId, name, expiresAt: expiry, postsNeedApproval });
    return { ...toApiKey(created), key: created.key };
  },
});
