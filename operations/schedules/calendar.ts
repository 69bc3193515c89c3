import { z } from 'zod';
import type { PendingQuery, Row } from 'postgres';
import type { Sql } from '../../src/db/index.js';
import type { Storage } from '../../src/storage/index.js';
import type { AppContext } from '../../src/registry/context.js';
import { timestamp, uuid } from '../../src/registry/fields.js';
import { platform } from '../integrations/integration.js';
import type { Attachment } from '../posts/attachments.js';
import { Schedule, scheduleColumns } from '../posts/post.js';
import { attachmentsFingerprint, loadAttachments } from '../posts/attachments.js';

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
  .object({ scheduledAt: timestamp.meta({ description: 'The `scheduledAt` of the schedule it is at.' }), id: uuid.meta({ description: 'That schedule\'s id.' }) })
  .meta({ id: 'CalendarCursor', description: 'The position after which (or, backward, before which) the next page starts.' });

/** The keyset position of a page's last schedule, as `nextCursor`. */
const cursorOf = (row: { id: string; cursorAt: string }) => ({ scheduledAt: row.cursorAt, id: row.id });

/** How much of the calendar's renders a process keeps: some thousands of schedules. */
const CALENDAR_KEPT_BYTES = 16_000_000;

/**
 * A page of schedules as the calendar shows them, with their channel and post; `where` and `order` are fragments over
 * `s` (schedules), and over `i` (their channels) when `byChannel`.
 *
 * The page's ids and their fingerprints first, in a statement planned for its values (which rows a filter or a cursor
 * matches decides the plan); then the schedules this process has not rendered since their rows last changed
 * (renderCalendar), by ids: plans that depend on no value, which Postgres makes once and keeps. As one statement the
 * whole was planned again on every call (the generic plan's estimate looked costlier), and the media, two subqueries a
 * schedule, cost as much as the rest of the run (docs/benchmarks.md). A schedule deleted in between is left out of the
 * page; one changed in between is shown as it is now.
 */
export async function selectCalendar(
  { db, storage, renders }: Pick<AppContext, 'db' | 'storage' | 'renders'>,
  workspaceId: string,
  { where, order, byChannel }: { where: PendingQuery<Row[]>; order: PendingQuery<Row[]>; byChannel: boolean },
  limit: number,
): Promise<{ schedules: z.input<typeof CalendarSchedule>[]; nextCursor: z.infer<typeof CalendarCursor> | null }> {
  // With each its fingerprint (src/registry/render-cache.ts): every row its render reads, the schedule, its channel, its post,
  // and the post's attachments and their media. Computed for the page's rows only, after the limit.
  const page = await db<{ id: string; postId: string; cursorAt: string; fingerprint: string }[]>`
    SELECT s.id, s.post_id, to_char(s.scheduled_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS cursor_at,
      (SELECT md5(concat_ws('|', s.xmin, i.xmin, p.xmin, ${attachmentsFingerprint(db, db`s.post_id`)}))
        FROM integrations i, posts p WHERE i.id = s.integration_id AND p.id = s.post_id) AS fingerprint
    FROM schedules s ${byChannel ? db`JOIN integrations i ON i.id = s.integration_id` : db``}
    WHERE s.organization_id = ${workspaceId} AND ${where}
    ORDER BY ${order}
    LIMIT ${limit + 1}`;
  const shown = page.slice(0, limit);
  // From the page's last id, whether or not it is still there to show.
  const nextCursor = page.length > limit ? cursorOf(shown.at(-1)!) : null;
  // The schedules unchanged since this process rendered them are served again.
  const rendered = await renders.of<z.input<typeof CalendarSchedule>>('calendar', CALENDAR_KEPT_BYTES).read(shown, (stale) => {
    const postIds = new Set(shown.filter((row) => stale.includes(row.id)).map((row) => row.postId));
    return renderCalendar(db, storage, workspaceId, stale, [...postIds]);
  });
  return { schedules: shown.flatMap(({ id }) => rendered.get(id) ?? []), nextCursor };
}

/**
 * The schedules `ids` as the calendar shows them, with their channel and post, by id: their JSON and their posts'
 * (`postIds`) attachments, sent at once.
 */
async function renderCalendar(
  db: Sql,
  storage: Storage,
  workspaceId: string,
  ids: string[],
  postIds: string[],
): Promise<Map<string, z.input<typeof CalendarSchedule>>> {
  const [loaded, attachments] = await Promise.all([
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
      WHERE s.id = ANY(${ids}::uuid[]) AND s.organization_id = ${workspaceId}`,
    loadAttachments(db, storage, workspaceId, postIds),
  ]);
  const schedules = loaded.map(({ schedule }) => JSON.parse(schedule) as z.input<typeof CalendarSchedule>);
  for (const schedule of schedules) {
    const ofPost = attachments.get(schedule.postId) ?? [];
    // The thread's first schedule publishes the post's media; thread parts carry none.
    if (schedule.threadOrder === 0) schedule.attachmentMediaUrls = ofPost.map((attachment) => attachment.media!.url);
    Object.assign(schedule.post, mediaSummary(ofPost));
  }
  return new Map(schedules.map((schedule) => [schedule.id, schedule]));
}

/**
 * What the calendar shows of a post's media: how many, and the first as a preview (its 1:1 variant once made, else that
 * medium itself).
 */
export function mediaSummary(attachments: z.input<typeof Attachment>[]): Pick<z.input<typeof CalendarPost>, 'attachmentCount' | 'thumbnail'> {
  const first = attachments[0]?.media;
  const preview = first && (first.variants['1:1'] ?? first);
  return {
    attachmentCount: attachments.length,
    thumbnail: first && preview ? { url: preview.url, type: first.type, width: preview.width, height: preview.height } : null,
  };
}
