import { z } from 'zod';
import { limit, timestamp, uuid } from '../../src/registry/fields.js';
import { defineOperation } from '../../src/registry/operation.js';
import { Event, eventIdSql, eventPosition, type EventOutput } from './event.js';
import { eventType } from './event-type.js';

/** How long events are kept (the prune-events task deletes older ones). */
export const EVENT_RETENTION_DAYS = 30;

export default defineOperation({
  id: 'listEvents',
  method: 'GET',
  path: '/events',
  visibility: 'public',
  summary: 'The workspace\'s events, oldest first: what changed since a cursor, without polling each resource',
  description: [
    'Every change that matters to a post, a schedule, a channel or an upload is an event (its kinds are `type`\'s values), written',
    'in the same transaction as the change, with the resource as the API shows it (`data`): no follow-up read is needed.',
    '',
    'Pass the last event\'s `id` you have seen as `cursor` (`nextCursor` is the page\'s last id while more follow, null at the end) to',
    'get every later event exactly once, with no gaps, even while events are being written. Events are kept',
    `${EVENT_RETENTION_DAYS} days. An agent that was away calls this with its last id until the page comes back short: the way to`,
    'learn of changes that always works (no subscription needed).',
  ].join('\n'),
  input: {
    query: z.object({
      cursor: z
        .string()
        .refine((value) => eventPosition(value) !== undefined, 'must be an event id (evt_…) this API returned')
        .optional()
        .meta({ description: 'The id of the last event seen; the page starts after it. Omit it to start at the oldest event kept.' }),
      limit: limit(),
      type: z
        .array(eventType)
        .min(1)
        .max(20)
        .optional()
        .meta({ description: 'Only events of these types; repeated keys (`type=schedule.published&type=schedule.failed`) or comma-separated values.' }),
      since: timestamp.optional().meta({
        description: 'Only events written at or after this time: where a new reader starts (then it goes on with `cursor`).',
      }),
      resourceId: uuid.optional().meta({
        description: 'Only events about this resource (a post, schedule, channel or upload id); a post\'s id also selects its schedules\' events.',
      }),
    }),
  },
  output: z.object({
    items: z.array(Event),
    nextCursor: z.string().nullable().meta({ description: 'The last item\'s id while more events follow; null at the end (resume later from the last id you saw).' }),
  }),
  errors: ['VALIDATION_ERROR'],
  async handler({ cursor, limit, type, since, resourceId }, { db, auth }) {
    const after = cursor ? eventPosition(cursor)! : undefined;
    const rows = await db<{ id: string; type: string; createdAt: string; data: string }[]>`
      SELECT ${eventIdSql(db)} AS id, e.type, api_time(e.created_at) AS created_at, e.data::text AS data
      FROM events e
      WHERE e.organization_id = ${auth.workspaceId}
        -- Only what every transaction that could still write before it has ended (see migrations/016_events.sql).
        AND e.tx < pg_snapshot_xmin(pg_current_snapshot())
        ${after ? db`AND (e.tx, e.seq) > (${after.tx}::xid8, ${after.seq}::bigint)` : db``}
        ${type ? db`AND e.type = ANY(${type}::text[])` : db``}
        ${since ? db`AND e.created_at >= ${since}::timestamptz` : db``}
        ${resourceId ? db`AND (e.resource_id = ${resourceId} OR e.post_id = ${resourceId})` : db``}
      ORDER BY e.tx, e.seq
      LIMIT ${limit + 1}`;
    const items = rows.slice(0, limit).map((row) => ({ ...row, workspaceId: auth.workspaceId, data: JSON.parse(row.data) }) as EventOutput);
    return { items, nextCursor: rows.length > limit ? items.at(-1)!.id : null };
  },
});
