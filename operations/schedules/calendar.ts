import { z } from 'zod';
import type { PendingQuery, Row } from 'postgres';
import type { Sql } from '../../src/db/index.js';
import type { Storage } from '../../src/storage/index.js';
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

export interface CalendarRow {
  id: string;
  /** scheduled_at at full precision, for the cursor. */
  cursorAt: string;
  /** The CalendarSchedule as JSON text (see loadPosts in posts/post.ts for why JSON, and why text), without its media. */
  schedule: string;
  /** The object keys of the post's media, in order. */
  mediaKeys: string[];
  /** The first media: `{ objectKey, type, width, height, square }` as JSON text (square: its 1:1 variant, when made). */
  thumbnailText: string | null;
}

/** Schedules with what the calendar shows of their channel and post; `where` and `order` are fragments. */
export function selectCalendar(db: Sql, workspaceId: string, where: PendingQuery<Row[]>, order: PendingQuery<Row[]>, limit: number) {
  return db<CalendarRow[]>`
    SELECT s.id, to_char(s.scheduled_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS cursor_at, row_to_json(api)::text AS schedule,
      ARRAY(SELECT m.object_key FROM attachments a JOIN media m ON m.id = a.media_id WHERE a.post_id = s.post_id ORDER BY a."order") AS media_keys,
      (SELECT json_build_object('objectKey', m.object_key, 'type', m.type, 'width', m.width, 'height', m.height, 'square', m.variants->'1:1')::text
        FROM attachments a JOIN media m ON m.id = a.media_id WHERE a.post_id = s.post_id ORDER BY a."order" LIMIT 1) AS thumbnail_text
    FROM schedules s
    JOIN integrations i ON i.id = s.integration_id
    JOIN posts p ON p.id = s.post_id
    CROSS JOIN LATERAL (
      SELECT ${scheduleColumns(db)},
        json_build_object('id', i.id, 'platform', i.platform, 'name', i.name, 'image', i.image) AS "integration",
        json_build_object('id', p.id, 'content', p.content, 'createdAt', api_time(p.created_at),
          'attachmentCount', 0, 'thumbnail', NULL) AS "post"
    ) api
    WHERE s.organization_id = ${workspaceId} AND ${where}
    ORDER BY ${order}
    LIMIT ${limit}`;
}

/** The calendar's schedule: its JSON, with the media URLs `storage` makes (the thread's first schedule publishes them). */
export function toCalendarSchedule(row: CalendarRow, storage: Storage): z.input<typeof CalendarSchedule> {
  const schedule = JSON.parse(row.schedule) as z.input<typeof CalendarSchedule>;
  const first = row.thumbnailText
    ? (JSON.parse(row.thumbnailText) as { objectKey: string; type: string; width: number | null; height: number | null; square: { objectKey: string; width: number; height: number } | null })
    : null;
  if (schedule.threadOrder === 0) schedule.attachmentMediaUrls = row.mediaKeys.map((key) => storage.publicUrl(key));
  schedule.post.attachmentCount = row.mediaKeys.length;
  const url = (stored: { objectKey: string }) => storage.publicUrl(stored.objectKey);
  schedule.post.thumbnail = first ? thumbnailOf({ ...first, url: url(first) }, first.square ? { ...first.square, url: url(first.square) } : undefined) : null;
  return schedule;
}

/** The calendar's preview of a post: its first medium's square crop once made, else that medium itself. */
export function thumbnailOf(
  first: { url: string; type: string; width: number | null; height: number | null },
  square: { url: string; width: number; height: number } | undefined,
): z.input<typeof CalendarPost>['thumbnail'] {
  const preview = square ?? first;
  return { url: preview.url, type: first.type, width: preview.width, height: preview.height };
}

export const cursorOf = (row: CalendarRow) => ({ scheduledAt: row.cursorAt, id: row.id });
