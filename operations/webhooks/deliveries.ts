import { z } from 'zod';
import { NOT_FOUND_MESSAGE } from '../../src/registry/errors.js';
import { cursor, encodeCursor, idOf, itemList, limit, timestamp, uuid } from '../../src/registry/fields.js';
import { defineOperation } from '../../src/registry/operation.js';
import type { Sql } from '../../src/db/index.js';
import { envelopeJson, eventIdSql } from '../events/event.js';
import { eventType } from '../events/event-type.js';

export const WebhookDelivery = z
  .object({
    id: uuid,
    endpointId: uuid,
    eventId: z.string(),
    eventType,
    status: z.enum(['pending', 'delivered', 'failed']).meta({
      description: '`pending`: to be sent, or to be retried at `nextAttemptAt`; `delivered`: a 2xx answer; `failed`: every retry failed, or the endpoint was disabled.',
    }),
    nextAttemptAt: timestamp.nullable(),
    createdAt: timestamp,
    payload: z.record(z.string(), z.unknown()).meta({ description: 'The body sent: the event\'s envelope `{ id, type, createdAt, workspaceId, data }`.' }),
    attempts: z.array(
      z.object({
        attempt: z.number().int(),
        url: z.string(),
        startedAt: timestamp,
        durationMs: z.number().int(),
        responseStatus: z.number().int().nullable(),
        responseExcerpt: z.string().nullable().meta({ description: 'The first 1,024 bytes of the answer\'s body.' }),
        error: z.string().nullable().meta({ description: 'Why there was no answer: refused, timed out, an address that is not public…' }),
      }),
    ),
  })
  .meta({ id: 'WebhookDelivery' });

/** Deliveries with their attempts and payloads, as JSON text made by Postgres (see loadPosts for why text). */
export const selectDeliveries = (db: Sql, where: ReturnType<Sql>, limitRows: number) => db<{ delivery: string; createdAtKey: string }[]>`
  SELECT d.created_at::text AS created_at_key, json_build_object(
    'id', d.id, 'endpointId', d.endpoint_id, 'eventId', ${eventIdSql(db)}, 'eventType', e.type, 'status', d.status,
    'nextAttemptAt', CASE WHEN d.status = 'pending' THEN api_time(d.next_attempt_at) END, 'createdAt', api_time(d.created_at),
    'payload', ${envelopeJson(db)},
    'attempts', coalesce((SELECT json_agg(json_build_object('attempt', a.attempt, 'url', a.url, 'startedAt', api_time(a.started_at),
        'durationMs', a.duration_ms, 'responseStatus', a.response_status, 'responseExcerpt', a.response_excerpt, 'error', a.error) ORDER BY a.attempt)
      FROM webhook_attempts a WHERE a.delivery_id = d.id), '[]'::json))::text AS delivery
  FROM webhook_deliveries d JOIN events e ON e.seq = d.event_seq
  WHERE ${where}
  ORDER BY d.created_at DESC, d.id DESC
  LIMIT ${limitRows}`;

export default defineOperation({
  id: 'listWebhookDeliveries',
  method: 'GET',
  path: '/webhooks/{id}/deliveries',
  summary: 'An endpoint\'s delivery log, newest first: each delivery with its payload and every attempt',
  description:
    'Each attempt says what the receiver answered (status, the start of the body) or why it could not (refused, timed out), and how ' +
    'long it took. Kept as long as its event (30 days). Internal (dashboard, command line with a session, admin).',
  input: {
    path: z.object({ id: idOf('webhook endpoint') }),
    query: z.object({ limit: limit(20), cursor: cursor(z.tuple([z.string(), uuid])) }),
  },
  output: itemList(WebhookDelivery),
  errors: ['NOT_FOUND', 'VALIDATION_ERROR'],
  async handler({ id, limit, cursor }, { db, auth, fail }) {
    const [endpoint] = await db`SELECT 1 FROM webhook_endpoints WHERE id = ${id} AND organization_id = ${auth.workspaceId}`;
    if (!endpoint) return fail('NOT_FOUND', NOT_FOUND_MESSAGE);
    const after = cursor ? db`AND (d.created_at, d.id) < (${cursor[0]}::timestamptz, ${cursor[1]}::uuid)` : db``;
    const rows = await selectDeliveries(db, db`d.endpoint_id = ${id} ${after}`, limit + 1);
    const items = rows.slice(0, limit).map((row) => JSON.parse(row.delivery) as z.input<typeof WebhookDelivery>);
    const last = rows[limit - 1];
    return { items, nextCursor: rows.length > limit && last ? encodeCursor([last.createdAtKey, items.at(-1)!.id]) : null };
  },
});
