/**
 * Lists at the scale of a large workspace (issue: every list fast at 100,000 posts): a workspace of `posts` posts on
 * two channels (one Bluesky, one LinkedIn: two schedules a post), with tags on a third of them, an image on a tenth,
 * every status, and schedules in the past and the future, inserted with set-based SQL; and the same made at 1,000
 * posts, so that each request is also measured against its own small-workspace time. Each request is timed alone,
 * one at a time on one kept-alive connection (single-client latency), after a warm-up.
 */
import type postgres from 'postgres';
import { bootstrap, type Workspace } from './admin.js';
import { insertUnstoredPhoto, numberedPostId } from './calendar.js';
import { PLAN } from './fixture.js';
import { compactPostCounts } from '../src/worker/compact-post-facet-counts.js';

/** The words posts are written with; every tenth post says "spring", which `search=spring` finds. */
const WORDS = ['spring', 'launch', 'harbour', 'meeting', 'roadmap', 'release', 'summer', 'team', 'update', 'garden'];
const STATUSES = ['DRAFT', 'SCHEDULED', 'SCHEDULED', 'PUBLISHED', 'PUBLISHED', 'PUBLISHED', 'PUBLISHED', 'FAILED', 'SCHEDULED', 'DRAFT'];
const TAGS = 20;

export interface ListsWorkspace extends Workspace {
  posts: number;
  channels: { bluesky: string; linkedin: string };
  tag: string;
  /** A week that holds schedules: its Monday, as a date. */
  week: string;
  insertSeconds: number;
}

export async function makeListsWorkspace(env: NodeJS.ProcessEnv, sql: postgres.Sql, posts: number): Promise<ListsWorkspace> {
  const workspace = await bootstrap(env, PLAN);
  const ws = workspace.workspaceId;
  const postId = numberedPostId(sql, ws);
  const started = performance.now();
  const made = await sql.begin(async (tx) => {
    const [bluesky] = await tx<{ id: string }[]>`INSERT INTO integrations (organization_id, platform, name) VALUES (${ws}, 'BLUESKY', 'Lists Sky') RETURNING id`;
    const [linkedin] = await tx<{ id: string }[]>`INSERT INTO integrations (organization_id, platform, name) VALUES (${ws}, 'LINKEDIN', 'Lists In') RETURNING id`;
    const tags = await tx<{ id: string }[]>`
      INSERT INTO tags (organization_id, name, slug)
      SELECT ${ws}::uuid, 'Tag ' || k, 'tag-' || k FROM generate_series(1, ${TAGS}::int) AS k RETURNING id`;
    // One completed upload and its media, attached to every tenth post (its object need not exist: lists only name it).
    const mediaId = await insertUnstoredPhoto(tx, ws);
    await tx`
      INSERT INTO posts (id, organization_id, user_id, content, created_at, updated_at)
      SELECT ${postId}, ${ws}::uuid, ${workspace.userId}::uuid,
        'Post ' || n || ' about the ' || (${WORDS}::text[])[n % 10 + 1] || ', with a link to https://example.com/' || n,
        now() - n * interval '1 minute', now() - n * interval '1 minute'
      FROM generate_series(1, ${posts}::int) AS n`;
    // Each post on both channels, each schedule with its own status (LinkedIn's shifted by three, so that the
    // combinations vary): published and failed ones in the past, scheduled ones in the next 100 days, half the
    // drafts held at a time.
    await tx`
      INSERT INTO schedules (organization_id, post_id, integration_id, user_id, status, scheduled_at, scheduled_content, created_at, updated_at)
      SELECT ${ws}::uuid, ${postId}, c.id, ${workspace.userId}::uuid, s.status,
        CASE
          WHEN s.status IN ('PUBLISHED', 'FAILED') THEN now() - n * interval '1 minute' + interval '1 hour'
          WHEN s.status = 'SCHEDULED' OR n % 2 = 0 THEN date_trunc('hour', now()) + interval '1 day' + ((n::bigint * 7919) % 14400) * interval '10 minutes'
        END,
        'Post ' || n, now() - n * interval '1 minute', now() - n * interval '1 minute'
      FROM generate_series(1, ${posts}::int) AS n
      CROSS JOIN LATERAL (VALUES (${bluesky!.id}::uuid, 0), (${linkedin!.id}::uuid, 3)) AS c (id, shift)
      CROSS JOIN LATERAL (SELECT (${STATUSES}::text[])[(n + c.shift) % 10 + 1] AS status) AS s`;
    await tx`
      INSERT INTO post_tags (post_id, tag_id, organization_id)
      SELECT ${postId}, (${tags.map((tag) => tag.id)}::uuid[])[n % ${TAGS}::int + 1], ${ws}::uuid FROM generate_series(1, ${posts}::int) AS n WHERE n % 3 = 0
      UNION ALL
      SELECT ${postId}, (${tags.map((tag) => tag.id)}::uuid[])[(n + 7) % ${TAGS}::int + 1], ${ws}::uuid FROM generate_series(1, ${posts}::int) AS n WHERE n % 21 = 0`;
    await tx`
      INSERT INTO attachments (post_id, organization_id, media_id, "order", alt_text)
      SELECT ${postId}, ${ws}::uuid, ${mediaId}::uuid, 0, 'A photo' FROM generate_series(1, ${posts}::int) AS n WHERE n % 10 = 0`;
    return { bluesky: bluesky!.id, linkedin: linkedin!.id, tag: tags[0]!.id };
  });
  // What the worker's crontab does within a minute (the counters' deltas summed), then what autovacuum does to a table
  // that took this many inserts (its insert threshold): statistics, and the visibility map that index-only scans need.
  // Measured without them, the first page's total sums 300,000 deltas and every count reads the heap as well.
  await compactPostCounts(sql);
  await sql`VACUUM (ANALYZE) integrations, posts, post_search, schedules, post_tags, attachments, tags, post_facets, post_facet_counts, post_day_counts`;
  const [week] = await sql<{ monday: string }[]>`SELECT to_char(date_trunc('week', now() + interval '8 days'), 'YYYY-MM-DD') AS monday`;
  return {
    ...workspace,
    posts,
    channels: { bluesky: made.bluesky, linkedin: made.linkedin },
    tag: made.tag,
    week: week!.monday,
    insertSeconds: (performance.now() - started) / 1000,
  };
}

export interface ListRequest {
  id: string;
  title: string;
  path: (ws: ListsWorkspace) => string;
}

const posts = (query: string) => (ws: ListsWorkspace) => `/api/v1/posts${query ? `?${query.replace('{middle}', String(Math.ceil(ws.posts / 20))).replace('{last}', String(Math.ceil(ws.posts / 10)))}` : ''}`;
const weekOf = (ws: ListsWorkspace) => `dateFrom=${ws.week}&dateTo=${addDays(ws.week, 6)}`;
const addDays = (date: string, days: number) => new Date(Date.parse(`${date}T00:00:00Z`) + days * 86_400_000).toISOString().slice(0, 10);

/** Every request the issue names: the posts list with each filter alone and all together, and the calendar's views. */
export const LIST_REQUESTS: ListRequest[] = [
  { id: 'posts-first', title: 'GET /posts (first page)', path: posts('') },
  { id: 'posts-middle', title: 'GET /posts?page=middle', path: posts('page={middle}') },
  { id: 'posts-last', title: 'GET /posts?page=last', path: posts('page={last}') },
  { id: 'posts-100', title: 'GET /posts?limit=100', path: posts('limit=100') },
  { id: 'posts-search', title: 'GET /posts?search=spring', path: posts('search=spring') },
  { id: 'posts-status', title: 'GET /posts?status=DRAFT', path: posts('status=DRAFT') },
  { id: 'posts-platform', title: 'GET /posts?platform=LINKEDIN', path: posts('platform=LINKEDIN') },
  { id: 'posts-status-platform', title: 'GET /posts?status=DRAFT&platform=LINKEDIN', path: posts('status=DRAFT&platform=LINKEDIN') },
  { id: 'posts-dates', title: 'GET /posts?dateFrom&dateTo (a week)', path: (ws) => posts(weekOf(ws))(ws) },
  { id: 'posts-tag', title: 'GET /posts?tagIds=…', path: (ws) => posts(`tagIds=${ws.tag}`)(ws) },
  {
    id: 'posts-all-filters',
    title: 'GET /posts?status&platform&search&dateFrom&dateTo&tagIds',
    path: (ws) => posts(`status=SCHEDULED&platform=BLUESKY&search=spring&${weekOf(ws)}&tagIds=${ws.tag}`)(ws),
  },
  { id: 'schedules-agenda', title: 'GET /schedules (agenda, forward)', path: () => '/api/v1/schedules' },
  { id: 'schedules-agenda-backward', title: 'GET /schedules (agenda, backward)', path: () => '/api/v1/schedules?direction=backward' },
  { id: 'schedules-week', title: 'GET /schedules?view=week', path: (ws) => `/api/v1/schedules?view=week&startDate=${ws.week}` },
  { id: 'schedules-month', title: 'GET /schedules?view=month&limit=100', path: (ws) => `/api/v1/schedules?view=month&startDate=${ws.week}&limit=100` },
  { id: 'schedules-platform', title: 'GET /schedules?platforms=LINKEDIN', path: () => '/api/v1/schedules?platforms=LINKEDIN' },
  { id: 'schedules-status', title: 'GET /schedules?statuses=FAILED', path: () => '/api/v1/schedules?statuses=FAILED' },
  { id: 'schedules-channel', title: 'GET /schedules?integrationIds=…', path: (ws) => `/api/v1/schedules?integrationIds=${ws.channels.bluesky}` },
];

export interface ListFigure {
  id: string;
  title: string;
  p50Ms: number;
  p99Ms: number;
  /** The same request's p50 in the workspace of 1,000 posts, and this p50 over it. */
  smallP50Ms: number;
  ratioToSmall: number;
}

const quantile = (sorted: number[], q: number) => sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)]!;

/** Times `samples` requests after `warmup` unmeasured ones, one at a time; answers sorted milliseconds. */
async function time(url: string, key: string, samples: number, warmup: number): Promise<number[]> {
  const durations: number[] = [];
  for (let index = 0; index < warmup + samples; index++) {
    const started = performance.now();
    const response = await fetch(url, { headers: { 'x-api-key': key } });
    await response.arrayBuffer();
    if (response.status !== 200) throw new Error(`${url} answered ${response.status}`);
    if (index >= warmup) durations.push(performance.now() - started);
  }
  return durations.sort((a, b) => a - b);
}

/** Each request against the large workspace and the small one, interleaved so that drift falls on both alike. */
export async function measureLists(base: string, large: ListsWorkspace, small: ListsWorkspace, samples: number, progress: (line: string) => void): Promise<ListFigure[]> {
  const figures: ListFigure[] = [];
  for (const request of LIST_REQUESTS) {
    progress(`lists: ${request.title}`);
    const big = await time(`${base}${request.path(large)}`, large.apiKey, samples, 5);
    const little = await time(`${base}${request.path(small)}`, small.apiKey, samples, 5);
    const p50 = quantile(big, 0.5);
    const smallP50 = quantile(little, 0.5);
    figures.push({ id: request.id, title: request.title, p50Ms: round(p50), p99Ms: round(quantile(big, 0.99)), smallP50Ms: round(smallP50), ratioToSmall: round(p50 / smallP50) });
  }
  return figures;
}

const round = (value: number) => Math.round(value * 100) / 100;

export function renderLists(figures: ListFigure[], posts: number): string {
  const target = (figure: ListFigure) => (figure.p50Ms <= 25 && figure.p99Ms <= 60 && figure.ratioToSmall <= 1.5 ? 'met' : 'missed');
  return [
    `### Lists at ${posts.toLocaleString('en')} posts (single client; target p50 ≤ 25 ms, p99 ≤ 60 ms, ≤ 1.5 × the same at 1,000 posts)`,
    '',
    '| request | p50 ms | p99 ms | p50 at 1,000 posts | ratio | target |',
    '|---|--:|--:|--:|--:|---|',
    ...figures.map((figure) => `| ${figure.title} | ${figure.p50Ms} | ${figure.p99Ms} | ${figure.smallP50Ms} | ${figure.ratioToSmall} | ${target(figure)} |`),
  ].join('\n');
}
