import { z } from 'zod';
import { NOT_FOUND_MESSAGE } from '../../src/registry/errors.js';
import { idOf } from '../../src/registry/fields.js';
import { defineOperation } from '../../src/registry/operation.js';
import { newSecret, selectEndpoints, WebhookEndpointWithSecret } from './webhook.js';

/** How long the secret a rotation replaces still signs deliveries. */
export const PREVIOUS_SECRET_HOURS = 24;

export default defineOperation({
  id: 'rotateWebhookSecret',
  method: 'POST',
  path: '/webhooks/{id}/rotate-secret',
  summary: 'Give a webhook endpoint a new signing secret; the old one stays valid for 24 hours',
  description: [
    `For ${PREVIOUS_SECRET_HOURS} hours every delivery carries two signatures in \`webhook-signature\`, one with each secret, so a receiver`,
    'verifies with either while it moves to the new one (shown in this answer only). Rotating again within those hours ends',
    'the older secret at once. Internal (dashboard, command line with a session, admin).',
  ].join('\n'),
  input: { path: z.object({ id: idOf('webhook endpoint') }) },
  output: WebhookEndpointWithSecret,
  errors: ['NOT_FOUND'],
  async handler({ id }, { db, secrets, auth, fail }) {
    const secret = newSecret();
    const rotated = await db`
      UPDATE webhook_endpoints SET previous_secret = secret, secret = ${secrets.seal(Buffer.from(secret))},
        previous_secret_expires_at = now() + ${PREVIOUS_SECRET_HOURS} * interval '1 hour', updated_at = now()
      WHERE id = ${id} AND organization_id = ${auth.workspaceId}`;
    if (rotated.count === 0) return fail('NOT_FOUND', NOT_FOUND_MESSAGE);
    const [endpoint] = await selectEndpoints(db, auth.workspaceId, id);
    return { ...endpoint!, secret };
  },
});
