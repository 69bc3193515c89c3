import { z } from 'zod';
import { createConnectLink } from '../../src/connect.js';
import { connectablePlatforms, PLATFORMS, platforms, type Platform } from '../../src/platforms/index.js';
import { text } from '../../src/registry/fields.js';
import { defineOperation } from '../../src/registry/operation.js';

export default defineOperation({
  id: 'connectIntegration',
  method: 'POST',
  path: '/integrations/connect',
  visibility: 'public',
  summary: 'Start connecting a channel: a link to this service\'s connect page',
  description:
    'Answers `redirectUrl`, this service\'s connect page for the platform (`{PUBLIC_URL}/connect/bluesky?state=…`), where the user ' +
    'gives their handle and an app password. The link works once, for 15 minutes, for this workspace and user. A platform that ' +
    'cannot be connected (yet, as LinkedIn; or unknown) answers 400 VALIDATION_ERROR naming the ones that can.',
  // Any text, so that an unknown platform gets the message naming the supported ones rather than a schema's enum.
  input: { body: z.strictObject({ platform: text.min(1).max(50).meta({ description: 'BLUESKY.' }) }) },
  output: z.object({ redirectUrl: z.string().meta({ description: 'The connect page, to open in a browser.' }) }),
  errors: ['VALIDATION_ERROR'],
  async handler({ platform }, { auth, fail, db, logger, secrets, storage, config, publicUrl }) {
    const supported = connectablePlatforms();
    if (!supported.includes(platform as Platform)) {
      const known = PLATFORMS.includes(platform as Platform);
      return fail(
        'VALIDATION_ERROR',
        `platform: ${known ? `${platforms[platform as Platform].label} cannot be connected yet` : `unknown platform "${platform}"`}; supported: ${supported.join(', ')}`,
      );
    }
    const redirectUrl = await createConnectLink({ db, logger, secrets, storage, config, publicUrl }, auth, platform as Platform);
    return { redirectUrl };
  },
});
