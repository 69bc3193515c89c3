import type { Task } from 'graphile-worker';
import { Webhook } from 'standardwebhooks';
import { z } from 'zod';
import { envelopeJson, eventIdSql, recordEvents } from '../../operations/events/event.js';
import { selectEndpoints } from '../../operations/webhooks/webhook.js';
import { RemoteFetchError, sendGuarded } from '../media/remote.js';
import type { AppContext } from '../registry/context.js';
import { deliveriesQueued, enqueueDelivery, TASK } from './queue.js';
import { defineTask } from './task.js';

const Payload = z.strictObject({ deliveryId: z.uuid() });

/** How much of a receiver's answer the delivery log keeps. */
const EXCERPT_BYTES = 1024;

interface Delivery {
  id: string;
  organizationId: string;
  endpointId: string;
  status: string;
  attempts: number;
  url: string;
  enabled: boolean;
  secret: Buffer;
  previousSecret: Buffer | null;
  resourceId: string;
  eventId: string;
  body: string;
  /** An earlier delivery about the same resource to the same endpoint, still pending: this one waits for it. */
  waitFor: Date | null;
}

/**
 * The deliver-webhook task: one POST of an event to an endpoint, signed as Standard Webhooks says (webhook-id is the
 * event's id, stable across retries and redeliveries). A 2xx within WEBHOOK_TIMEOUT_MS delivers it; anything else is
 * an attempt in the log and a retry after the next of WEBHOOK_RETRY_DELAYS_MS (with jitter), until they run out. Per
 * endpoint and resource, deliveries go in the events' order: one waits while an earlier one is pending. An endpoint
 * whose every delivery has failed for WEBHOOK_DISABLE_AFTER_MS is disabled, with an endpoint.disabled event. At least
 * once: a worker that dies mid-send leaves the job to graphile-worker's retry, and the receiver dedupes by webhook-id.
 */
function deliverWebhookTask(app: AppContext): Task {
  return async (payload) => {
    const { deliveryId } = Payload.parse(payload);
    const { db, config, secrets } = app;
    const [delivery] = await db<Delivery[]>`
      SELECT d.id, d.organization_id, d.endpoint_id, d.resource_id, d.status, d.attempts, w.url, w.enabled, w.secret,
        CASE WHEN w.previous_secret_expires_at > now() THEN w.previous_secret END AS previous_secret,
        ${eventIdSql(db)} AS event_id, ${envelopeJson(db)}::text AS body,
        (SELECT max(p.next_attempt_at) FROM webhook_deliveries p
          WHERE p.endpoint_id = d.endpoint_id AND p.resource_id = d.resource_id AND p.status = 'pending'
            AND (p.event_tx, p.event_seq) < (d.event_tx, d.event_seq)) AS wait_for
      FROM webhook_deliveries d JOIN webhook_endpoints w ON w.id = d.endpoint_id JOIN events e ON e.seq = d.event_seq
      WHERE d.id = ${deliveryId}`;
    if (!delivery || delivery.status !== 'pending') return;
    if (!delivery.enabled) {
      await db`UPDATE webhook_deliveries SET status = 'failed', updated_at = now() WHERE id = ${deliveryId} AND status = 'pending'`;
      return;
    }
    if (delivery.waitFor) {
      // After the earlier one's next attempt; when it settles, it wakes this one (below).
      await enqueueDelivery(db, deliveryId, new Date(Math.max(Date.now(), delivery.waitFor.getTime()) + 1000));
      return;
    }

    const attempt = delivery.attempts + 1;
    const timestamp = new Date();
    const signatures = [delivery.secret, delivery.previousSecret]
      .filter((sealed): sealed is Buffer => sealed !== null)
      .map((sealed) => new Webhook(secrets.open(sealed).toString()).sign(delivery.eventId, timestamp, delivery.body));
    const started = performance.now();
    let outcome: { status: number | null; excerpt: string | null; error: string | null };
    try {
      const answer = await sendGuarded(delivery.url, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'content-length': String(Buffer.byteLength(delivery.body)),
          'user-agent': 'Postwise-Webhooks/1',
          'webhook-id': delivery.eventId,
          'webhook-timestamp': String(Math.floor(timestamp.getTime() / 1000)),
          'webhook-signature': signatures.join(' '),
        },
        body: delivery.body,
        timeoutMs: config.webhookTimeoutMs,
        allowHosts: config.mediaFetchAllowHosts,
        excerptBytes: EXCERPT_BYTES,
      });
      outcome = { status: answer.status, excerpt: answer.excerpt, error: null };
    } catch (error) {
      if (!(error instanceof RemoteFetchError)) throw error;
      outcome = { status: null, excerpt: null, error: error.message };
    }
    const durationMs = Math.round(performance.now() - started);
    const delivered = outcome.status !== null && outcome.status >= 200 && outcome.status <= 299;
    const delay = config.webhookRetryDelaysMs[attempt - 1];
    const retryAt = !delivered && delay !== undefined ? new Date(Date.now() + delay * (0.8 + Math.random() * 0.4)) : null;

    // One statement: the attempt in the log, the delivery's state, the endpoint's failing streak, and the job that comes
    // next (this one's retry, or the delivery about the same resource that waited for this one).
    const [settled] = await db<{ disable: boolean }[]>`
      WITH attempt AS (
        INSERT INTO webhook_attempts (delivery_id, attempt, url, started_at, duration_ms, response_status, response_excerpt, error)
        VALUES (${deliveryId}, ${attempt}, ${delivery.url}, ${timestamp}, ${durationMs}, ${outcome.status}, ${outcome.excerpt}, ${outcome.error})),
      delivery AS (
        UPDATE webhook_deliveries SET attempts = ${attempt}, updated_at = now(),
          status = ${delivered ? 'delivered' : retryAt ? 'pending' : 'failed'}, next_attempt_at = coalesce(${retryAt}, next_attempt_at)
        WHERE id = ${deliveryId}),
      endpoint AS (
        UPDATE webhook_endpoints SET failing_since = ${delivered ? null : db`coalesce(failing_since, ${timestamp})`}
        WHERE id = ${delivery.endpointId}
        RETURNING NOT ${delivered} AND failing_since < now() - ${config.webhookDisableAfterMs} * interval '1 millisecond' AND enabled AS disable),
      next AS (
        SELECT ${deliveryId}::uuid AS id, ${retryAt}::timestamptz AS run_at WHERE ${retryAt !== null}
        UNION ALL (
          SELECT n.id, now() FROM webhook_deliveries n
          WHERE ${retryAt === null} AND n.endpoint_id = ${delivery.endpointId} AND n.resource_id = ${delivery.resourceId}
            AND n.status = 'pending' AND n.id <> ${deliveryId}
          ORDER BY n.event_tx, n.event_seq LIMIT 1))
      SELECT (SELECT disable FROM endpoint) AS disable,
        (SELECT ${deliveriesQueued(db)} FROM next) AS queued`;
    if (settled?.disable) {
      const days = Math.round((config.webhookDisableAfterMs / 86_400_000) * 10) / 10;
      await db.begin(async (tx) => {
        await tx`
          UPDATE webhook_endpoints SET enabled = false, updated_at = now(),
            disabled_reason = ${`Every delivery failed for ${days} days (the last: ${(outcome.error ?? `HTTP ${outcome.status}`).replace(/\.$/, '')}); enable it again once it answers`}
          WHERE id = ${delivery.endpointId}`;
        const [shown] = await selectEndpoints(tx, delivery.organizationId, delivery.endpointId);
        await recordEvents(tx, delivery.organizationId, [{ type: 'endpoint.disabled', resourceId: delivery.endpointId, data: shown }]);
      });
    }
  };
}

export default defineTask(TASK.deliverWebhook, deliverWebhookTask);
