import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { operations } from '../operations/index.js';
import { SCHEDULE_STATUSES } from '../operations/posts/post.js';
import { PLATFORMS } from '../src/platforms/index.js';
import { call, jobsLeftUnder, waitingOnLocks, startTestService, type TestService, type Workspace } from './support/service.js';

/** GET /posts: every filter, the page shape walked to its end, and the index behind search. */

let service: TestService;
let sql: postgres.Sql;
let ws: Workspace;
let sky: string;
let pro: string;
let tags: Record<string, string>;
/** Post ids by name, as created. */
const posts: Record<string, string> = {};

const listPosts = operations.find((operation) => operation.id === 'listPosts')!;
const get = (path: string, key = ws.apiKey) => call(`${service.api}${path}`, { key });
const ids = async (query: string) => {
  const answer = await get(`/posts?limit=100&${query}`);
  expect(answer.status, answer.text).toBe(200);
  expect(listPosts.output.safeParse(answer.json).success).toBe(true);
  return answer.json.items.map((post: { id: string }) => post.id).sort();
};
const named = (...names: string[]) => names.map((name) => posts[name]!).sort();
/** The crontab's job that folds the posts list's counters, queued under `jobKey` and run by a worker of its own. */
const compactInWorker = async (jobKey: string) => {
  const worker = await startTestService({ databaseUrl: service.databaseUrl, encryptionKey: service.service.core.app.config.encryptionKey }, { api: false, worker: true });
  try {
    await sql`SELECT graphile_worker.add_job('compact-post-facet-counts', '{}'::json, job_key := ${jobKey})`;
    expect(await jobsLeftUnder(sql, jobKey)).toEqual([]);
  } finally {
    await worker.stop();
  }
};

beforeAll(async () => {
  service = await startTestService();
  // Three: a test holds two in transactions of its own and reads with the third.
  sql = postgres(service.databaseUrl, { max: 3, onnotice: () => {} });
  ws = await service.workspace({ plan: 'business' });
  sky = (await ws.admin('createIntegration', { platform: 'BLUESKY', name: 'Sky' })).id;
  pro = (await ws.admin('createIntegration', { platform: 'LINKEDIN', name: 'Pro' })).id;
  tags = {
    launch: (await ws.admin('createTag', { name: 'Launch' })).id,
    research: (await ws.admin('createTag', { name: 'Research' })).id,
  };
  const create = async (name: string, body: Record<string, unknown>) => {
    const answer = await call(`${service.api}/posts`, { method: 'POST', key: ws.apiKey, body });
    expect(answer.status, answer.text).toBe(201);
    posts[name] = answer.json.postId;
  };
  await create('draftBoth', { rows: [{ content: 'Draft for BOTH channels', tagIds: [tags.launch] }], shared: { selectedIntegrations: [sky, pro] }, postAction: 'DRAFT' });
  await create('heldDraft', { rows: [{ content: 'A draft held on 2030-01-15', scheduledAt: '2030-01-15T10:00:00Z' }], shared: { selectedIntegrations: [sky] }, postAction: 'DRAFT' });
  await create('skyLater', { rows: [{ content: 'Sky in 2030: 100% sure', scheduledAt: '2030-02-01T23:30:00Z', tagIds: [tags.research] }], shared: { selectedIntegrations: [sky] }, postAction: 'SCHEDULED_TIME' });
  await create('proLater', { rows: [{ content: 'LinkedIn in 2030, under_score', scheduledAt: '2030-02-02T08:00:00Z', tagIds: [tags.launch, tags.research] }], shared: { selectedIntegrations: [pro] }, postAction: 'SCHEDULED_TIME' });
  await create('failed', { rows: [{ content: 'This one FAILED' }], shared: { selectedIntegrations: [sky, pro] }, postAction: 'PUBLISH_NOW' });
  await create('published', { rows: [{ content: 'Published already' }], shared: { selectedIntegrations: [pro] }, postAction: 'PUBLISH_NOW' });
  // The publishing engine moves these; here the rows are set as it will.
  await sql`UPDATE schedules SET status = 'FAILED' WHERE post_id = ${posts.failed!} AND integration_id = ${pro}`;
  await sql`UPDATE schedules SET status = 'PUBLISHING' WHERE post_id = ${posts.failed!} AND integration_id = ${sky}`;
  await sql`UPDATE schedules SET status = 'PUBLISHED', published_at = now() WHERE post_id = ${posts.published!}`;
});
afterAll(async () => {
  await sql?.end();
  await service?.stop();
});

describe('GET /posts filters', () => {
  it('without filters: every post of the workspace, newest first, and none of another\'s', async () => {
    const other = await service.workspace();
    await call(`${service.api}/posts`, { method: 'POST', key: other.apiKey, body: { rows: [{ content: 'Not yours' }], shared: { selectedIntegrations: [(await other.admin('createIntegration', { platform: 'BLUESKY', name: 'x' })).id] }, postAction: 'DRAFT' } });
    const answer = await get('/posts');
    expect(answer.json.items.map((post: { id: string }) => post.id)).toEqual(
      ['published', 'failed', 'proLater', 'skyLater', 'heldDraft', 'draftBoth'].map((name) => posts[name]),
    );
    expect(answer.json.pageInfo).toEqual({ page: 1, limit: 10, total: 6, totalPages: 1, hasNextPage: false, hasPreviousPage: false });
  });

  it('status: posts with a schedule in any of the statuses; repeated keys and comma-separated values alike', async () => {
    expect(await ids('status=DRAFT')).toEqual(named('draftBoth', 'heldDraft'));
    expect(await ids('status=FAILED')).toEqual(named('failed'));
    expect(await ids('status=PUBLISHING&status=PUBLISHED')).toEqual(named('failed', 'published'));
    expect(await ids('status=PUBLISHING,PUBLISHED')).toEqual(named('failed', 'published'));
    expect(await ids('status=SCHEDULED')).toEqual(named('skyLater', 'proLater'));
    const wrong = await get('/posts?status=LIVE');
    expect(wrong.status).toBe(400);
    expect(wrong.json.message).toContain('query.status');
  });

  it('platform, and platform with status on the same schedule', async () => {
    expect(await ids('platform=BLUESKY')).toEqual(named('draftBoth', 'heldDraft', 'skyLater', 'failed'));
    expect(await ids('platform=LINKEDIN,BLUESKY')).toEqual(named('draftBoth', 'heldDraft', 'skyLater', 'proLater', 'failed', 'published'));
    // "failed" has a FAILED schedule on LinkedIn only.
    expect(await ids('platform=LINKEDIN&status=FAILED')).toEqual(named('failed'));
    expect(await ids('platform=BLUESKY&status=FAILED')).toEqual([]);
  });

  it('search: content, case-insensitively, with % and _ taken literally', async () => {
    expect(await ids('search=both')).toEqual(named('draftBoth'));
    expect(await ids('search=IN%202030')).toEqual(named('skyLater', 'proLater'));
    expect(await ids(`search=${encodeURIComponent('100%')}`)).toEqual(named('skyLater'));
    expect(await ids(`search=${encodeURIComponent('%')}`)).toEqual(named('skyLater'));
    expect(await ids('search=under_score')).toEqual(named('proLater'));
    expect(await ids('search=under%score')).toEqual([]);
    expect(await ids('search=nothing%20like%20it')).toEqual([]);
  });

  it('tagIds: posts carrying any of the tags', async () => {
    expect(await ids(`tagIds=${tags.launch}`)).toEqual(named('draftBoth', 'proLater'));
    expect(await ids(`tagIds=${tags.launch},${tags.research}`)).toEqual(named('draftBoth', 'skyLater', 'proLater'));
    expect(await ids(`tagIds=${tags.research}&search=linkedin`)).toEqual(named('proLater'));
    expect(await ids('tagIds=00000000-0000-4000-8000-000000000000')).toEqual([]);
  });

  it('dateFrom and dateTo: a schedule\'s time, inclusive; a date is that whole day in the workspace\'s time zone', async () => {
    expect(await ids('dateFrom=2030-01-01T00:00:00Z')).toEqual(named('heldDraft', 'skyLater', 'proLater'));
    expect(await ids('dateFrom=2030-02-01T23:30:00Z&dateTo=2030-02-02T08:00:00Z')).toEqual(named('skyLater', 'proLater'));
    expect(await ids('dateTo=2030-02-01')).toEqual(named('heldDraft', 'skyLater', 'failed', 'published'));
    expect(await ids('dateFrom=2030-02-02&dateTo=2030-02-02')).toEqual(named('proLater'));
    expect(await ids('dateFrom=2030-01-15&dateTo=2030-01-15&status=DRAFT')).toEqual(named('heldDraft'));
    // With tags too: the posts of both, found before any post is read.
    expect(await ids(`dateFrom=2030-01-01T00:00:00Z&tagIds=${tags.research}`)).toEqual(named('skyLater', 'proLater'));
    expect(await ids(`dateFrom=2030-01-01T00:00:00Z&tagIds=${tags.launch}`)).toEqual(named('proLater'));
    const everything = await get(`/posts?status=SCHEDULED&platform=LINKEDIN&search=UNDER&dateFrom=2030-02-02&dateTo=2030-02-02&tagIds=${tags.research}`);
    expect(everything.json.items.map((post: { id: string }) => post.id)).toEqual(named('proLater'));
    expect(everything.json.pageInfo.total).toBe(1);
    // In Tokyo (UTC+9), 2030-02-01T23:30Z is already 2 February.
    await sql`UPDATE organizations SET time_zone = 'Asia/Tokyo' WHERE id = ${ws.workspaceId}`;
    expect(await ids('dateFrom=2030-02-02&dateTo=2030-02-02')).toEqual(named('skyLater', 'proLater'));
    await sql`UPDATE organizations SET time_zone = 'UTC' WHERE id = ${ws.workspaceId}`;
    expect((await get('/posts?dateFrom=yesterday')).status).toBe(400);
  });
});

describe('GET /posts pages', () => {
  it('walks every post once, page by page, to the end', async () => {
    const all = await ids('');
    const newestFirst = (await get('/posts?limit=100')).json.items.map((post: { id: string }) => post.id);
    for (const limit of [1, 4, 5, 100]) {
      const seen: string[] = [];
      let page = 1;
      let pageInfo: any;
      do {
        const answer = await get(`/posts?limit=${limit}&page=${page}`);
        expect(answer.status).toBe(200);
        pageInfo = answer.json.pageInfo;
        expect(pageInfo).toEqual({
          page,
          limit,
          total: all.length,
          totalPages: Math.ceil(all.length / limit),
          hasNextPage: page < Math.ceil(all.length / limit),
          hasPreviousPage: page > 1,
        });
        seen.push(...answer.json.items.map((post: { id: string }) => post.id));
        page++;
      } while (pageInfo.hasNextPage);
      expect(seen.length).toBe(all.length);
      // Newest first across pages too: the pages past the middle are walked from the oldest end and turned around.
      expect(seen).toEqual(newestFirst);
    }
  });

  it('starts a page past the first at the day holding its first post: the same pages, across days, deletions and folded counts', async () => {
    // Unfiltered pages skip whole days by the workspace's counts of posts a day (post_day_counts): posts over ten days,
    // some at midnight UTC, some at the same instant (ordered by id), then some deleted in one statement and one
    // through the API.
    const days = await service.workspace({ plan: 'business' });
    await sql`
      INSERT INTO posts (organization_id, user_id, content, created_at)
      SELECT ${days.workspaceId}, ${days.userId}, 'Day post ' || n,
        CASE WHEN n % 25 = 0 THEN '2026-11-10T00:00:00Z'::timestamptz + (n / 25) * interval '1 day'
          WHEN n % 7 = 0 THEN '2026-11-15T12:00:00Z'::timestamptz
          ELSE '2026-11-10T00:00:00Z'::timestamptz + n * interval '47 minutes' END
      FROM generate_series(1, 300) AS n`;
    await sql`DELETE FROM posts WHERE organization_id = ${days.workspaceId} AND content LIKE 'Day post 1_'`;
    const [oneMore] = await sql`SELECT id FROM posts WHERE organization_id = ${days.workspaceId} AND content = 'Day post 150'`;
    expect((await call(`${service.api}/posts/${oneMore!.id}`, { key: days.apiKey, method: 'DELETE' })).status).toBe(200);
    const expected = (await sql`SELECT id FROM posts WHERE organization_id = ${days.workspaceId} ORDER BY created_at DESC, id DESC`).map((row) => row.id);
    expect(expected).toHaveLength(289);
    const walk = async () => {
      const seen: string[] = [];
      for (let page = 1; page <= Math.ceil(expected.length / 7) + 1; page++) {
        const answer = await get(`/posts?limit=7&page=${page}`, days.apiKey);
        expect(answer.status).toBe(200);
        expect(answer.json.pageInfo.total).toBe(expected.length);
        seen.push(...answer.json.items.map((post: { id: string }) => post.id));
      }
      return seen;
    };
    expect(await walk()).toEqual(expected);
    // Folded by the worker's task into a row a day: the same pages.
    await compactInWorker('compact-days');
    const counts = await sql`SELECT day, posts FROM post_day_counts WHERE organization_id = ${days.workspaceId} ORDER BY day`;
    expect(counts.map((row) => row.posts).reduce((sum, posts) => sum + posts, 0)).toBe(expected.length);
    expect(new Set(counts.map((row) => String(row.day))).size).toBe(counts.length);
    expect(await walk()).toEqual(expected);
    // What the counts rely on cannot change.
    await expect(sql`UPDATE posts SET created_at = now() WHERE id = ${expected[0]}`).rejects.toMatchObject({ code: '23514' });
  });

  it('answers an empty page past the end, and refuses page and limit outside the contract\'s bounds', async () => {
    const past = await get('/posts?page=50&limit=5');
    expect(past.json).toEqual({ items: [], pageInfo: { page: 50, limit: 5, total: 6, totalPages: 2, hasNextPage: false, hasPreviousPage: true } });
    for (const [query, field] of [['page=0', 'query.page'], ['limit=0', 'query.limit'], ['limit=101', 'query.limit'], ['limit=ten', 'query.limit'], ['page=1.5', 'query.page']]) {
      const answer = await get(`/posts?${query}`);
      expect(answer.status, query).toBe(400);
      expect(answer.json.message).toContain(field);
    }
  });

  it('searches through the trigram index', async () => {
    // With a few rows a scan of the workspace's posts is cheaper, and the planner rightly takes it (it switches
    // to the trigram index on its own around a hundred thousand rows); forbidding the scans shows the index
    // serves this very condition, escapes included.
    const plan = await sql.begin(async (tx) => {
      await tx`SET LOCAL enable_seqscan = off`;
      return tx.unsafe('EXPLAIN SELECT post_id FROM post_search WHERE content_lowercase LIKE lower($1)', ['%UNDER\\_score%']);
    });
    expect(plan.map((row) => row['QUERY PLAN']).join('\n')).toContain('Bitmap Index Scan on post_search_trgm_idx');
  });
});

describe('GET /posts in a workspace of 10,000 posts', () => {
  it('searches through the trigram index with the answers a small workspace gets from its own posts', async () => {
    // Below 10,000 posts a search reads the workspace's own posts; from there, the trigram index (the tests above
    // take the first way).
    const large = await service.workspace({ plan: 'business' });
    await sql`
      INSERT INTO posts (organization_id, user_id, content, created_at)
      SELECT ${large.workspaceId}, ${large.userId},
        'Post ' || n || CASE WHEN n % 1000 = 0 THEN ' is 100% under_score' WHEN n = 4321 THEN ' in Été à Zürich' ELSE '' END,
        now() - (10000 - n) * interval '1 second'
      FROM generate_series(1, 10000) AS n`;
    const search = async (text: string) => (await get(`/posts?limit=100&search=${encodeURIComponent(text)}`, large.apiKey)).json;
    expect((await get('/posts', large.apiKey)).json.pageInfo.total).toBe(10_000);
    for (const text of ['100%', 'UNDER_SCORE', '0% u']) {
      const found = await search(text);
      expect(found.pageInfo.total, text).toBe(10);
      expect(found.items.map((post: { content: string }) => post.content), text).toEqual(
        Array.from({ length: 10 }, (_, index) => `Post ${(10 - index) * 1000} is 100% under_score`),
      );
    }
    expect((await search('under%score')).pageInfo.total).toBe(0);
    expect((await search('under_scor')).items).toHaveLength(10);
    // A post's searchable text follows its content, and leaves with it.
    const [renamed] = await sql`SELECT id FROM posts WHERE organization_id = ${large.workspaceId} AND content = 'Post 1234'`;
    const patched = await call(`${service.api}/posts/${renamed!.id}`, { key: large.apiKey, method: 'PATCH', body: { content: 'Now about Gardening' } });
    expect(patched.status, patched.text).toBe(200);
    expect((await search('GARDENING')).items.map((post: { id: string }) => post.id)).toEqual([renamed!.id]);
    expect((await search('Post 1234')).pageInfo.total).toBe(0);
    expect((await call(`${service.api}/posts/${renamed!.id}`, { key: large.apiKey, method: 'DELETE' })).status).toBe(200);
    expect((await search('gardening')).pageInfo.total).toBe(0);
    // Case-insensitive beyond ASCII, by either way.
    const small = await service.workspace();
    await sql`INSERT INTO posts (organization_id, user_id, content) VALUES (${small.workspaceId}, ${small.userId}, 'Post in Été à Zürich')`;
    for (const apiKey of [large.apiKey, small.apiKey]) {
      const found = (await get(`/posts?search=${encodeURIComponent('ÉTÉ À ZÜRICH')}`, apiKey)).json;
      expect(found.items.map((post: { content: string }) => post.content)).toEqual([expect.stringMatching(/^Post (4321 )?in Été à Zürich$/)]);
    }
  });
});

describe('GET /posts/{id}', () => {
  it('answers 404 for another workspace\'s post, a missing one, and a malformed id, as REST and the same as MCP', async () => {
    const other = await service.workspace();
    const theirs = await get(`/posts/${posts.draftBoth}`, other.apiKey);
    const missing = await get('/posts/00000000-0000-4000-8000-000000000000');
    expect(theirs.status).toBe(404);
    expect(theirs.json).toEqual({ code: 'NOT_FOUND', message: 'Not found' });
    expect(missing.text).toBe(theirs.text);
    expect((await get('/posts/not-a-uuid')).status).toBe(400);
    const overMcp = await call(`${service.base}/mcp`, {
      method: 'POST',
      key: other.apiKey,
      body: { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'getPost', arguments: { id: posts.draftBoth } } },
    });
    expect(overMcp.json.result.isError).toBe(true);
    expect(JSON.parse(overMcp.json.result.content[0].text)).toEqual(theirs.json);
  });

  it('answers every field of the contract\'s Post, with null where no rule or feature applies', async () => {
    const answer = await get(`/posts/${posts.proLater}`);
    expect(answer.json).toEqual({
      id: posts.proLater,
      content: 'LinkedIn in 2030, under_score',
      organizationId: ws.workspaceId,
      userId: ws.userId,
      originSourcePostId: null,
      isEvergreen: false,
      lastRecycledAt: null,
      tagIds: [tags.launch, tags.research],
      approvalStatus: null,
      approvalRequestedAt: null,
      approvalCompletedAt: null,
      requiredApproverIds: [],
      canSchedule: true,
      approvalReviewerId: null,
      approvalNote: null,
      createdAt: expect.any(String),
      updatedAt: expect.any(String),
      attachments: [],
      collab: null,
      tags: [
        { id: tags.launch, name: 'Launch', slug: 'launch' },
        { id: tags.research, name: 'Research', slug: 'research' },
      ],
      schedules: [
        {
          id: expect.any(String),
          postId: posts.proLater,
          organizationId: ws.workspaceId,
          userId: ws.userId,
          integrationId: pro,
          status: 'SCHEDULED',
          scheduledAt: '2030-02-02T08:00:00.000Z',
          publishedAt: null,
          originRecycleEventId: null,
          failureReason: null,
          failureDetail: null,
          platformDeletedAt: null,
          scheduledContent: 'LinkedIn in 2030, under_score',
          firstComment: null,
          settings: {},
          attachmentMediaUrls: [],
          platformPostId: null,
          releaseUrl: null,
          retryCount: 0,
          lastAttempt: null,
          nextAttemptAt: null,
          threadRootScheduleId: null,
          threadOrder: 0,
          approvalStatus: null,
          approvalRequestedAt: null,
          approvalCompletedAt: null,
          createdAt: expect.any(String),
          updatedAt: expect.any(String),
          integration: { id: pro, name: 'Pro', platform: 'LINKEDIN', tokenStatus: 'MISSING' },
        },
      ],
      user: { id: ws.userId, name: 'Owner', email: expect.stringMatching(/@example\.com$/) },
      // Beyond the contract: written with the workspace's first key (docs/api.md#reading-a-post).
      createdBy: { kind: 'key', name: 'First key', apiKeyId: expect.any(String) },
    });
  });
});

describe('exact totals from the counters', () => {
  const STATUSES = [...SCHEDULE_STATUSES];
  /** Each status and platform alone, each pair, a few sets, and no filter: [query, statuses, platforms]. */
  const FILTERS: [string, string[] | null, string[] | null][] = [
    ['', null, null],
    ...STATUSES.map((status): [string, string[], null] => [`status=${status}`, [status], null]),
    ...PLATFORMS.map((platform): [string, null, string[]] => [`platform=${platform}`, null, [platform]]),
    ...STATUSES.flatMap((status) => PLATFORMS.map((platform): [string, string[], string[]] => [`status=${status}&platform=${platform}`, [status], [platform]])),
    ['status=DRAFT,FAILED&platform=LINKEDIN', ['DRAFT', 'FAILED'], ['LINKEDIN']],
    ['status=SCHEDULED,PUBLISHING,PUBLISHED', ['SCHEDULED', 'PUBLISHING', 'PUBLISHED'], null],
  ];
  /** What a filter selects, read from the schedules themselves rather than from the counters. */
  const selected = async (statuses: string[] | null, platforms: string[] | null) =>
    (
      await sql<{ id: string }[]>`
        SELECT p.id FROM posts p WHERE p.organization_id = ${ws.workspaceId}
          AND (${statuses === null && platforms === null} OR EXISTS (
            SELECT 1 FROM schedules s JOIN integrations i ON i.id = s.integration_id
            WHERE s.post_id = p.id AND s.status = ANY(${statuses ?? STATUSES}) AND i.platform = ANY(${platforms ?? [...PLATFORMS]})))`
    )
      .map((row) => row.id)
      .sort();
  /** Every filter's total is the number of posts it selects, and its page holds exactly them. */
  const expectExactTotals = async () => {
    for (const [query, statuses, platforms] of FILTERS) {
      const answer = await get(`/posts?limit=100&${query}`);
      const expected = await selected(statuses, platforms);
      expect(answer.json.pageInfo.total, query).toBe(expected.length);
      expect(answer.json.items.map((post: { id: string }) => post.id).sort(), query).toEqual(expected);
    }
  };
  const create = async (body: Record<string, unknown>) => {
    const answer = await call(`${service.api}/posts`, { method: 'POST', key: ws.apiKey, body });
    expect(answer.status, answer.text).toBe(201);
    const postId: string = answer.json.postId;
    // Thread parts after their first (whose thread_root_schedule_id is null).
    const schedules = await sql<{ id: string; integrationId: string }[]>`
      SELECT id, integration_id AS "integrationId" FROM schedules WHERE post_id = ${postId} ORDER BY thread_root_schedule_id NULLS FIRST, integration_id`;
    return { postId, schedules };
  };

  it('give every status on every platform a bit of its own (the SQL mapping follows the code\'s lists)', async () => {
    const bits = await sql<{ bit: string | null }[]>`
      SELECT schedule_facet(st, pl)::text AS bit FROM unnest(${STATUSES}::text[]) AS st, unnest(${[...PLATFORMS]}::text[]) AS pl`;
    expect(bits.every((row) => row.bit !== null), 'a status or platform schedule_facet does not know').toBe(true);
    expect(new Set(bits.map((row) => row.bit)).size).toBe(SCHEDULE_STATUSES.length * PLATFORMS.length);
  });

  it('hold through creates, thread parts, status changes, deleted schedules and deleted posts', async () => {
    await expectExactTotals();
    const thread = await create({
      rows: [{ content: 'A thread in 2031', scheduledAt: '2031-03-01T09:00:00Z', thread: [{ content: 'Its second part' }] }],
      shared: { selectedIntegrations: [sky] },
      postAction: 'SCHEDULED_TIME',
    });
    const both = await create({ rows: [{ content: 'Drafted on both' }], shared: { selectedIntegrations: [sky, pro] }, postAction: 'DRAFT' });
    const doomed = await create({ rows: [{ content: 'Deleted soon' }], shared: { selectedIntegrations: [pro] }, postAction: 'DRAFT' });
    // Mastodon, the third platform, has the third bit under each status (migrations/029_mastodon.sql).
    const toot = (await ws.admin('createIntegration', { platform: 'MASTODON', name: 'Toot' })).id;
    const tooted = await create({ rows: [{ content: 'On Bluesky and Mastodon', scheduledAt: '2031-03-02T09:00:00Z' }], shared: { selectedIntegrations: [sky, toot] }, postAction: 'SCHEDULED_TIME' });
    await expectExactTotals();
    expect(await ids('status=SCHEDULED&platform=MASTODON')).toEqual([tooted.postId]);

    // The publishing engine's moves, as it makes them: one statement at a time, each its own transaction.
    const [root, part] = thread.schedules;
    await sql`UPDATE schedules SET status = 'PUBLISHING' WHERE id = ${root!.id}`;
    await expectExactTotals();
    await sql`UPDATE schedules SET status = 'PUBLISHED', published_at = now() WHERE id = ${root!.id}`;
    await sql`UPDATE schedules SET status = 'FAILED' WHERE id = ${part!.id}`;
    await expectExactTotals();

    const skyDraft = both.schedules.find((schedule) => schedule.integrationId === sky)!;
    expect((await call(`${service.api}/schedules/${skyDraft.id}`, { method: 'DELETE', key: ws.apiKey })).status).toBe(200);
    expect((await call(`${service.api}/posts/${doomed.postId}`, { method: 'DELETE', key: ws.apiKey })).status).toBe(200);
    await expectExactTotals();
    expect((await get('/posts?platform=BLUESKY&status=DRAFT&limit=100')).json.items.map((post: { id: string }) => post.id)).not.toContain(both.postId);
  });

  /**
   * Runs `firstChange` and `secondChange` in two transactions on one post: the first runs its commit-time recount now
   * (SET CONSTRAINTS … IMMEDIATE) and holds it open; the second's recount must then wait for it, and see the first's
   * change once it commits.
   */
  async function inTurn(firstChange: (tx: postgres.Sql) => Promise<unknown>, secondChange: (tx: postgres.Sql) => Promise<unknown>) {
    const [first, second] = [await sql.reserve(), await sql.reserve()];
    let secondRecount: Promise<unknown> = Promise.resolve();
    try {
      await first`BEGIN`;
      await firstChange(first);
      await first`SET CONSTRAINTS ALL IMMEDIATE`;
      await second`BEGIN`;
      await secondChange(second);
      secondRecount = second`SET CONSTRAINTS ALL IMMEDIATE`.execute();
      // Read outside both transactions.
      const waiting = await waitingOnLocks(sql, { query: 'SET CONSTRAINTS ALL IMMEDIATE' });
      expect(waiting, 'the second recount waits for the first').toBe(1);
      await first`COMMIT`;
      await secondRecount;
      await second`COMMIT`;
    } finally {
      // On a failure, nothing is left open for the tests after this one.
      await first`ROLLBACK`.catch(() => {});
      await secondRecount.catch(() => {});
      await second`ROLLBACK`.catch(() => {});
      first.release();
      second.release();
    }
  }

  it('hold when two transactions change schedules of one post at once', async () => {
    const post = await create({ rows: [{ content: 'Changed twice at once', scheduledAt: '2031-04-01T09:00:00Z' }], shared: { selectedIntegrations: [sky, pro] }, postAction: 'SCHEDULED_TIME' });
    const onSky = post.schedules.find((schedule) => schedule.integrationId === sky)!;
    const onPro = post.schedules.find((schedule) => schedule.integrationId === pro)!;
    await inTurn(
      (tx) => tx`UPDATE schedules SET status = 'FAILED' WHERE id = ${onSky.id}`,
      (tx) => tx`UPDATE schedules SET status = 'PUBLISHED' WHERE id = ${onPro.id}`,
    );
    await expectExactTotals();
    expect(await ids('status=SCHEDULED')).not.toContain(post.postId);
    expect(await ids('status=FAILED&platform=BLUESKY')).toContain(post.postId);
    expect(await ids('status=PUBLISHED&platform=LINKEDIN')).toContain(post.postId);
  });

  it('hold when a schedule is added to a post while another of the same pair moves on', async () => {
    // The added schedule's pair is set while the first transaction has just cleared it: it must wait, and set it again.
    const post = await create({ rows: [{ content: 'One added while one moves', scheduledAt: '2031-05-01T09:00:00Z' }], shared: { selectedIntegrations: [sky] }, postAction: 'SCHEDULED_TIME' });
    const [moving] = post.schedules;
    await inTurn(
      (tx) => tx`UPDATE schedules SET status = 'PUBLISHING' WHERE id = ${moving!.id}`,
      (tx) => tx`
        INSERT INTO schedules (organization_id, post_id, integration_id, user_id, status, scheduled_at, scheduled_content)
        SELECT organization_id, post_id, integration_id, user_id, 'SCHEDULED', scheduled_at + interval '1 day', 'Added'
        FROM schedules WHERE id = ${moving!.id}`,
    );
    await expectExactTotals();
    expect(await ids('status=SCHEDULED&platform=BLUESKY')).toContain(post.postId);
    expect(await ids('status=PUBLISHING&platform=BLUESKY')).toContain(post.postId);
  });

  it('are summed each minute into one row a set by the worker\'s task, with every total unchanged', async () => {
    const rows = async () => Number((await sql`SELECT count(*) FROM post_facet_counts WHERE organization_id = ${ws.workspaceId}`)[0]!.count);
    const sets = Number((await sql`SELECT count(DISTINCT facets) FROM post_facets WHERE post_id IN (SELECT id FROM posts WHERE organization_id = ${ws.workspaceId})`)[0]!.count);
    expect(await rows()).toBeGreaterThan(sets);
    await compactInWorker('compact-now');
    expect(await rows()).toBe(sets);
    await expectExactTotals();
  });

  it('are rewritten by the same task when a burst of changes left their table mostly dead rows', async () => {
    // An import appends two deltas a post; folded, they leave thousands of dead pages that vacuum cannot give back
    // (the folded rows come after them), and every list's total would read them all.
    const pages = async () => Number((await sql`SELECT pg_relation_size('post_facet_counts') / 8192 AS pages`)[0]!.pages);
    await sql`
      INSERT INTO post_facet_counts (organization_id, facets, posts)
      SELECT ${ws.workspaceId}, 1, CASE WHEN n % 2 = 0 THEN 1 ELSE -1 END FROM generate_series(1, 60000) AS n`;
    expect(await pages()).toBeGreaterThan(300);
    await compactInWorker('compact-burst');
    expect(await pages()).toBeLessThan(10);
    await expectExactTotals();
  });
});
