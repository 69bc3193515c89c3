import { z } from 'zod';
import { defineOperation } from '../../src/registry/operation.js';
import { selectEndpoints, WebhookEndpoint } from './webhook.js';

export default defineOperation({
  id: 'listWebhooks',
  method: 'GET',
  path: '/webhooks',
  summary: 'The workspace\'s webhook endpoints, oldest first',
  description: 'Without their secrets, which are shown only when made. Internal (dashboard, command line with a session, admin).',
  input: {},
  output: z.array(WebhookEndpoint),
  async handler(_input, { db, auth }) {
    return selectEndpoints(db, auth.workspaceId);
  },
});
