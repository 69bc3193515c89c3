import { z } from 'zod';
import { callbackUrl, connectUnavailable } from '../../src/channels/connect.js';
import { PLATFORMS, platforms } from '../../src/platforms/index.js';
import { defineOperation } from '../../src/registry/operation.js';
import { platform } from '../integrations/integration.js';

/**
 * What this server can connect channels to, and what an operator must set for the rest: the one place the API, MCP
 * and the dashboard's channels page learn it from (the same check `POST /integrations/connect` refuses with).
 */
export const Platform = z
  .object({
    platform,
    name: z.string().meta({ description: 'How the platform is named to people: Bluesky, LinkedIn, Mastodon, Threads.' }),
    connectMethod: z.enum(['app-password', 'oauth']).meta({
      description:
        '`app-password`: a handle and an app password, given on this service\'s connect page (or `POST /integrations/bluesky`); ' +
        '`oauth`: the platform\'s own consent page.',
    }),
    connectable: z.boolean().meta({ description: 'Whether `POST /integrations/connect` can connect it on this server now.' }),
    unavailableReason: z
      .string()
      .nullable()
      .meta({ description: 'Why it cannot be connected (the message `POST /integrations/connect` answers), naming the settings to set; null when it can.' }),
    settings: z.array(z.string()).meta({
      description:
        'The server\'s settings (environment variables) connecting it needs, such as LINKEDIN_CLIENT_ID and LINKEDIN_CLIENT_SECRET; [] when it ' +
        'needs none. Set by whoever runs the server (docs/publishing.md#linkedin).',
    }),
    redirectUri: z
      .string()
      .nullable()
      .meta({ description: 'For an OAuth platform: the redirect URI to register in the platform\'s app ({PUBLIC_URL}/oauth/<platform>/callback); null otherwise.' }),
  })
  .meta({ id: 'Platform' });

export default defineOperation({
  id: 'listPlatforms',
  method: 'GET',
  path: '/platforms',
  visibility: 'public',
  summary: 'The platforms channels can be connected to on this server, and what the others need',
  description:
    'Every platform, in a fixed order: whether `POST /integrations/connect` can connect it here (`connectable`), and when not, why ' +
    '(`unavailableReason`) and which server settings it needs (`settings`). LinkedIn is connectable only on a server with a LinkedIn ' +
    'app\'s client (LINKEDIN_CLIENT_ID and LINKEDIN_CLIENT_SECRET), Threads only with a Meta app\'s (THREADS_APP_ID and ' +
    'THREADS_APP_SECRET); each `redirectUri` is the one to register in that app. Mastodon ' +
    'needs no setting: Postwise registers itself on each member\'s server when they connect (`settings` [], `redirectUri` null).',
  output: z.array(Platform),
  async handler(_input, app) {
    return PLATFORMS.map((name) => {
      const oauth = platforms[name].publisher?.oauth;
      const unavailable = connectUnavailable(app, name);
      return {
        platform: name,
        name: platforms[name].label,
        connectMethod: platforms[name].connect.method,
        connectable: !unavailable,
        unavailableReason: unavailable,
        settings: [...(oauth?.settings ?? [])],
        redirectUri: oauth ? callbackUrl(app, name) : null,
      };
    });
  },
});
