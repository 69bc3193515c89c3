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
    'profile and pages, and the channel stays `PENDING_SELECTION` until one is picked. THREADS: Threads\' consent page. Each link ' +
    'works once, for 15 minutes, for this workspace and user. MASTODON: with `instance` (the member\'s server, such as `mastodon.social`), that server\'s consent ' +
    'page (Postwise registers itself there once, and reads the server\'s limits); without it, this service\'s page asking for the ' +
    'server. An unknown platform, a server that cannot be reached or is not a Mastodon server, or LinkedIn or Threads on a server ' +
    'without its app (LINKEDIN_CLIENT_ID, THREADS_APP_ID…), answers 400 VALIDATION_ERROR saying so (GET /platforms says which can be connected).',
  // Any text, so that an unknown platform gets the message naming the supported ones rather than a schema's enum.
  input: {
    body: z.strictObject({
      platform: text.min(1).max(50).meta({ description: 'BLUESKY, LINKEDIN, MASTODON or THREADS.' }),
      instance: text.min(1).max(300).optional().meta({
        description: 'MASTODON only: the member\'s server (`mastodon.social`, `hachyderm.io`, `@ann@hachyderm.io`); without it the link asks for it.',
      }),
    }),
  },
  output: z.object({ redirectUrl: z.string().meta({ description: 'Where the user continues, in a browser.' }) }),
  errors: ['VALIDATION_ERROR'],
  async handler({ platform, instance }, app) {
    const { auth, fail } = app;
    if (!PLATFORMS.includes(platform as Platform)) {
      const supported = PLATFORMS.filter((known) => !connectUnavailable(app, known));
      return fail('VALIDATION_ERROR', `platform: unknown platform "${platform}"; supported: ${supported.join(', ')}`);
    }
    const unavailable = connectUnavailable(app, platform as Platform);
    if (unavailable) return fail('VALIDATION_ERROR', `platform: ${unavailable}`);
    if (instance !== undefined && platform !== 'MASTODON') return fail('VALIDATION_ERROR', 'instance: only MASTODON takes a server');
    const link = await createConnectLink(app, auth, platform as Platform, instance === undefined ? {} : { instance });
    if (typeof link === 'object') return fail('VALIDATION_ERROR', `instance: ${link.refused}`);
    return { redirectUrl: link };
  },
});
