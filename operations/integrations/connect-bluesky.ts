import { z } from 'zod';
import { connectAccount } from '../../src/channels/connect.js';
import { text } from '../../src/registry/fields.js';
import { defineOperation } from '../../src/registry/operation.js';
import { Integration, selectIntegrations, toIntegration } from './integration.js';

export default defineOperation({
  id: 'connectBluesky',
  method: 'POST',
  path: '/integrations/bluesky',
  summary: 'Connect (or reconnect) a Bluesky account with its handle and an app password',
  description:
    'Signs in to the account\'s PDS with the app password (never the account\'s main password: create one in Bluesky\'s settings, ' +
    'App passwords) and keeps the session it gets, sealed. Connecting an account already connected reconnects that channel. ' +
    'A handle or app password the PDS refuses answers VALIDATION_ERROR saying so. Internal (dashboard, admin command); with an API ' +
    'key, `POST /integrations/connect` gives a link to the same form instead.',
  input: {
    body: z.strictObject({
      handle: text.trim().min(1).max(253).transform((handle) => handle.replace(/^@/, '')).meta({ description: 'The account\'s handle, e.g. alice.bsky.social.' }),
      appPassword: text.trim().min(1).max(100).meta({ description: 'An app password of the account.' }),
      serviceUrl: z.url({ protocol: /^https?$/ }).optional().meta({ description: 'The account\'s PDS; BLUESKY_SERVICE_URL (https://bsky.social) unless given.' }),
    }),
  },
  output: Integration,
  status: 201,
  errors: ['VALIDATION_ERROR'],
  async handler({ handle, appPassword, serviceUrl }, context) {
    const { db, auth, config, fail } = context;
    const connected = await connectAccount(
      context,
      { workspaceId: auth.workspaceId, platform: 'BLUESKY', identifier: handle, password: appPassword, serviceUrl: serviceUrl ?? config.blueskyServiceUrl },
      AbortSignal.timeout(60_000),
    );
    if ('refused' in connected) return fail('VALIDATION_ERROR', connected.refused);
    const [integration] = await selectIntegrations(db, auth.workspaceId, connected.integrationId);
    return toIntegration(integration!);
  },
});
