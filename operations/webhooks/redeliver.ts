import { z } from 'zod';
import { NOT_FOUND_MESSAGE } from '../../src/registry/errors.js';
import { idOf } from '../../src/registry/fields.js';
import { defineOperation } from '../../src/registry/operation.js';
import { enqueueDelivery } from '../../src/worker/queue.js';
import { selectDeliveries, WebhookDelivery } from './deliveries.js';

export default defineOperation({
  id: 'redeliverWebhook',
  method: 'POST',
  path: '/webhooks/{id}/deliveries/{deliveryId}/redeliver',
  summary: 'Send a delivery\'s event to its endpoint again, now',
  description:
    'A new delivery of the same event (the same `webhook-id`, so a receiver that keeps ids sees a repeat), sent now with its own ' +
    'retries, whatever became of the first. The endpoint must be enabled (409 INVALID_STATE). Internal (dashboard, command line with a ' +
    'session, admin).',
  input: { path: z.object({ id: idOf('webhook endpoint'), deliveryId: idOf('delivery') }) },
  output: WebhookDelivery,
  status: 201,
  errors: ['NOT_FOUND', 'INVALID_STATE'],
  async handler({ id, deliveryId }, { db, auth, fail }) {
    return db.begin(async (tx) => {
      const [endpoint] = await tx<{ enabled: boolean }[]>`
        SELECT enabled FROM webhook_endpoints WHERE id = ${id} AND organization_id = ${auth.workspaceId} FOR SHARE`;
      if (!endpoint) return fail('NOT_FOUND', NOT_FOUND_MESSAGE);
      if (!endpoint.enabled) return fail('INVALID_STATE', 'The endpoint is disabled: enable it (PATCH /webhooks/{id} with enabled true) first');
      const [made] = await tx<{ id: string }[]>`
        INSERT INTO webhook_deliveries (organization_id, endpoint_id, event_seq, event_tx, resource_id)
        SELECT organization_id, endpoint_id, event_seq, event_tx, resource_id FROM webhook_deliveries WHERE id = ${deliveryId} AND endpoint_id = ${id}
        RETURNING id`;
      if (!made) return fail('NOT_FOUND', NOT_FOUND_MESSAGE);
      await enqueueDelivery(tx, made.id);
      const [row] = await selectDeliveries(tx, tx`d.id = ${made.id}`, 1);
      return JSON.parse(row!.delivery) as z.input<typeof WebhookDelivery>;
    });
  },
});
