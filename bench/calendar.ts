/**
 * The big calendar: a workspace of its own with `schedules` schedules (a tenth as many posts, each on ten
 * channels), inserted with set-based SQL, for GET /schedules at the start and at the end of it. Its own
 * workspace, so the page measured is that workspace's calendar and no other scenario's rows are in it.
 */
import postgres from 'postgres';
import { startEmbeddedPostgres } from '../src/db/embedded.js';
import { createLogger } from '../src/process/logger.js';
import { bootstrap, type Workspace } from './admin.js';
import { PLAN } from './fixture.js';

const CHANNELS = 10;
/** GET /schedules' default page, which both calendar scenarios ask for. */
export const CALENDAR_PAGE = 20;

export interface Database {
  sql: postgres.Sql;
  /** Its connection string, for graphile-worker's own runner (bench/publishing.ts). */
  url: string;
  close(): Promise<void>;
}

/**
 * The service's database: DATABASE_URL, or the embedded cluster under its DATA_DIR, joined as the admin
 * command joins it (src/db/embedded.ts): the service stays a member, so leaving never stops the cluster.
 */
export async function openDatabase(env: NodeJS.ProcessEnv): Promise<Database> {
  const embedded = env.DATABASE_URL ? undefined : await startEmbeddedPostgres(env.DATA_DIR!, createLogger('warn'));
  const url = env.DATABASE_URL || embedded!.url;
  const sql = postgres(url, { max: 1, onnotice: () => {}, connection: { application_name: 'postwise bench' } });
  return {
    sql,
    url,
    async close() {
      await sql.end({ timeout: 5 });
      await embedded?.stop();
    },
  };
}

/** Where a page starts, in the shape GET /schedules takes and answers. */
export interface CalendarPosition {
  scheduledAt: string;
  id: string;
}

export interface Calendar extends Workspace {
  schedules: number;
  posts: number;
  /** Seconds for the INSERTs (one transaction), and for the ANALYZE after them. */
  insertSeconds: number;
  analyzeSeconds: number;
  /** The first schedule of the calendar: what the first page starts with. */
  first: CalendarPosition;
  /** A cursor with one full page and one more schedule after it, so the page at the end has `hasMore` as the first. */
  endCursor: CalendarPosition;
  /** The schedule right after endCursor: what the page at the end starts with. */
  firstAfterEndCursor: CalendarPosition;
}

/**
 * The id of the workspace's post number `n` (a column of the statement's generate_series): an MD5 of the workspace and
 * the number, with the version (4) and variant (8) digits of a random UUID, which is what the API's uuid fields
 * accept. Derived, so that schedules and tags can name their post without a join or a temporary table.
 */
export const numberedPostId = (sql: postgres.Sql, ws: string) =>
  sql`overlay(overlay(md5(${ws}::text || ':' || n) placing '4' from 13) placing '8' from 17)::uuid`;

export async function makeCalendar(env: NodeJS.ProcessEnv, sql: postgres.Sql, schedules: number): Promise<Calendar> {
  const workspace = await bootstrap(env, PLAN);
  const ws = workspace.workspaceId;
  const posts = schedules / CHANNELS;

  const postId = numberedPostId(sql, ws);

  const insertStarted = performance.now();
  await sql.begin(async (tx) => {
    await tx`
      INSERT INTO integrations (organization_id, platform, name)
      SELECT ${ws}, CASE WHEN k % 2 = 1 THEN 'BLUESKY' ELSE 'LINKEDIN' END, 'Calendar channel ' || k
      FROM generate_series(1, ${CHANNELS}::int) AS k`;
    // Post ids derived from the post's number, so the schedules can name their post without a join or a
    // temporary table; created a minute apart, newest first.
    await tx`
      INSERT INTO posts (id, organization_id, user_id, content, created_at, updated_at)
      SELECT ${postId}, ${ws}, ${workspace.userId},
        'Calendar post ' || n || ': what we learned this week, with a link to the write-up.',
        now() - n * interval '1 minute', now() - n * interval '1 minute'
      FROM generate_series(1, ${posts}::int) AS n`;
    // Each post on every channel at the same instant (ties broken by id, as the keyset orders them), ten
    // minutes after the previous post in calendar order. That order is a shuffle of the insertion order
    // (n × 7919 mod posts, a permutation since the prime 7919 does not divide 2,000 or 100,000), so the table is
    // not stored in calendar order, as it would not be in a workspace whose schedules were made over time.
    await tx`
      INSERT INTO schedules (organization_id, post_id, integration_id, user_id, status, scheduled_at, scheduled_content)
      SELECT ${ws}, ${postId}, i.id, ${workspace.userId}, 'SCHEDULED',
        date_trunc('day', now()) + interval '1 day' + ((n::bigint * 7919) % ${posts}::int) * interval '10 minutes',
        'Calendar post ' || n || ': what we learned this week, with a link to the write-up.'
      FROM generate_series(1, ${posts}::int) AS n CROSS JOIN integrations i
      WHERE i.organization_id = ${ws}`;
  });
  const insertSeconds = (performance.now() - insertStarted) / 1000;

  const analyzeStarted = performance.now();
  // The planner's statistics after a million new rows, as autovacuum would gather them a little later.
  await sql`ANALYZE integrations, posts, schedules`;
  const analyzeSeconds = (performance.now() - analyzeStarted) / 1000;

  const positions = (order: postgres.PendingQuery<postgres.Row[]>, offset: number, count: number) => sql<CalendarPosition[]>`
    SELECT id, to_char(scheduled_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS "scheduledAt"
    FROM schedules WHERE organization_id = ${ws}
    ORDER BY ${order} OFFSET ${offset} LIMIT ${count}`;
  const [first] = await positions(sql`scheduled_at, id`, 0, 1);
  // From the end, newest first: the last page's first schedule, then the cursor just before it.
  const [firstAfterEndCursor, endCursor] = await positions(sql`scheduled_at DESC, id DESC`, CALENDAR_PAGE, 2);
  const [{ count }] = await sql<[{ count: number }]>`SELECT count(*)::int AS count FROM schedules WHERE organization_id = ${ws}`;
  if (count !== posts * CHANNELS || !first || !endCursor || !firstAfterEndCursor) {
    throw new Error(`the calendar workspace holds ${count} schedules instead of ${posts * CHANNELS}`);
  }
  return { ...workspace, schedules: count, posts, insertSeconds, analyzeSeconds, first, endCursor, firstAfterEndCursor };
}

/** A completed upload and its media, a photo whose object was never stored (lists and runs only name it): its id. */
export async function insertUnstoredPhoto(tx: postgres.TransactionSql, ws: string): Promise<string> {
  const [upload] = await tx<{ id: string }[]>`
    INSERT INTO uploads (id, organization_id, scenario_id, file_name, declared_type, size, checksum, object_key, status, expires_at, completed_at)
    VALUES (gen_random_uuid(), ${ws}, 'post_attachments', 'photo.jpg', 'image/jpeg', 1000, 'x', ${`bench/${ws}/photo.jpg`}, 'completed', now(), now())
    RETURNING id`;
  const [media] = await tx<{ id: string }[]>`
    INSERT INTO media (id, organization_id, upload_id, type, mime_type, object_key, size, width, height, variants_status)
    VALUES (gen_random_uuid(), ${ws}, ${upload!.id}, 'IMAGE', 'image/jpeg', ${`bench/${ws}/photo.jpg`}, 1000, 120, 90, 'ready')
    RETURNING id`;
  return media!.id;
}
