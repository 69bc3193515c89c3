import { z } from 'zod';
import type { PendingQuery, Row } from 'postgres';
import type { Sql } from '../../src/db/index.js';
import { iso, timestamp, uuid } from '../../src/registry/fields.js';
import { platform } from '../integrations/integration.js';
import { Schedule, toSchedule, type ScheduleRow } from '../posts/post.js';

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

export interface CalendarRow extends ScheduleRow {
  /** scheduled_at at full precision, for the cursor. */
  cursorAt: string;
  integrationImage: string | null;
  postContent: string;
  postCreatedAt: Date;
  attachmentCount: number;
}

/** Schedules with what the calendar shows of their channel and post; `where` and `order` are fragments. */
export function selectCalendar(db: Sql, workspaceId: string, where: PendingQuery<Row[]>, order: PendingQuery<Row[]>, limit: number) {
  return db<CalendarRow[]>`
    SELECT s.*, s.settings::text AS settings_text,
      to_char(s.scheduled_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS cursor_at,
      i.name AS integration_name, i.platform AS integration_platform, i.token_status AS integration_token_status,
      i.image AS integration_image, p.content AS post_content, p.created_at AS post_created_at,
      (SELECT count(*) FROM attachments a WHERE a.post_id = s.post_id)::int AS attachment_count
    FROM schedules s
    JOIN integrations i ON i.id = s.integration_id
    JOIN posts p ON p.id = s.post_id
    WHERE s.organization_id = ${workspaceId} AND ${where}
    ORDER BY ${order}
    LIMIT ${limit}`;
}

export function toCalendarSchedule(row: CalendarRow): z.input<typeof CalendarSchedule> {
  return {
    ...toSchedule(row),
    integration: { id: row.integrationId, platform: row.integrationPlatform, name: row.integrationName, image: row.integrationImage },
    post: { id: row.postId, content: row.postContent, createdAt: iso(row.postCreatedAt), attachmentCount: row.attachmentCount, thumbnail: null },
  };
}

export const cursorOf = (row: CalendarRow) => ({ scheduledAt: row.cursorAt, id: row.id });
