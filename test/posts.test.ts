import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import postgres from 'postgres';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { operations } from '../operations/index.js';
import { nextFreeSlots } from '../operations/posts/slots.js';
import { definePlan, setSubscription, setWorkspacePlan } from '../src/admin/plans.js';
import { errorParts, inWords } from '../src/dashboard/api.js';
import { call, startTestService, type TestService, type Workspace } from './support/service.js';

let service: TestService;
let sql: postgres.Sql;

beforeAll(async () => {
  service = await startTestService();
  sql = postgres(service.databaseUrl, { max: 4, onnotice: () => {} });
});
afterAll(async () => {
  await sql?.end();
  await service?.stop();
});

const operation = (id: string) => operations.find((candidate) => candidate.id === id)!;

/** A workspace with a Bluesky and a LinkedIn channel. */
async function workspaceWithChannels(options?: Parameters<TestService['workspace']>[0]) {
  const ws = await service.workspace(options);
  const sky = await ws.admin('createIntegration', { platform: 'BLUESKY', name: 'Sky' });
  const pro = await ws.admin('createIntegration', { platform: 'LINKEDIN', name: 'Pro' });
  return { ws, sky: sky.id as string, pro: pro.id as string };
}

const create = (ws: Workspace, body: unknown) => call(`${service.api}/posts`, { method: 'POST', key: ws.apiKey, body });
const get = (ws: Workspace, path: string) => call(`${service.api}${path}`, { key: ws.apiKey });

/** The answer matches the operation's output schema: what the OpenAPI document publishes. */
function expectDeclared(id: string, body: unknown) {
  const parsed = operation(id).output.safeParse(body);
  expect(parsed.success, JSON.stringify(parsed.error?.issues)).toBe(true);
}

/** The publish jobs of the schedules (the public jobs view leaves the payload out). */
async function jobsOf(scheduleIds: string[]) {
  return sql<{ key: string; taskIdentifier: string; runAt: Date; payload: { scheduleId: string } }[]>`
    SELECT j.key, t.identifier AS "taskIdentifier", j.run_at AS "runAt", j.payload
    FROM graphile_worker._private_jobs j JOIN graphile_worker._private_tasks t ON t.id = j.task_id
    WHERE j.key = ANY(${scheduleIds.map((id) => `publish-schedule:${id}`)}::text[]) ORDER BY j.run_at`;
}

const future = (days: number) => new Date(Date.now() + days * 86_400_000).toISOString();

describe('POST /posts', () => {
  let ws: Workspace;
  let sky: string;
  let pro: string;

  beforeAll(async () => {
    ({ ws, sky, pro } = await workspaceWithChannels({ plan: 'business' }));
  });

  it('DRAFT: schedules in DRAFT, no job; a row with a date keeps it', async () => {
    const when = future(3);
    const answer = await create(ws, { rows: [{ content: 'Held', scheduledAt: when, isEvergreen: true }, { content: 'Undated' }], shared: { selectedIntegrations: [sky, pro] }, postAction: 'DRAFT' });
    expect(answer.status).toBe(201);
    expect(answer.json).toEqual({ postId: answer.json.postIds[0], postIds: [expect.any(String), expect.any(String)], message: '2 posts with 4 schedules saved as drafts', scheduleCount: 4, approvalStatus: null, canSchedule: true });
    expectDeclared('createPost', answer.json);
    const [held, undated] = await Promise.all(answer.json.postIds.map((id: string) => get(ws, `/posts/${id}`)));
    expect(held.json.schedules.map((s: any) => [s.status, s.scheduledAt, s.integration.platform])).toEqual([
      ['DRAFT', when, 'BLUESKY'],
      ['DRAFT', when, 'LINKEDIN'],
    ]);
    expect(undated.json.schedules.map((s: any) => s.scheduledAt)).toEqual([null, null]);
    // isEvergreen as each row says, false unless given.
    expect([held.json.isEvergreen, undated.json.isEvergreen]).toEqual([true, false]);
    expect(await jobsOf([...held.json.schedules, ...undated.json.schedules].map((s: any) => s.id))).toEqual([]);
  });

  it('SCHEDULED_TIME: SCHEDULED at the row\'s time, with its publish job at that time; the time is required and in the future', async () => {
    const when = future(2);
    const answer = await create(ws, { rows: [{ content: 'At a time', scheduledAt: when }], shared: { selectedIntegrations: [pro] }, postAction: 'SCHEDULED_TIME' });
    expect(answer.status).toBe(201);
    const post = (await get(ws, `/posts/${answer.json.postId}`)).json;
    expect(post.schedules).toEqual([expect.objectContaining({ status: 'SCHEDULED', scheduledAt: when, integrationId: pro })]);
    const jobs = await jobsOf([post.schedules[0].id]);
    expect(jobs).toEqual([{ key: `publish-schedule:${post.schedules[0].id}`, taskIdentifier: 'publish-schedule', runAt: new Date(when), payload: { scheduleId: post.schedules[0].id } }]);

    const missing = await create(ws, { rows: [{ content: 'x' }, { content: 'y' }], shared: { selectedIntegrations: [pro] }, postAction: 'SCHEDULED_TIME' });
    expect(missing.status).toBe(400);
    expect(missing.json).toEqual({ code: 'VALIDATION_ERROR', message: 'rows[0].scheduledAt: required when postAction is SCHEDULED_TIME' });
    const past = await create(ws, { rows: [{ content: 'x', scheduledAt: future(1) }, { content: 'y', scheduledAt: '2020-01-01T00:00:00Z' }], shared: { selectedIntegrations: [pro] }, postAction: 'SCHEDULED_TIME' });
    expect(past.status).toBe(400);
    expect(past.json.message).toBe('rows[1].scheduledAt: 2020-01-01T00:00:00Z is in the past');
  });

  it('PUBLISH_NOW: SCHEDULED and due at once', async () => {
    const before = Date.now();
    const answer = await create(ws, { rows: [{ content: 'Now' }], shared: { selectedIntegrations: [sky, pro] }, postAction: 'PUBLISH_NOW' });
    expect(answer.status).toBe(201);
    expect(answer.json.message).toBe('1 post with 2 schedules queued for publishing now');
    const post = (await get(ws, `/posts/${answer.json.postId}`)).json;
    for (const schedule of post.schedules) {
      expect(schedule.status).toBe('SCHEDULED');
      expect(Date.parse(schedule.scheduledAt)).toBeGreaterThanOrEqual(before - 1000);
      expect(Date.parse(schedule.scheduledAt)).toBeLessThanOrEqual(Date.now());
    }
    const jobs = await jobsOf(post.schedules.map((s: any) => s.id));
    expect(jobs.map((job) => job.runAt.toISOString())).toEqual(post.schedules.map((s: any) => s.scheduledAt));
  });

  it('NEXT_WINDOW (the default): each channel\'s next free weekday slot at 09:00, 12:00 or 17:00 UTC, rows one after another', async () => {
    const fresh = await workspaceWithChannels({ plan: 'business' });
    const first = await create(fresh.ws, { rows: [{ content: 'One' }, { content: 'Two' }], shared: { selectedIntegrations: [fresh.sky] } });
    expect(first.status).toBe(201);
    expect(first.json.message).toBe('2 posts with 2 schedules scheduled at the next free posting slots');
    const second = await create(fresh.ws, { rows: [{ content: 'Three' }], shared: { selectedIntegrations: [fresh.sky, fresh.pro] } });
    const times = await Promise.all(
      [...first.json.postIds, second.json.postId].map(async (id: string) => (await get(fresh.ws, `/posts/${id}`)).json.schedules.map((s: any) => s.scheduledAt)),
    );
    const expected = expectedSlots(new Date(), 3);
    // Sky takes the first three slots in order; Pro, with no schedule yet, starts at the first.
    expect(times).toEqual([[expected[0]], [expected[1]], [expected[2], expected[0]]]);
    const jobs = await jobsOf((await get(fresh.ws, `/posts/${second.json.postId}`)).json.schedules.map((s: any) => s.id));
    expect(jobs.map((job) => job.runAt.toISOString()).sort()).toEqual([expected[0], expected[2]].sort());
  });

  it('NEXT_WINDOW skips a slot a live schedule of the channel already holds, but not one a draft holds', async () => {
    const fresh = await workspaceWithChannels({ plan: 'business' });
    const [slot1, slot2, slot3] = expectedSlots(new Date(), 3);
    await create(fresh.ws, { rows: [{ content: 'Draft', scheduledAt: slot1 }], shared: { selectedIntegrations: [fresh.sky] }, postAction: 'DRAFT' });
    await create(fresh.ws, { rows: [{ content: 'Taken', scheduledAt: slot2 }], shared: { selectedIntegrations: [fresh.sky] }, postAction: 'SCHEDULED_TIME' });
    const answer = await create(fresh.ws, { rows: [{ content: 'A' }, { content: 'B' }], shared: { selectedIntegrations: [fresh.sky] } });
    const times = await Promise.all(answer.json.postIds.map(async (id: string) => (await get(fresh.ws, `/posts/${id}`)).json.schedules[0].scheduledAt));
    expect(times).toEqual([slot1, slot3]);
  });

  it('NEXT_WINDOW: concurrent creates never take the same slot', async () => {
    const fresh = await workspaceWithChannels({ plan: 'business' });
    const answers = await Promise.all(
      Array.from({ length: 12 }, (_, index) => create(fresh.ws, { rows: [{ content: `Race ${index}` }], shared: { selectedIntegrations: [fresh.sky] } })),
    );
    expect(answers.map((answer) => answer.status)).toEqual(Array(12).fill(201));
    const slots = await sql<{ scheduledAt: Date }[]>`SELECT scheduled_at AS "scheduledAt" FROM schedules WHERE integration_id = ${fresh.sky} ORDER BY 1`;
    expect(slots.map((row) => row.scheduledAt.toISOString())).toEqual(expectedSlots(new Date(), 12));
  });

  it('threads: one schedule per part and channel, pointing at the first, one job per thread; first comment and overrides per channel', async () => {
    const sky2 = (await ws.admin('createIntegration', { platform: 'BLUESKY', name: 'Sky two' })).id as string;
    const row = {
      content: 'Root',
      firstComment: 'Link in here',
      thread: [{ content: 'Part 1' }, { content: 'Part 2' }],
      overrides: [{ integrationId: sky2, content: 'Root, said the other way', settings: { langs: ['fr'], snake_key: { nested_key: [1, 'two'] } } }],
    };
    const answer = await create(ws, { rows: [row], shared: { selectedIntegrations: [sky, sky2] }, postAction: 'SCHEDULED_TIME' }).catch(() => null);
    expect(answer!.status).toBe(400); // no scheduledAt: nothing created
    const created = await create(ws, { rows: [{ ...row, scheduledAt: future(5), media: [] }], shared: { selectedIntegrations: [sky, sky2] }, postAction: 'SCHEDULED_TIME' });
    expect(created.status).toBe(201);
    expect(created.json.scheduleCount).toBe(6);
    const post = (await get(ws, `/posts/${created.json.postId}`)).json;
    expectDeclared('getPost', post);
    const rows = post.schedules.map((s: any) => [s.integration.name, s.threadOrder, s.scheduledContent, s.firstComment, s.settings]);
    const mine = (name: string) => rows.filter((r: any[]) => r[0] === name);
    expect(mine('Sky')).toEqual([
      ['Sky', 0, 'Root', 'Link in here', {}],
      ['Sky', 1, 'Part 1', null, {}],
      ['Sky', 2, 'Part 2', null, {}],
    ]);
    expect(mine('Sky two')).toEqual([
      ['Sky two', 0, 'Root, said the other way', 'Link in here', { langs: ['fr'], snake_key: { nested_key: [1, 'two'] } }],
      ['Sky two', 1, 'Part 1', null, {}],
      ['Sky two', 2, 'Part 2', null, {}],
    ]);
    const roots = post.schedules.filter((s: any) => s.threadOrder === 0);
    for (const root of roots) {
      expect(post.schedules.filter((s: any) => s.threadRootScheduleId === root.id).map((s: any) => s.threadOrder)).toEqual([1, 2]);
    }
    expect((await jobsOf(post.schedules.map((s: any) => s.id))).map((job) => job.payload.scheduleId).sort()).toEqual(roots.map((r: any) => r.id).sort());
  });

  it('LinkedIn has no threads: a row with thread parts for a LinkedIn channel is refused, drafts too, and nothing is created', async () => {
    const before = (await get(ws, '/posts?limit=100')).json.pageInfo.total;
    for (const postAction of ['DRAFT', 'PUBLISH_NOW']) {
      const answer = await create(ws, {
        rows: [{ content: 'One' }, { content: 'Two', thread: [{ content: 'Two, continued' }] }],
        shared: { selectedIntegrations: [sky, pro] },
        postAction,
      });
      expect(answer.status).toBe(400);
      expect(answer.json).toEqual({
        code: 'VALIDATION_ERROR',
        message: 'rows[1].thread: LinkedIn (Pro) has no threads: publish each part as a post of its own, or leave Pro out',
      });
    }
    expect((await get(ws, '/posts?limit=100')).json.pageInfo.total).toBe(before);
    // An empty thread is no thread; a first comment is LinkedIn's way of adding to a post.
    expect((await create(ws, { rows: [{ content: 'Fine', thread: [], firstComment: 'More' }], shared: { selectedIntegrations: [pro] }, postAction: 'DRAFT' })).status).toBe(201);
  });

  it('refuses overrides of channels not selected, channels listed twice, and malformed media ids', async () => {
    const stranger = '00000000-0000-4000-8000-000000000000';
    const cases: [unknown, string][] = [
      [{ rows: [{ content: 'x', overrides: [{ integrationId: stranger, content: 'y' }] }], shared: { selectedIntegrations: [sky] } }, `rows[0].overrides[0].integrationId: ${stranger} is not in shared.selectedIntegrations`],
      [{ rows: [{ content: 'x' }], shared: { selectedIntegrations: [sky, pro, sky] } }, `shared.selectedIntegrations[2]: lists ${sky} a second time`],
      [{ rows: [{ content: 'x', media: [{ id: 'not-a-uuid' }] }], shared: { selectedIntegrations: [sky] } }, 'body.rows.0.media.0.id'],
      [{ rows: [], shared: { selectedIntegrations: [sky] } }, 'body.rows'],
      [{ rows: [{ content: 'x', extra: 1 }], shared: { selectedIntegrations: [sky] } }, 'extra'],
    ];
    for (const [body, message] of cases) {
      const answer = await create(ws, body);
      expect(answer.status, message).toBe(400);
      expect(answer.json.code).toBe('VALIDATION_ERROR');
      expect(answer.json.message).toContain(message);
    }
  });

  it('answers 404 for channels and tags that are not the workspace\'s, the same as for ones that do not exist', async () => {
    const other = await workspaceWithChannels();
    const theirTag = await other.ws.admin('createTag', { name: 'Theirs' });
    const myTag = await ws.admin('createTag', { name: 'Mine' });
    const missing = '00000000-0000-4000-8000-000000000000';
    const foreignChannel = await create(ws, { rows: [{ content: 'x' }], shared: { selectedIntegrations: [sky, other.sky] } });
    const missingChannel = await create(ws, { rows: [{ content: 'x' }], shared: { selectedIntegrations: [sky, missing] } });
    expect(foreignChannel.status).toBe(404);
    expect(foreignChannel.json).toEqual({ code: 'NOT_FOUND', message: 'Not found: shared.selectedIntegrations[1]' });
    expect(missingChannel.json).toEqual(foreignChannel.json);
    const foreignTag = await create(ws, { rows: [{ content: 'x' }, { content: 'y', tagIds: [myTag.id, theirTag.id] }], shared: { selectedIntegrations: [sky] } });
    expect(foreignTag.status).toBe(404);
    expect(foreignTag.json).toEqual({ code: 'NOT_FOUND', message: 'Not found: rows[1].tagIds[1]' });
    const mine = await create(ws, { rows: [{ content: 'Tagged', tagIds: [myTag.id] }], shared: { selectedIntegrations: [sky] }, postAction: 'DRAFT' });
    expect((await get(ws, `/posts/${mine.json.postId}`)).json).toEqual(
      expect.objectContaining({ tagIds: [myTag.id], tags: [{ id: myTag.id, name: 'Mine', slug: 'mine' }] }),
    );
    expect((await get(other.ws, `/posts/${mine.json.postId}`)).json).toEqual({ code: 'NOT_FOUND', message: 'Not found' });
  });

  it('takes only drafts for a channel still waiting for its account to be picked', async () => {
    const fresh = await workspaceWithChannels();
    await sql`UPDATE integrations SET connect_status = 'PENDING_SELECTION' WHERE id = ${fresh.pro}`;
    const live = await create(fresh.ws, { rows: [{ content: 'x' }], shared: { selectedIntegrations: [fresh.sky, fresh.pro] } });
    expect(live.status).toBe(409);
    expect(live.json).toEqual({ code: 'INVALID_STATE', message: 'shared.selectedIntegrations[1]: "Pro" is not connected yet (connectStatus PENDING_SELECTION); it takes only drafts' });
    expect((await create(fresh.ws, { rows: [{ content: 'x' }], shared: { selectedIntegrations: [fresh.pro] }, postAction: 'DRAFT' })).status).toBe(201);
  });

  it('is all or nothing: a row that breaks a rule leaves nothing behind, quota included', async () => {
    const fresh = await workspaceWithChannels();
    const count = async () => (await sql<{ n: number }[]>`SELECT count(*)::int AS n FROM posts WHERE organization_id = ${fresh.ws.workspaceId}`)[0]!.n;
    const answer = await create(fresh.ws, { rows: [{ content: 'Fine' }, { content: 'x'.repeat(301) }], shared: { selectedIntegrations: [fresh.pro, fresh.sky] } });
    expect(answer.status).toBe(400);
    expect(answer.json).toEqual({ code: 'CONTENT_TOO_LONG', message: 'rows[1].content: Too long for Bluesky (Sky): 301 of 300 characters (graphemes)' });
    expect(await count()).toBe(0);
    expect(await sql`SELECT * FROM post_quota_usage WHERE organization_id = ${fresh.ws.workspaceId}`).toHaveLength(0);
  });
});

describe('platform rules', () => {
  let ws: Workspace;
  let sky: string;
  let pro: string;
  beforeAll(async () => {
    ({ ws, sky, pro } = await workspaceWithChannels({ plan: 'business' }));
  });

  const draft = (content: string, integration: string, extra: Record<string, unknown> = {}) =>
    create(ws, { rows: [{ content, ...extra }], shared: { selectedIntegrations: [integration] }, postAction: 'DRAFT' });

  it.each([
    ['300 thumbs up (1200 bytes)', '👍'.repeat(300)],
    ['300 letters with a combining accent', 'e\u0301'.repeat(300)],
    ['120 family emoji (ZWJ sequences of 25 bytes: 3000 bytes)', '👨‍👩‍👧‍👦'.repeat(120)],
    ['300 flags (pairs of regional indicators)', '🇫🇷'.repeat(300)],
    ['150 letters each followed by CR LF (one grapheme: 450 UTF-16 units)', 'a\r\n'.repeat(150)],
  ])('Bluesky counts graphemes, not UTF-16 units: %s fits', async (_name, content) => {
    expect((await draft(content, sky)).status).toBe(201);
  });

  it.each([
    ['301 thumbs up', '👍'.repeat(301), '301 of 300 characters (graphemes)'],
    ['301 combining sequences', 'e\u0301'.repeat(301), '301 of 300 characters (graphemes)'],
    ['301 ASCII letters', 'x'.repeat(301), '301 of 300 characters (graphemes)'],
    ['151 letters each followed by CR LF', 'a\r\n'.repeat(151), '302 of 300 characters (graphemes)'],
    ['121 family emoji: 3025 bytes', '👨‍👩‍👧‍👦'.repeat(121), '3025 of 3000 bytes (UTF-8)'],
  ])('Bluesky refuses %s', async (_name, content, message) => {
    const answer = await draft(content, sky);
    expect(answer.status).toBe(400);
    expect(answer.json).toEqual({ code: 'CONTENT_TOO_LONG', message: `rows[0].content: Too long for Bluesky (Sky): ${message}` });
  });

  it('LinkedIn allows 3000 characters, an emoji counting 2', async () => {
    expect((await draft('x'.repeat(3000), pro)).status).toBe(201);
    expect((await draft('x'.repeat(3001), pro)).json.message).toBe('rows[0].content: Too long for LinkedIn (Pro): 3001 of 3000 characters (UTF-16 code units)');
    expect((await draft('👍'.repeat(1501), pro)).json.message).toContain('3002 of 3000 characters');
    // A first comment: 1250, LinkedIn's comment box.
    expect((await draft('ok', pro, { firstComment: 'c'.repeat(1250) })).status).toBe(201);
    expect((await draft('ok', pro, { firstComment: 'c'.repeat(1251) })).json).toEqual({
      code: 'CONTENT_TOO_LONG',
      message: 'rows[0].firstComment: Too long for LinkedIn (Pro): 1251 of 1250 characters (UTF-16 code units)',
    });
  });

  it('checks thread parts, first comments and overrides against each channel', async () => {
    const long = 'y'.repeat(301);
    expect((await draft('ok', sky, { thread: [{ content: 'fine' }, { content: long }] })).json.message).toBe(
      'rows[0].thread[1].content: Too long for Bluesky (Sky): 301 of 300 characters (graphemes)',
    );
    expect((await draft('ok', sky, { firstComment: long })).json.message).toMatch(/^rows\[0\]\.firstComment: Too long for Bluesky \(Sky\)/);
    // An override replaces the content on its channel only.
    const both = await create(ws, {
      rows: [{ content: long, overrides: [{ integrationId: sky, content: 'short for Bluesky' }] }],
      shared: { selectedIntegrations: [sky, pro] },
      postAction: 'DRAFT',
    });
    expect(both.status).toBe(201);
  });

  it('names, for a program, the field, the channel, the platform, the numbers and the unit; the dashboard shows the sentence alone under its field', async () => {
    const answer = await create(ws, {
      rows: [{ content: 'ok', overrides: [{ integrationId: pro, content: 'z'.repeat(3005) }] }],
      shared: { selectedIntegrations: [sky, pro] },
      postAction: 'DRAFT',
    });
    expect(answer.status).toBe(400);
    expect(answer.json).toEqual({ code: 'CONTENT_TOO_LONG', message: 'rows[0].overrides[0].content: Too long for LinkedIn (Pro): 3005 of 3000 characters (UTF-16 code units)' });
    // What a page makes of it (src/dashboard/api.ts): the field it belongs under, and a sentence with no path, code or unit of a program.
    const [part] = errorParts({ ...answer.json, status: answer.status });
    expect(part).toMatchObject({ path: 'rows[0].overrides[0].content', field: 'rows', sentence: 'Too long for LinkedIn (Pro): 3005 of 3000 characters' });
    expect(inWords(answer.json.message)).toBe('Too long for LinkedIn (Pro): 3005 of 3000 characters');
    const thread = await create(ws, { rows: [{ content: 'ok', thread: [{ content: 'more' }] }], shared: { selectedIntegrations: [pro] }, postAction: 'DRAFT' });
    expect(inWords(thread.json.message)).toBe('LinkedIn (Pro) has no threads: publish each part as a post of its own, or leave Pro out');
  });
});

describe('Mastodon channels, checked against their instance\'s limits', () => {
  let ws: Workspace;
  /** On an instance not known yet: Mastodon's defaults (500 characters, a link counting 23). */
  let toot: string;
  /** On an instance that allows 11,000 characters and 6 images, as some do. */
  let big: string;
  beforeAll(async () => {
    ws = await service.workspace({ plan: 'business' });
    toot = (await ws.admin('createIntegration', { platform: 'MASTODON', name: 'Toot' })).id;
    big = (await ws.admin('createIntegration', { platform: 'MASTODON', name: 'Big' })).id;
    const limits = { maxCharacters: 11_000, charactersReservedPerUrl: 23, maxMediaAttachments: 6, imageTypes: ['image/jpeg', 'image/png'], imageSizeLimit: 16_777_216, imageMatrixLimit: 33_177_600, descriptionLimit: 1500, counting: 'mastodon' };
    await sql`INSERT INTO mastodon_instances (host, api_base, domain, software, version, limits, oauth, fetched_at)
      VALUES ('big.example', 'https://big.example', 'big.example', 'mastodon', '4.5.0', ${sql.json(limits)}, '{}', now())`;
    await sql`UPDATE integrations SET instance_host = 'big.example', handle = '@ann@big.example' WHERE id = ${big}`;
  });

  /** Live posts, far enough ahead that the worker never tries them (Mastodon cannot be published to yet). */
  const post = (integration: string, row: Record<string, unknown>) =>
    create(ws, { rows: [{ scheduledAt: future(30), ...row }], shared: { selectedIntegrations: [integration] }, postAction: 'SCHEDULED_TIME' });

  it('refuses past Mastodon\'s 500 characters while the instance is not known, naming the number', async () => {
    const fits = await post(toot, { content: 'x'.repeat(500) });
    expect(fits.status, fits.text).toBe(201);
    const over = await post(toot, { content: 'x'.repeat(512) });
    expect(over.status).toBe(400);
    expect(over.json).toEqual({ code: 'CONTENT_TOO_LONG', message: 'rows[0].content: Too long for Mastodon (Toot): 512 of 500 characters (as Mastodon counts them)' });
    expect(inWords(over.json.message)).toBe('Too long for Mastodon (Toot): 512 of 500 characters');
    // A link counts 23 whatever its length, a mention of another server without its domain.
    const link = `https://example.com/${'a'.repeat(200)}`;
    expect((await post(toot, { content: `${'x'.repeat(450)} ${link} @ann@hachyderm.io` })).status).toBe(201);
    // Each thread part and the first comment are statuses of their own, under the same limit.
    const thread = await post(toot, { content: 'x'.repeat(500), thread: [{ content: 'y'.repeat(500) }, { content: 'z'.repeat(500) }], firstComment: 'c'.repeat(500) });
    expect(thread.status, thread.text).toBe(201);
    expect(thread.json.scheduleCount).toBe(3);
    expect((await post(toot, { content: 'ok', thread: [{ content: 'y'.repeat(501) }] })).json.message).toBe(
      'rows[0].thread[0].content: Too long for Mastodon (Toot): 501 of 500 characters (as Mastodon counts them)',
    );
  });

  it('counts the content warning (settings.spoilerText) with the post\'s text', async () => {
    const override = (spoilerText: string) => ({ content: 'x'.repeat(490), overrides: [{ integrationId: toot, settings: { spoilerText } }] });
    expect((await post(toot, override('ten chars!'))).status).toBe(201);
    expect((await post(toot, override('eleven char'))).json).toEqual({
      code: 'CONTENT_TOO_LONG',
      message: 'rows[0].content: Too long for Mastodon (Toot): 501 of 500 characters (as Mastodon counts them)',
    });
  });

  it('takes up to the instance\'s own 11,000 characters, and refuses past them naming that number', async () => {
    const long = await post(big, { content: 'x'.repeat(11_000), thread: [{ content: 'y'.repeat(11_000) }], firstComment: 'c'.repeat(11_000) });
    expect(long.status, long.text).toBe(201);
    const over = await post(big, { content: 'x'.repeat(11_001) });
    expect(over.status).toBe(400);
    expect(over.json.message).toBe('rows[0].content: Too long for Mastodon (Big): 11001 of 11000 characters (as Mastodon counts them)');
    // One post to both: each channel by its own instance.
    const both = await create(ws, { rows: [{ content: 'x'.repeat(600) }], shared: { selectedIntegrations: [big, toot] }, postAction: 'DRAFT' });
    expect(both.json.message).toBe('rows[0].content: Too long for Mastodon (Toot): 600 of 500 characters (as Mastodon counts them)');
  });

  it('checks a change the same way: new text, and a new content warning against the text kept', async () => {
    const made = await post(toot, { content: 'x'.repeat(495) });
    const [schedule] = (await get(ws, `/posts/${made.json.postId}`)).json.schedules;
    const patch = (body: unknown) => call(`${service.api}/posts/${made.json.postId}`, { method: 'PATCH', key: ws.apiKey, body });
    expect((await patch({ content: 'x'.repeat(501) })).json).toEqual({
      code: 'CONTENT_TOO_LONG',
      message: 'body.content: Too long for Mastodon (Toot): 501 of 500 characters (as Mastodon counts them)',
    });
    expect((await patch({ schedules: [{ id: schedule.id, settings: { spoilerText: 'a warning' } }] })).json).toEqual({
      code: 'CONTENT_TOO_LONG',
      message: 'body.schedules[0].settings: Too long for Mastodon (Toot): 504 of 500 characters (as Mastodon counts them)',
    });
    expect((await patch({ schedules: [{ id: schedule.id, content: 'x'.repeat(490), settings: { spoilerText: 'a warning' } }] })).status).toBe(200);
    // The warning kept counts with a new text.
    expect((await patch({ schedules: [{ id: schedule.id, content: 'x'.repeat(495) }] })).json.message).toBe(
      'body.schedules[0].content: Too long for Mastodon (Toot): 504 of 500 characters (as Mastodon counts them)',
    );
    const warned = await post(toot, { content: 'x'.repeat(480), overrides: [{ integrationId: toot, settings: { spoilerText: 'a warning' } }] });
    const change = await call(`${service.api}/posts/${warned.json.postId}`, { method: 'PATCH', key: ws.apiKey, body: { content: 'x'.repeat(495) } });
    expect(change.json.message).toBe('body.content: Too long for Mastodon (Toot): 504 of 500 characters (as Mastodon counts them)');
  });

  it('answers each channel\'s handle and limits: the instance\'s, Mastodon\'s defaults while it is not known, null elsewhere', async () => {
    const sky = await ws.admin('createIntegration', { platform: 'BLUESKY', name: 'Sky' });
    expect(sky).toMatchObject({ handle: null, limits: null });
    const listed = (await get(ws, '/integrations')).json as { id: string; handle: string | null; limits: Record<string, unknown> | null }[];
    expect(listed.find((channel) => channel.id === big)).toMatchObject({ handle: '@ann@big.example', limits: { maxCharacters: 11_000, maxMediaAttachments: 6, imageTypes: ['image/jpeg', 'image/png'] } });
    expect(listed.find((channel) => channel.id === toot)).toMatchObject({
      handle: null,
      limits: {
        maxCharacters: 500,
        charactersReservedPerUrl: 23,
        maxMediaAttachments: 4,
        imageTypes: ['image/jpeg', 'image/png', 'image/webp', 'image/gif'],
        imageSizeLimit: 16_777_216,
        imageMatrixLimit: 33_177_600,
        descriptionLimit: 1500,
        counting: 'mastodon',
      },
    });
    expectDeclared('listIntegrations', listed);
  });
});

describe('subscription and quota', () => {
  it('without an active subscription, drafts only: anything live answers 402', async () => {
    const { ws, sky } = await workspaceWithChannels({ subscription: false });
    expect((await create(ws, { rows: [{ content: 'Draft' }], shared: { selectedIntegrations: [sky] }, postAction: 'DRAFT' })).status).toBe(201);
    for (const postAction of ['NEXT_WINDOW', 'PUBLISH_NOW', 'SCHEDULED_TIME']) {
      const answer = await create(ws, { rows: [{ content: 'Live', scheduledAt: future(1) }], shared: { selectedIntegrations: [sky] }, postAction });
      expect(answer.status).toBe(402);
      expect(answer.json).toEqual({ code: 'PAYMENT_REQUIRED', message: expect.stringContaining('drafts') });
    }
    await setSubscription(service.service.core.db, ws.workspaceId, 'active');
    expect((await create(ws, { rows: [{ content: 'Live' }], shared: { selectedIntegrations: [sky] } })).status).toBe(201);
  });

  it('spends the monthly quota per platform; LinkedIn separately; 403 names the platform, limit, plan and reset', async () => {
    const db = service.service.core.db;
    await definePlan(db, { name: 'tiny', rateLimitPerMinute: 10, storageBytes: 0, monthlyPostQuotas: { BLUESKY: 3, LINKEDIN: 1 } });
    const { ws, sky, pro } = await workspaceWithChannels();
    await setWorkspacePlan(db, ws.workspaceId, 'tiny');
    // Drafts are free; thread parts are replies, not posts.
    expect((await create(ws, { rows: [{ content: 'd' }, { content: 'd' }], shared: { selectedIntegrations: [sky, pro] }, postAction: 'DRAFT' })).status).toBe(201);
    expect((await create(ws, { rows: [{ content: 'a', thread: [{ content: 'b' }, { content: 'c' }] }], shared: { selectedIntegrations: [sky] } })).status).toBe(201);
    expect((await create(ws, { rows: [{ content: 'a' }], shared: { selectedIntegrations: [pro] } })).status).toBe(201);
    const linkedInSpent = await create(ws, { rows: [{ content: 'again' }], shared: { selectedIntegrations: [sky, pro] } });
    expect(linkedInSpent.status).toBe(403);
    const now = new Date();
    const reset = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1)).toISOString();
    expect(linkedInSpent.json).toEqual({
      code: 'POST_QUOTA_EXCEEDED',
      message: `The tiny plan allows 1 LINKEDIN post a month; 1 used this month, and this request needs 1. The quota resets at ${reset}`,
    });
    // Bluesky has its own count: 1 used, 2 left.
    expect((await create(ws, { rows: [{ content: 'x' }, { content: 'y' }], shared: { selectedIntegrations: [sky] } })).status).toBe(201);
    expect((await create(ws, { rows: [{ content: 'z' }], shared: { selectedIntegrations: [sky] } })).json.message).toContain('allows 3 BLUESKY posts');
  });

  it('holds under concurrency: with one post left, 20 parallel creates give exactly one success', async () => {
    const db = service.service.core.db;
    await definePlan(db, { name: 'one-left', rateLimitPerMinute: 100, storageBytes: 0, monthlyPostQuotas: { BLUESKY: 100, LINKEDIN: 3 } });
    const { ws, pro } = await workspaceWithChannels();
    await setWorkspacePlan(db, ws.workspaceId, 'one-left');
    expect((await create(ws, { rows: [{ content: '1' }, { content: '2' }], shared: { selectedIntegrations: [pro] }, postAction: 'PUBLISH_NOW' })).status).toBe(201);
    const answers = await Promise.all(
      Array.from({ length: 20 }, (_, index) => create(ws, { rows: [{ content: `race ${index}` }], shared: { selectedIntegrations: [pro] }, postAction: 'PUBLISH_NOW' })),
    );
    expect(answers.filter((answer) => answer.status === 201)).toHaveLength(1);
    expect(answers.filter((answer) => answer.status === 403)).toHaveLength(19);
    const [live] = await sql<{ n: number }[]>`SELECT count(*)::int AS n FROM schedules WHERE integration_id = ${pro} AND status = 'SCHEDULED'`;
    expect(live!.n).toBe(3);
  });
});

describe('NEXT_WINDOW across daylight-saving changes', () => {
  let ws: Workspace;
  let sky: string;
  beforeAll(async () => {
    ({ ws, sky } = await workspaceWithChannels({ plan: 'business' }));
  });
  beforeEach(async () => {
    await sql`DELETE FROM schedules WHERE organization_id = ${ws.workspaceId}`;
  });

  const slots = (count: number, after: string) => service.service.core.db.begin((tx) => nextFreeSlots(tx, ws.workspaceId, sky, count, { after: new Date(after) }));
  const windows = (zone: string, value: unknown) =>
    sql`UPDATE organizations SET time_zone = ${zone}, posting_windows = ${sql.json(value as postgres.JSONValue)} WHERE id = ${ws.workspaceId}`;

  it('keeps 09:00 local across the spring-forward and fall-back of Europe/Paris', async () => {
    await windows('Europe/Paris', [{ weekdays: [5, 6, 7, 1], times: ['09:00'] }]);
    // Friday 27 March 2026 to Monday 30: summer time starts on Sunday 29 at 02:00.
    expect((await slots(4, '2026-03-27T00:00:00Z')).map((slot) => slot.toISOString())).toEqual([
      '2026-03-27T08:00:00.000Z',
      '2026-03-28T08:00:00.000Z',
      '2026-03-29T07:00:00.000Z',
      '2026-03-30T07:00:00.000Z',
    ]);
    // Winter time returns on Sunday 25 October 2026.
    expect((await slots(3, '2026-10-24T00:00:00Z')).map((slot) => slot.toISOString())).toEqual([
      '2026-10-24T07:00:00.000Z',
      '2026-10-25T08:00:00.000Z',
      '2026-10-26T08:00:00.000Z',
    ]);
  });

  it('moves a slot the spring-forward skips by the gap, and takes the later of a fall-back\'s two', async () => {
    await windows('America/New_York', [{ weekdays: [7], times: ['02:30', '01:30'] }]);
    // Sunday 8 March 2026: 02:30 does not exist (02:00 -> 03:00 EDT), so it is 03:30 EDT.
    expect((await slots(2, '2026-03-08T00:00:00Z')).map((slot) => slot.toISOString())).toEqual(['2026-03-08T06:30:00.000Z', '2026-03-08T07:30:00.000Z']);
    // Sunday 1 November 2026: 01:30 happens twice; the later is 01:30 EST.
    expect((await slots(2, '2026-11-01T00:00:00Z')).map((slot) => slot.toISOString())).toEqual(['2026-11-01T06:30:00.000Z', '2026-11-01T07:30:00.000Z']);
  });

  it('answers 409 INVALID_STATE when the posting windows have no slot', async () => {
    await windows('UTC', []);
    const answer = await create(ws, { rows: [{ content: 'Nowhere to go' }], shared: { selectedIntegrations: [sky] } });
    expect(answer.status).toBe(409);
    expect(answer.json).toEqual({
      code: 'INVALID_STATE',
      message: "shared.selectedIntegrations[0]: no free posting slot in the next 366 days for 1 post; check the workspace's posting windows",
    });
    expect((await create(ws, { rows: [{ content: 'A draft still' }], shared: { selectedIntegrations: [sky] }, postAction: 'DRAFT' })).status).toBe(201);
  });

  it('through the API: slots are the workspace\'s local times, skipping taken ones', async () => {
    await windows('Asia/Tokyo', [{ weekdays: [1, 2, 3, 4, 5, 6, 7], times: ['08:00'] }]);
    const first = await create(ws, { rows: [{ content: 'a' }, { content: 'b' }], shared: { selectedIntegrations: [sky] } });
    const times = await Promise.all(first.json.postIds.map(async (id: string) => (await get(ws, `/posts/${id}`)).json.schedules[0].scheduledAt));
    for (const time of times) expect(new Date(time).getUTCHours()).toBe(23); // 08:00 in Tokyo (UTC+9)
    expect(Date.parse(times[1]) - Date.parse(times[0])).toBe(86_400_000);
  });
});

describe('over MCP', () => {
  let client: Client;
  let ws: Workspace;
  let sky: string;
  let pro: string;
  beforeAll(async () => {
    ({ ws, sky, pro } = await workspaceWithChannels({ plan: 'business' }));
    client = new Client({ name: 'test', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${service.base}/mcp`), { requestInit: { headers: { 'x-api-key': ws.apiKey } } }));
  });
  afterAll(() => client?.close());

  it('creates, gets and lists posts with the answers REST gives', async () => {
    const created = await client.callTool({ name: 'createPost', arguments: { rows: [{ content: 'Via MCP' }], shared: { selectedIntegrations: [sky] }, postAction: 'DRAFT' } });
    expect(created.isError ?? false).toBe(false);
    const { postId } = created.structuredContent as { postId: string };
    const viaMcp = await client.callTool({ name: 'getPost', arguments: { id: postId } });
    expect(viaMcp.structuredContent).toEqual((await get(ws, `/posts/${postId}`)).json);
    const list = await client.callTool({ name: 'listPosts', arguments: { status: ['DRAFT'], limit: 5 } });
    expect(list.structuredContent).toEqual((await get(ws, '/posts?status=DRAFT&limit=5')).json);
    const integrations = await client.callTool({ name: 'listIntegrations', arguments: {} });
    expect(integrations.structuredContent).toEqual({ items: (await get(ws, '/integrations')).json });
  });

  it('answers the same errors as REST', async () => {
    const tooLong = await client.callTool({ name: 'createPost', arguments: { rows: [{ content: '👍'.repeat(301) }], shared: { selectedIntegrations: [sky] } } });
    expect(tooLong.isError).toBe(true);
    expect(JSON.parse((tooLong.content as { text: string }[])[0]!.text)).toEqual({ code: 'CONTENT_TOO_LONG', message: 'rows[0].content: Too long for Bluesky (Sky): 301 of 300 characters (graphemes)' });
    const thread = await client.callTool({
      name: 'createPost',
      arguments: { rows: [{ content: 'Root', thread: [{ content: 'Part' }] }], shared: { selectedIntegrations: [sky, pro] }, postAction: 'DRAFT' },
    });
    expect(thread.isError).toBe(true);
    expect(JSON.parse((thread.content as { text: string }[])[0]!.text)).toEqual({
      code: 'VALIDATION_ERROR',
      message: 'rows[0].thread: LinkedIn (Pro) has no threads: publish each part as a post of its own, or leave Pro out',
    });
    const stringLimit = await client.callTool({ name: 'listPosts', arguments: { limit: '5' } });
    expect(JSON.parse((stringLimit.content as { text: string }[])[0]!.text).code).toBe('VALIDATION_ERROR');
  });
});

/** The first `count` default posting slots (weekdays 09:00, 12:00, 17:00 UTC) after `now`. */
function expectedSlots(now: Date, count: number): string[] {
  const found: string[] = [];
  for (let day = 0; found.length < count; day++) {
    const date = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() + day));
    if (date.getUTCDay() === 0 || date.getUTCDay() === 6) continue;
    for (const hour of [9, 12, 17]) {
      const slot = new Date(date.getTime() + hour * 3_600_000);
      if (slot > now && found.length < count) found.push(slot.toISOString());
    }
  }
  return found;
}
