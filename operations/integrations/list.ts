import { z } from 'zod';
import { defineOperation } from '../../src/registry/operation.js';
import { Integration, selectIntegrations, toIntegration } from './integration.js';

export default defineOperation({
  id: 'listIntegrations',
  method: 'GET',
  path: '/integrations',
  visibility: 'public',
  summary: 'The channels connected to the workspace',
  description:
    'Every integration of the workspace, oldest first. `hasFailedSchedules` is true while any of its schedules is FAILED; ' +
    '`failingSchedules` counts those FAILED or waiting to be tried again automatically, and `lastFailure` says the latest one\'s reason ' +
    '(GET /posts?failing=true&integrationId={id} lists their posts).',
  output: z.array(Integration),
  async handler(_input, { db, auth }) {
    return (await selectIntegrations(db, auth.workspaceId)).map(toIntegration);
  },
});
