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

/** A medium of a post as the calendar shows it: its key, and its 1:1 variant once made (as JSON text). */
interface CalendarMedium {
  postId: string;
  objectKey: string;
  type: string;
  width: number | null;
  height: number | null;
  squareText: string | null;
}

/** The keyset position of a page's last schedule, as `nextCursor`. */
const cursorOf = (row: { id: string; cursorAt: string }) => ({ scheduledAt: row.cursorAt, id: row.id });

/**
 * A page of schedules as the calendar shows them, with their channel and post; `where` and `order` are fragments over
 * `s` (schedules), and over `i` (their channels) when `byChannel`.
 *
 * The page's ids first, in a statement planned for its values (which rows a filter or a cursor matches decides the
 * plan); then, sent at once, their JSON and their posts' media, by ids: plans that depend on no value, which Postgres
 * makes once and keeps. As one statement the whole was planned again on every call (the generic plan's estimate looked
 * costlier), and the media, two subqueries a schedule, cost as much as the rest of the run (docs/benchmarks.md). A
 * schedule deleted in between is left out of the page; one changed in between is shown as it is now.
 */
export async function selectCalendar(
  db: Sql,
  storage: Storage,
  workspaceId: string,
  { where, order, byChannel }: { where: PendingQuery<Row[]>; order: PendingQuery<Row[]>; byChannel: boolean },
  limit: number,
): Promise<{ schedules: z.input<typeof CalendarSchedule>[]; nextCursor: z.infer<typeof CalendarCursor> | null }> {
  const page = await db<{ id: string; postId: string; cursorAt: string }[]>`
    SELECT s.id, s.post_id, to_char(s.scheduled_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS cursor_at
    FROM schedules s ${byChannel ? db`JOIN integrations i ON i.id = s.integration_id` : db``}
    WHERE s.organization_id = ${workspaceId} AND ${where}
    ORDER BY ${order}
    LIMIT ${limit + 1}`;
  const shown = page.slice(0, limit);
  // From the page's last id, whether or not it is still there to show.
  const nextCursor = page.length > limit ? cursorOf(shown.at(-1)!) : null;
  if (shown.length === 0) return { schedules: [], nextCursor };
  const [loaded, media] = await Promise.all([
    db<{ schedule: string }[]>`
      SELECT row_to_json(api)::text AS schedule
      FROM schedules s
      JOIN integrations i ON i.id = s.integration_id
      JOIN posts p ON p.id = s.post_id
      CROSS JOIN LATERAL (
        SELECT ${scheduleColumns(db)},
          json_build_object('id', i.id, 'platform', i.platform, 'name', i.name, 'image', i.image) AS "integration",
          json_build_object('id', p.id, 'content', p.content, 'createdAt', api_time(p.created_at),
            'attachmentCount', 0, 'thumbnail', NULL) AS "post"
      ) api
      WHERE s.id = ANY(${shown.map((row) => row.id)}::uuid[]) AND s.organization_id = ${workspaceId}`,
    db<CalendarMedium[]>`
      SELECT a.post_id, m.object_key, m.type, m.width, m.height, (m.variants->'1:1')::text AS square_text
      FROM attachments a JOIN media m ON m.id = a.media_id
      WHERE a.post_id = ANY(${[...new Set(shown.map((row) => row.postId))]}::uuid[]) AND a.organization_id = ${workspaceId}
      ORDER BY a.post_id, a."order"`,
  ]);
  const mediaOf = new Map<string, CalendarMedium[]>();
  for (const medium of media) {
    const ofPost = mediaOf.get(medium.postId);
    if (ofPost) ofPost.push(medium);
    else mediaOf.set(medium.postId, [medium]);
  }
  const byId = new Map(loaded.map(({ schedule: text }) => {
    const schedule = JSON.parse(text) as z.input<typeof CalendarSchedule>;
    return [schedule.id, schedule];
  }));
  const url = (stored: { objectKey: string }) => storage.publicUrl(stored.objectKey);
  const schedules = shown.flatMap(({ id }) => {
    const schedule = byId.get(id);
    if (!schedule) return [];
    const itsMedia = mediaOf.get(schedule.postId) ?? [];
    // The thread's first schedule publishes the post's media; thread parts carry none.
    if (schedule.threadOrder === 0) schedule.attachmentMediaUrls = itsMedia.map(url);
    schedule.post.attachmentCount = itsMedia.length;
    const first = itsMedia[0];
    const square = first?.squareText ? (JSON.parse(first.squareText) as { objectKey: string; width: number; height: number }) : undefined;
    schedule.post.thumbnail = first ? thumbnailOf({ ...first, url: url(first) }, square && { ...square, url: url(square) }) : null;
    return [schedule];
  });
  return { schedules, nextCursor };
}

/** The calendar's preview of a post: its first medium's square crop once made, else that medium itself. */
export function thumbnailOf(
  first: { url: string; type: string; width: number | null; height: number | null },
  square: { url: string; width: number; height: number } | undefined,
): z.input<typeof CalendarPost>['thumbnail'] {
  const preview = square ?? first;
  return { url: preview.url, type: first.type, width: preview.width, height: preview.height };
}
