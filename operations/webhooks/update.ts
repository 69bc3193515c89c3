import { z } from 'zod';
import { NOT_FOUND_MESSAGE } from '../../src/registry/errors.js';
import { idOf } from '../../src/registry/fields.js';
import { defineOperation } from '../../src/registry/operation.js';
import { endpointFields, endpointUrl, refusedTarget, selectEndpoints, WebhookEndpoint } from './webhook.js';

export default defineOperation({
  id: 'updateWebhook',
  method: 'PATCH',
  path: '/webhooks/{id}',
  summary: 'Change a webhook endpoint, or disable and enable it',
  description: [
    'Changes only the fields given. `enabled: false` stops deliveries (those queued are not sent; `disabledReason` says it was by',
    'hand); `enabled: true` sends again from the next event, and clears `failingSince`. Deliveries already queued go to the',
    'new `url`. Internal (dashboard, command line with a session, admin).',
  ].join('\n'),
  input: {
    path: z.object({ id: idOf('webhook endpoint') }),
    body: z.strictObject({
      url: endpointUrl.optional(),
      eventTypes: endpointFields.eventTypes.optional(),
      description: endpointFields.description.optional(),
      enabled: z.boolean().optional().meta({ description: 'False stops deliveries; true resumes them.' }),
    }),
  },
  output: WebhookEndpoint,
  errors: ['NOT_FOUND', 'URL_NOT_ALLOWED'],
  async handler({ id, url, eventTypes, description, enabled }, { db, config, auth, fail }) {
    const refused = url === undefined ? undefined : refusedTarget(url, config.mediaFetchAllowHosts);
    if (refused) return fail('URL_NOT_ALLOWED', refused);
    const changed = await db`
      UPDATE webhook_endpoints SET url = coalesce(${url ?? null}, url), description = coalesce(${description ?? null}, description),
        event_types = coalesce(${eventTypes ? [...new Set(eventTypes)] : null}::text[], event_types),
        enabled = coalesce(${enabled ?? null}::boolean, enabled),
        disabled_reason = CASE WHEN ${enabled ?? null}::boolean IS NULL THEN disabled_reason
          WHEN ${enabled ?? null}::boolean THEN NULL ELSE 'Disabled by hand' END,
        failing_since = CASE WHEN ${enabled ?? false}::boolean THEN NULL ELSE failing_since END,
        updated_at = now()
      WHERE id = ${id} AND organization_id = ${auth.workspaceId}`;
    if (changed.count === 0) return fail('NOT_FOUND', NOT_FOUND_MESSAGE);
    const [endpoint] = await selectEndpoints(db, auth.workspaceId, id);
    return endpoint!;
  },
});
