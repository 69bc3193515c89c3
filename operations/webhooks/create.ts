import { z } from 'zod';
import { defineOperation } from '../../src/registry/operation.js';
import { endpointFields, endpointUrl, MAX_ENDPOINTS, newSecret, refusedTarget, selectEndpoints, WebhookEndpointWithSecret } from './webhook.js';

export default defineOperation({
  id: 'createWebhook',
  method: 'POST',
  path: '/webhooks',
  summary: 'Add a webhook endpoint: the workspace\'s events are POSTed to it, signed',
  description: [
    'Every event of the types chosen (all when `eventTypes` is empty or omitted) is delivered to `url` as a signed POST, following',
    'the Standard Webhooks specification (docs/events.md#webhooks). The answer carries the signing `secret` this once; rotate it',
    `with POST /webhooks/{id}/rotate-secret. At most ${MAX_ENDPOINTS} endpoints a workspace (409 INVALID_STATE). A URL that cannot`,
    'be reached safely (not http or https, credentials in it, an address that is not public) answers 400 URL_NOT_ALLOWED.',
    'Internal (dashboard, command line with a session, admin).',
  ].join('\n'),
  input: {
    body: z.strictObject({ url: endpointUrl, eventTypes: endpointFields.eventTypes.optional(), description: endpointFields.description.optional() }),
  },
  output: WebhookEndpointWithSecret,
  status: 201,
  errors: ['URL_NOT_ALLOWED', 'INVALID_STATE'],
  async handler({ url, eventTypes = [], description = '' }, { db, secrets, config, auth, fail }) {
    const refused = refusedTarget(url, config.mediaFetchAllowHosts);
    if (refused) return fail('URL_NOT_ALLOWED', refused);
    const secret = newSecret();
    return db.begin(async (tx) => {
      // The workspace row is locked, so two creates at once cannot both pass the count.
      await tx`SELECT 1 FROM organizations WHERE id = ${auth.workspaceId} FOR UPDATE`;
      const [{ count }] = await tx<[{ count: number }]>`SELECT count(*)::int FROM webhook_endpoints WHERE organization_id = ${auth.workspaceId}`;
      if (count >= MAX_ENDPOINTS) return fail('INVALID_STATE', `The workspace has ${MAX_ENDPOINTS} webhook endpoints, the most it may have: delete one first`);
      const [created] = await tx<{ id: string }[]>`
        INSERT INTO webhook_endpoints (organization_id, url, description, event_types, secret)
        VALUES (${auth.workspaceId}, ${url}, ${description}, ${[...new Set(eventTypes)]}, ${secrets.seal(Buffer.from(secret))})
        RETURNING id`;
      const [endpoint] = await selectEndpoints(tx, auth.workspaceId, created!.id);
      return { ...endpoint!, secret };
    });
  },
});
