import { z } from 'zod';
import { cursor, encodeCursor, itemList, limit, timestamp, uuid } from '../../src/registry/fields.js';
import { defineOperation } from '../../src/registry/operation.js';

export const RecycleEvent = z
  .object({
    id: uuid,
    ruleId: uuid.nullable().meta({ description: 'The rule that picked the post; null once the rule is deleted.' }),
    postId: uuid.nullable().meta({ description: 'The post picked; null once it is deleted.' }),
    period: z.string().meta({ description: 'The rule\'s period the run was for (a local date, or an ISO week such as 2026-W48).' }),
    status: z.enum(['RECYCLED', 'SKIPPED']).meta({ description: '`RECYCLED`: schedules were made (on some channels, perhaps not all); `SKIPPED`: none.' }),
    scheduleIds: z.array(uuid).meta({ description: 'The schedules made, one per channel (their thread parts follow them); each names this event as `originRecycleEventId`.' }),
    skipped: z
      .array(
        z.object({
          integrationId: uuid,
          code: z.enum(['PAYMENT_REQUIRED', 'POST_QUOTA_EXCEEDED', 'STORAGE_QUOTA_EXCEEDED', 'INVALID_STATE', 'CONTENT_TOO_LONG', 'DUPLICATE_CONTENT', 'NO_FREE_SLOT']),
          reason: z.string(),
        }),
      )
      .meta({ description: 'The rule\'s channels the post was not recycled to, each with why (what to change for the next run).' }),
    linkedinVariation: z.string().nullable().meta({ description: 'The line appended to its LinkedIn text, if any.' }),
    createdAt: timestamp,
  })
  .meta({ id: 'RecycleEvent' });

export default defineOperation({
  id: 'listRecycleEvents',
  method: 'GET',
  path: '/recycle-events',
  summary: 'What recycle rules did: each post picked, the schedules made or why none were, newest first',
  description: 'Filter by `ruleId`, `postId` and `status`. Internal (dashboard, command line with a session, admin).',
  input: {
    query: z.object({
      ruleId: uuid.optional().meta({ description: 'Only this rule\'s events.' }),
      postId: uuid.optional().meta({ description: 'Only this post\'s events.' }),
      status: z.enum(['RECYCLED', 'SKIPPED']).optional().meta({ description: 'Only events with this status.' }),
      limit: limit(50),
      cursor: cursor(z.tuple([z.string(), uuid])),
    }),
  },
  output: itemList(RecycleEvent),
  errors: ['VALIDATION_ERROR'],
  async handler({ ruleId, postId, status, limit, cursor }, { db, auth }) {
    const rows = await db<(z.input<typeof RecycleEvent> & { key: string })[]>`
      SELECT e.id, e.rule_id, e.post_id, e.period, e.status, e.schedule_ids, e.skipped::text AS skipped, e.linkedin_variation,
        api_time(e.created_at) AS created_at, e.created_at::text AS key
      FROM recycle_events e
      WHERE e.organization_id = ${auth.workspaceId}
        ${ruleId ? db`AND e.rule_id = ${ruleId}` : db``} ${postId ? db`AND e.post_id = ${postId}` : db``}
        ${status ? db`AND e.status = ${status}` : db``}
        ${cursor ? db`AND (e.created_at, e.id) < (${cursor[0]}::timestamptz, ${cursor[1]}::uuid)` : db``}
      ORDER BY e.created_at DESC, e.id DESC LIMIT ${limit + 1}`;
    const page = rows.slice(0, limit);
    const last = page.at(-1);
    return {
      items: page.map(({ key: _key, skipped, ...event }) => ({ ...event, skipped: JSON.parse(skipped as unknown as string) })),
      nextCursor: rows.length > limit && last ? encodeCursor([last.key, last.id]) : null,
    };
  },
});
