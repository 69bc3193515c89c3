import { z } from 'zod';
import type { PendingQuery, Row } from 'postgres';
import type { Sql } from '../../src/db/index.js';
import type { Storage } from '../../src/storage/index.js';
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
    .meta({ description: 'The first attachment, as a preview (its 1:1 variant once made); null for a post without media.' }),
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
  /** The object keys of the post's media, in order. */
  mediaKeys: string[];
  /** The first media: `{ objectKey, type, width, height, square }` as JSON text (square: its 1:1 variant, when made). */
  thumbnailText: string | null;
}

/** Schedules with what the calendar shows of their channel and post; `where` and `order` are fragments. */
export function selectCalendar(db: Sql, workspaceId: string, where: PendingQuery<Row[]>, order: PendingQuery<Row[]>, limit: number) {
  return db<CalendarRow[]>`
    SELECT s.*, s.settings::text AS settings_text,
      to_char(s.scheduled_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS cursor_at,
      i.name AS integration_name, i.platform AS integration_platform, i.token_status AS integration_token_status,
      i.image AS integration_image, p.content AS post_content, p.created_at AS post_created_at,
      ARRAY(SELECT m.object_key FROM attachments a JOIN media m ON m.id = a.media_id WHERE a.post_id = s.post_id ORDER BY a."order") AS media_keys,
      (SELECT json_build_object('objectKey', m.object_key, 'type', m.type, 'width', m.width, 'height', m.height, 'square', m.variants->'1:1')::text
        FROM attachments a JOIN media m ON m.id = a.media_id WHERE a.post_id = s.post_id ORDER BY a."order" LIMIT 1) AS thumbnail_text
    FROM schedules s
    JOIN integrations i ON i.id = s.integration_id
    JOIN posts p ON p.id = s.post_id
    WHERE s.organization_id = ${workspaceId} AND ${where}
    ORDER BY ${order}
    LIMIT ${limit}`;
}

export function toCalendarSchedule(row: CalendarRow, storage: Storage): z.input<typeof CalendarSchedule> {
  const { mediaKeys, thumbnailText, ...schedule } = row;
  const first = thumbnailText ? (JSON.parse(thumbnailText) as { objectKey: string; type: string; width: number | null; height: number | null; square: { objectKey: string; width: number; height: number } | null }) : null;
  const preview = first?.square ?? first;
  return {
    ...toSchedule(schedule, mediaKeys.map((key) => storage.publicUrl(key))),
    integration: { id: row.integrationId, platform: row.integrationPlatform, name: row.integrationName, image: row.integrationImage },
    post: {
      id: row.postId,
      content: row.postContent,
      createdAt: iso(row.postCreatedAt),
      attachmentCount: mediaKeys.length,
      thumbnail: first && preview ? { url: storage.publicUrl(preview.objectKey), type: first.type, width: preview.width, height: preview.height } : null,
    },
  };
}

export const cursorOf = (row: CalendarRow) => ({ scheduledAt: row.cursorAt, id: row.id });
