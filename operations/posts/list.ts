import type { PendingQuery, Row } from 'postgres';
import { z } from 'zod';
import { plannedForItsValues, type Sql } from '../../src/db/index.js';
import { text, uuid } from '../../src/registry/fields.js';
import { defineOperation } from '../../src/registry/operation.js';
import { platform } from '../integrations/integration.js';
import { PLATFORMS } from '../../src/platforms/index.js';
import { readPosts, Post, SCHEDULE_STATUSES, scheduleStatus } from './post.js';
import { dateOrTime, instantOf, workspaceZone } from '../workspace/time.js';

/** Below this many posts, a workspace's search reads its own posts rather than the trigram index. */
const SEARCH_SCAN_POSTS = 10_000;

/** The workspace's posts (those with one of `facets` when given), as a subquery: a sum of its counters. */
const postsCounted = (db: Sql, workspaceId: string, facets: PendingQuery<Row[]> | null) =>
  db`(SELECT coalesce(sum(c.posts), 0) FROM post_facet_counts c
    WHERE c.organization_id = ${workspaceId} ${facets ? db`AND c.facets & ${facets} <> 0` : db``})`;

const postsIn = async (db: Sql, workspaceId: string) => Number((await db<{ n: string }[]>`SELECT ${postsCounted(db, workspaceId, null)} AS n`)[0]!.n);

/** `%`, `_` and `\` match themselves in the search text. */
const likePattern = (search: string) => `%${search.replace(/[\\%_]/g, (character) => `\\${character}`)}%`;

export default defineOperation({
  id: 'listPosts',
  method: 'GET',
  path: '/posts',
  visibility: 'public',
  summary: 'The posts of the workspace, newest first, a page at a time',
  description: [
    'Newest first (then by id). Filters combine with AND; the values of one array filter with OR. `status`, `platform`,',
    '`dateFrom`, `dateTo`, `failing` and `integrationId` select posts that have one schedule meeting all of them at once',
    '(e.g. FAILED on LINKEDIN this week). Array parameters take repeated keys (`status=DRAFT&status=FAILED`) or',
    'comma-separated values (`status=DRAFT,FAILED`). Walk the pages by increasing `page` while `pageInfo.hasNextPage` is true.',
  ].join('\n'),
  input: {
    query: z.object({
      page: z.number().int().min(1).default(1).meta({ description: 'From 1; 1 unless given.' }),
      limit: z.number().int().min(1).max(100).default(10).meta({ description: 'Posts per page, 1 to 100; 10 unless given.' }),
      status: z
        .array(scheduleStatus)
        .min(1)
        .max(5)
        .optional()
        .meta({ description: 'Only posts with a schedule in one of these statuses; repeated keys or comma-separated values. All unless given.' }),
      search: text.max(500).optional().meta({ description: 'Only posts whose content contains this text, case-insensitively (`%` and `_` match themselves).' }),
      platform: z
        .array(platform)
        .min(1)
        .max(2)
        .optional()
        .meta({ description: 'Only posts with a schedule on a channel of one of these platforms; repeated keys or comma-separated values.' }),
      dateFrom: dateOrTime.optional().meta({
        description: 'Only posts with a schedule at or after this time: an ISO 8601 date-time with its offset, or a date (`2026-11-23`) meaning the start of that day in the workspace\'s time zone.',
      }),
      dateTo: dateOrTime.optional().meta({
        description: 'Only posts with a schedule at or before this time: an ISO 8601 date-time with its offset, or a date meaning the end of that whole day in the workspace\'s time zone.',
      }),
      tagIds: z
        .array(uuid)
        .min(1)
        .max(50)
        .optional()
        .meta({ description: 'Only posts carrying any of these tags (tag ids); repeated keys or comma-separated values.' }),
      failing: z.boolean().optional().meta({
        description:
          'true: only posts with a schedule that failed: FAILED, or waiting to be tried again automatically (SCHEDULED with `nextAttemptAt`). ' +
          'The schedules an Integration\'s `failingSchedules` counts.',
      }),
      integrationId: z
        .array(uuid)
        .min(1)
        .max(50)
        .optional()
        .meta({ description: 'Only posts with a schedule on one of these channels (integration ids); repeated keys or comma-separated values.' }),
    }),
  },
  output: z.object({
    items: z.array(Post),
    pageInfo: z.object({
      page: z.number().int(),
      limit: z.number().int(),
      total: z.number().int(),
      totalPages: z.number().int(),
      hasNextPage: z.boolean(),
      hasPreviousPage: z.boolean(),
    }),
  }),
  async handler({ page, limit, status, search, platform, dateFrom, dateTo, tagIds, failing, integrationId }, { db, storage, renders, auth }) {
    const zone = workspaceZone(db, auth.workspaceId);
    // Filtered by what one schedule is (`dated` below): its time, its failure or its channel, which no facet holds.
    const dated = Boolean(dateFrom || dateTo || failing || integrationId?.length);
    // Without dates, `status` and `platform` are facts of the post as a whole: its facets (migrations/015_post_facets.sql).
    const facets = !dated && (status?.length || platform?.length)
      ? db`(SELECT bit_or(schedule_facet(st, pl)) FROM unnest(${status ?? SCHEDULE_STATUSES}::text[]) AS st, unnest(${platform ?? PLATFORMS}::text[]) AS pl)`
      : null;
    const scheduleFilters = [
      status?.length ? db`AND s.status = ANY(${status}::text[])` : null,
      platform?.length ? db`AND i.platform = ANY(${platform}::text[])` : null,
      // The predicate of schedules_failing_idx (migrations/026_next_attempt.sql): few rows, found from it.
      failing ? db`AND (s.status = 'FAILED' OR s.next_attempt_at IS NOT NULL)` : null,
      integrationId?.length ? db`AND s.integration_id = ANY(${integrationId}::uuid[])` : null,
      dateFrom ? db`AND s.scheduled_at >= ${instantOf(db, dateFrom, zone)}` : null,
      // A date includes its whole day; a date-time is included itself.
      dateTo
        ? dateTo.includes('T')
          ? db`AND s.scheduled_at <= ${instantOf(db, dateTo, zone)}`
          : db`AND s.scheduled_at < ${instantOf(db, dateTo, zone, { dayAfter: true })}`
        : null,
    ].filter((filter) => filter !== null);
    const matchingSchedules = scheduleFilters.reduce((all, filter) => db`${all} ${filter}`, db`s.organization_id = ${auth.workspaceId}`);
    // Case-insensitive as ILIKE, which lowercases both sides: each post's side is stored lowercased, in post_search
    // (migrations/023_post_search.sql). Its trigram index (post_search_trgm_idx) holds every workspace's posts, and a
    // word common in a large workspace makes a small one's search walk all its matches there; the planner cannot tell.
    // A workspace of fewer than SEARCH_SCAN_POSTS posts reads its own rows instead (the concatenation keeps the
    // trigram index off).
    const matchesSearch = !search
      ? null
      : (await postsIn(db, auth.workspaceId)) < SEARCH_SCAN_POSTS
        ? db`(ps.content_lowercase || '') LIKE lower(${likePattern(search)})`
        : db`ps.content_lowercase LIKE lower(${likePattern(search)})`;
    // The posts of the tags, and of the matching schedules (scoped to the workspace, as the post is, so that their
    // indexes serve them: without it a small workspace's filtered count scanned every workspace's schedules).
    const taggedPosts = db`SELECT pt.post_id FROM post_tags pt WHERE pt.organization_id = ${auth.workspaceId} AND pt.tag_id = ANY(${tagIds ?? []}::uuid[])`;
    // Their channels are read only for `platform`: the join cost a dated count a fifth of its time.
    const scheduledPosts = platform?.length
      ? db`SELECT s.post_id FROM schedules s JOIN integrations i ON i.id = s.integration_id WHERE ${matchingSchedules}`
      : db`SELECT s.post_id FROM schedules s WHERE ${matchingSchedules}`;
    const where = db`
      p.organization_id = ${auth.workspaceId}
      ${matchesSearch ? db`AND EXISTS (SELECT 1 FROM post_search ps WHERE ps.post_id = p.id AND ${matchesSearch})` : db``}
      ${facets ? db`AND EXISTS (SELECT 1 FROM post_facets f WHERE f.post_id = p.id AND f.facets & ${facets} <> 0)` : db``}
      ${
        tagIds?.length && dated
          ? // Their intersection found from the two indexes before any post is read: as two conditions on each post,
            // Postgres read every post of a search (10,000) or of the workspace to test each against both.
            db`AND p.id IN (${taggedPosts} INTERSECT ${scheduledPosts})`
          : tagIds?.length
            ? // A post's rows of post_tags are of its workspace: probed by post_tags_pkey alone.
              db`AND EXISTS (SELECT 1 FROM post_tags pt WHERE pt.post_id = p.id AND pt.tag_id = ANY(${tagIds}::uuid[]))`
            : dated
              ? db`AND EXISTS (${scheduledPosts} AND s.post_id = p.id)`
              : db``
      }`;
    // The total is exact, by the cheapest count the filters allow. Filtered by facets or not at all: a sum of the
    // workspace's counters, visiting no post. By a search alone: the matching rows of post_search (one a post). By
    // tags alone, or by schedules alone (dates, with status and platform or not): the distinct posts among the
    // matching rows of post_tags or schedules (the workspace's own: a row's post is of its workspace), from their
    // indexes. Otherwise the posts matching are counted.
    const sources = [search, tagIds?.length, dated || facets].filter(Boolean).length;
    const total =
      sources > 1
        ? db`(SELECT count(*) FROM posts p WHERE ${where})`
        : matchesSearch
          ? db`(SELECT count(*) FROM post_search ps WHERE ps.organization_id = ${auth.workspaceId} AND ${matchesSearch})`
          : tagIds?.length || dated
            ? db`(SELECT count(DISTINCT post_id) FROM (${tagIds?.length ? taggedPosts : scheduledPosts}) AS matching)`
            : postsCounted(db, auth.workspaceId, facets);
    const offset = db`${(page - 1) * limit}::bigint`;
    // One statement, so the total and the page are of one snapshot.
    // Unfiltered, a page past the first starts at the day holding its first post, from the workspace's counts of posts
    // a day (post_day_counts, migrations/024_post_day_counts.sql), and skips only that day's newer posts: a page in the
    // middle of a large workspace skipped half its index entries. Its plan is the same whatever the values, and
    // planning it on every run cost a good part of the page: it is prepared, and Postgres may keep it.
    // Filtered, a page past the middle is walked from the oldest end (fewer rows to skip) and turned around here; only
    // the chosen walk runs. How many rows a filter matches depends on the workspace and the values, so a filtered page
    // is planned for its own: the generic plan Postgres otherwise reuses after five runs of a prepared statement took
    // twice as long for a search, and more for dates (docs/benchmarks.md).
    const pageOfIds =
      sources === 0 && page > 1
        ? db<{ total: number; ids: string[]; fromOldest: boolean }[]>`
          WITH counted AS MATERIALIZED (SELECT ${total}::bigint AS total),
            first_day AS MATERIALIZED (
              SELECT day, newer FROM (
                SELECT day, sum(sum(posts)) OVER (ORDER BY day DESC) - sum(posts) AS newer
                FROM post_day_counts WHERE organization_id = ${auth.workspaceId} GROUP BY day) AS days
              WHERE newer <= ${offset} ORDER BY day LIMIT 1)
          SELECT total::int, false AS from_oldest,
            ARRAY(SELECT p.id FROM posts p WHERE ${where} AND p.created_at < (d.day + 1)::timestamp AT TIME ZONE 'UTC'
              ORDER BY p.created_at DESC, p.id DESC LIMIT ${limit} OFFSET ${offset} - d.newer) AS ids
          FROM counted LEFT JOIN first_day d ON true`
        : db<{ total: number; ids: string[]; fromOldest: boolean }[]>`
          WITH counted AS MATERIALIZED (SELECT ${total}::bigint AS total)
          SELECT total::int, ${offset} * 2 >= total AS from_oldest,
            CASE WHEN ${offset} * 2 < total
              THEN ARRAY(SELECT p.id FROM posts p WHERE ${where} ORDER BY p.created_at DESC, p.id DESC LIMIT ${limit} OFFSET ${offset})
              ELSE ARRAY(SELECT p.id FROM posts p WHERE ${where} ORDER BY p.created_at, p.id
                LIMIT greatest(0, least(${limit}, total - ${offset})) OFFSET greatest(0, total - ${offset} - ${limit}))
            END AS ids
          FROM counted`;
    const [counted] = await (sources > 0 ? plannedForItsValues(pageOfIds) : pageOfIds);
    const { total: found, ids, fromOldest } = counted!;
    const totalPages = Math.ceil(found / limit);
    return {
      items: await readPosts({ db, storage, renders }, auth.workspaceId, fromOldest ? ids.reverse() : ids),
      pageInfo: { page, limit, total: found, totalPages, hasNextPage: page < totalPages, hasPreviousPage: page > 1 },
    };
  },
});
