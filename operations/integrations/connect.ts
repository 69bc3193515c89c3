import { z } from 'zod';
import { connectUnavailable, createConnectLink } from '../../src/channels/connect.js';
import { PLATFORMS, type Platform } from '../../src/platforms/index.js';
import { text } from '../../src/registry/fields.js';
import { defineOperation } from '../../src/registry/operation.js';

export default defineOperation({
  id: 'connectIntegration',
  method: 'POST',
  path: '/integrations/connect',
  visibility: 'public',
  summary: 'Start connecting a channel: the link the user opens in a browser',
  description:
    'Answers `redirectUrl`, to open in a browser. BLUESKY: this service\'s connect page, where the user gives their handle and an ' +
    'app password. LINKEDIN: LinkedIn\'s consent page; when the member administers LinkedIn pages, the callback offers their ' +
    'profile and pages, and the channel stays `PENDING_SELECTION` until one is picked. Either link works once, for 15 minutes, for ' +
    'this workspace and user. An unknown platform, or LinkedIn on a server without LINKEDIN_CLIENT_ID and LINKEDIN_CLIENT_SECRET, ' +
    'answers 400 VALIDATION_ERROR saying so.',
  // Any text, so that an unknown platform gets the message naming the supported ones rather than a schema's enum.
  input: { body: z.strictObject({ platform: text.min(1).max(50).meta({ description: 'BLUESKY or LINKEDIN.' }) }) },
  output: z.object({ redirectUrl: z.string().meta({ description: 'Where the user continues, in a browser.' }) }),
  errors: ['VALIDATION_ERROR'],
  async handler({ platform }, app) {
    const { auth, fail } = app;
    if (!PLATFORMS.includes(platform as Platform)) {
      const supported = PLATFORMS.filter((known) => !connectUnavailable(app, known));
      return fail('VALIDATION_ERROR', `platform: unknown platform "${platform}"; supported: ${supported.join(', ')}`);
    }
    const unavailable = connectUnavailable(app, platform as Platform);
    if (unavailable) return fail('VALIDATION_ERROR', `platform: ${unavailable}`);
    return { redirectUrl: await createConnectLink(app, auth, platform as Platform) };
  },
});
