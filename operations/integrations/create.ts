import { z } from 'zod';
import { text } from '../../src/registry/fields.js';
import { defineOperation } from '../../src/registry/operation.js';
import { Integration, platform, selectIntegrations, toIntegration } from './integration.js';

export default defineOperation({
  id: 'createIntegration',
  method: 'POST',
  path: '/integrations',
  summary: 'Add a channel without credentials, for tests and trials',
  description:
    'The channel is ACTIVE with tokenStatus MISSING: posts can be scheduled to it, and publishing to it fails with a clear ' +
    'reason. Real channels are connected through `POST /integrations/connect`. Internal (admin command).',
  input: { body: z.strictObject({ platform, name: text.trim().min(1).max(200) }) },
  output: Integration,
  status: 201,
  async handler({ platform, name }, { db, auth }) {
    const [created] = await db<{ id: string }[]>`
      INSERT INTO integrations (organization_id, platform, name) VALUES (${auth.workspaceId}, ${platform}, ${name}) RETURNING id`;
    const [integration] = await selectIntegrations(db, auth.workspaceId, created!.id);
    return toIntegration(integration!);
  },
});
