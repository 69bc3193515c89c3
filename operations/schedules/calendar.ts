import { z } from 'zod';
import type { PendingQuery, Row } from 'postgres';
import type { Sql } from '../../src/db/index.js';
import { timestamp, uuid } from '../../src/registry/fields.js';
import { platform } from '../integrations/integration.js';
import { Schedule, scheduleColumns } from '../posts/post.js';

/** The post as the calendar shows it beside each schedule. */
export const CalendarPost = z.object({
  id: uuid,
  content: z.string(),
  createdAt: timestamp,
  attachmentCount: z.number().int(),
  thumbnail: z
    .object({ url: z.string(), type: z.string(), width: z.number().nullable(), height: z.number().nullable() })
    .nullable()
    .meta({ description: 'The first attachment, as a preview; null for a post without media.' }),
});

export const CalendarSchedule = Schedule.extend({
  integration: z.object({ id: uuid, platform, name: z.string(), image: z.string().nullable() }),
  post: CalendarPost,
}).meta({ id: 'CalendarSchedule' });

/** The keyset position of a schedule on the calendar. `scheduledAt` keeps Postgres' microseconds. */
export const CalendarCursor = z
  .object({ scheduledAt: timestamp, id: uuid })
  .meta({ id: 'CalendarCursor', description: 'The position after which (or, backward, before which) the next page starts.' });

export interface CalendarRow {
  id: string;
  /** scheduled_at at full precision, for the cursor. */
  cursorAt: string;
  /** The CalendarSchedule as JSON text (see loadPosts in posts/post.ts for why JSON, and why text). */
  schedule: string;
}

/** Schedules with what the calendar shows of their channel and post; `where` and `order` are fragments. */
export function selectCalendar(db: Sql, workspaceId: string, where: PendingQuery<Row[]>, order: PendingQuery<Row[]>, limit: number) {
  return db<CalendarRow[]>`
    SELECT s.id, to_char(s.scheduled_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS cursor_at, row_to_json(api)::text AS schedule
    FROM schedules s
    JOIN integrations i ON i.id = s.integration_id
    JOIN posts p ON p.id = s.post_id
    CROSS JOIN LATERAL (
      SELECT ${scheduleColumns(db)},
        json_build_object('id', i.id, 'platform', i.platform, 'name', i.name, 'image', i.image) AS "integration",
        json_build_object('id', p.id, 'content', p.content, 'createdAt', api_time(p.created_at),
          'attachmentCount', (SELECT count(*) FROM attachments a WHERE a.post_id = s.post_id), 'thumbnail', NULL) AS "post"
    ) api
    WHERE s.organization_id = ${workspaceId} AND ${where}
    ORDER BY ${order}
    LIMIT ${limit}`;
}

export const toCalendarSchedule = (row: CalendarRow) => JSON.parse(row.schedule) as z.input<typeof CalendarSchedule>;

export const cursorOf = (row: CalendarRow) => ({ scheduledAt: row.cursorAt, id: row.id });
