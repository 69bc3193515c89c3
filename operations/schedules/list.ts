import { z } from 'zod';
import type { PendingQuery, Row } from 'postgres';
import type { Sql } from '../../src/db/index.js';
import { uuid } from '../../src/registry/fields.js';
import { defineOperation } from '../../src/registry/operation.js';
import { platform } from '../integrations/integration.js';
import { scheduleStatus } from '../posts/post.js';
import { dateOrTime, instantOf, workspaceZone } from '../workspace/time.js';
import { CalendarCursor, CalendarSchedule, selectCalendar } from './calendar.js';

/** Optional inside: a parameter's description must be on its outermost schema for the OpenAPI document to carry it. */
const bound = (which: string) =>
  dateOrTime.optional().meta({
    description: `${which}: a date-time with its offset, or a date (\`2026-03-29\`), which means midnight in the workspace's time zone.`,
  });

const listOf = <T extends z.ZodType>(item: T, what: string) =>
  z
    .array(item)
    .min(1)
    .optional()
    .meta({ description: `Only schedules of these ${what}; repeated keys or comma-separated values.` });

export default defineOperation({
  id: 'listSchedules',
  method: 'GET',
  path: '/schedules',
  visibility: 'public',
  summary: 'The calendar: schedules in time order, a keyset page at a time',
  description:
    'Schedules that have a time (a draft without a date is not on the calendar: find it with `GET /posts?status=DRAFT`), ordered by ' +
    '`(scheduledAt, id)`. `view=agenda` (the default) lists from `startDate` (inclusive) to `endDate` (exclusive), each optional; ' +
    '`view=week` and `view=month` list the ISO week (from Monday) or the calendar month, in the workspace\'s time zone, that contains ' +
    '`startDate` (now, unless given), an `endDate` replacing the end of that window.\n\n' +
    'While `hasMore` is true, pass `nextCursor` back as `cursor` for the next page in the same `direction`: as deep-object keys ' +
    '(`cursor[scheduledAt]=...&cursor[id]=...`) or as one JSON text; over MCP, as the object itself. A page costs the same at the end ' +
    'of the calendar as at its start, and schedules added or moved during a walk never make it repeat or skip one that stayed in place.',
  input: {
    query: z.object({
      startDate: bound('Where the listing starts, inclusive; for `week` and `month`, a moment in the week or month to show'),
      endDate: bound('Where the listing ends, exclusive'),
      view: z
        .enum(['month', 'week', 'agenda'])
        .default('agenda')
        .meta({ description: '`agenda` (the default): from `startDate` to `endDate`; `week` or `month`: the ISO week or calendar month containing `startDate`, in the workspace\'s time zone.' }),
      limit: z.number().int().min(10).max(100).default(20).meta({ description: 'Schedules per page, 10 to 100; 20 unless given.' }),
      cursor: CalendarCursor.optional().meta({
        description: 'The `nextCursor` of the previous page, as deep-object keys (`cursor[scheduledAt]=…&cursor[id]=…`) or one JSON text; omit it for the first page.',
      }),
      direction: z
        .enum(['forward', 'backward'])
        .default('forward')
        .meta({ description: '`forward` (the default) walks towards later schedules; `backward` towards earlier ones, newest first.' }),
      platforms: listOf(platform, 'platforms'),
      statuses: listOf(scheduleStatus, 'statuses'),
      integrationIds: listOf(uuid, 'integrations'),
    }),
  },
  output: z.object({
    schedules: z.array(CalendarSchedule),
    nextCursor: CalendarCursor.nullable().meta({ description: 'Where the next page starts; null on the last page.' }),
    hasMore: z.boolean(),
  }),
  async handler(query, { db, storage, renders, auth }) {
    const { start, end } = windowOf(db, query, workspaceZone(db, auth.workspaceId));
    const forward = query.direction === 'forward';
    const conditions = [
      db`s.scheduled_at IS NOT NULL`,
      start && db`s.scheduled_at >= ${start}`,
      end && db`s.scheduled_at < ${end}`,
      query.cursor &&
        (forward
          ? db`(s.scheduled_at, s.id) > (${query.cursor.scheduledAt}::timestamptz, ${query.cursor.id}::uuid)`
          : db`(s.scheduled_at, s.id) < (${query.cursor.scheduledAt}::timestamptz, ${query.cursor.id}::uuid)`),
      query.platforms && db`i.platform = ANY(${query.platforms}::text[])`,
      query.statuses && db`s.status = ANY(${query.statuses}::text[])`,
      query.integrationIds && db`s.integration_id = ANY(${query.integrationIds}::uuid[])`,
    ].filter((condition) => condition !== undefined);
    const where = conditions.reduce((all, condition) => db`${all} AND ${condition}`);
    const order = forward ? db`s.scheduled_at, s.id` : db`s.scheduled_at DESC, s.id DESC`;
    const { schedules, nextCursor } = await selectCalendar({ db, storage, renders }, auth.workspaceId, { where, order, byChannel: query.platforms !== undefined }, query.limit);
    return { schedules, nextCursor, hasMore: nextCursor !== null };
  },
});

/** The bounds of the listing as SQL values: a view's window in the workspace's time zone, or the dates given. */
function windowOf(db: Sql, query: { view: 'month' | 'week' | 'agenda'; startDate?: string; endDate?: string }, timeZone: PendingQuery<Row[]>) {
  const start = query.startDate === undefined ? undefined : instantOf(db, query.startDate, timeZone);
  const end = query.endDate === undefined ? undefined : instantOf(db, query.endDate, timeZone);
  if (query.view === 'agenda') return { start, end };
  // Truncating the local wall time and adding a local week or month keeps the window right across DST changes.
  const local = db`date_trunc(${query.view}, ${start ?? db`now()`} AT TIME ZONE ${timeZone})`;
  return {
    start: db`(${local} AT TIME ZONE ${timeZone})`,
    end: end ?? db`((${local} + ${`1 ${query.view}`}::interval) AT TIME ZONE ${timeZone})`,
  };
}
