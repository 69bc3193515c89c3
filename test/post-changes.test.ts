import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signedIn } from './support/http-session.js';
import { call, startWithChannels, type ChannelsFixture, type TestService, type Workspace } from './support/service.js';

/** PATCH and DELETE /posts/{id}: what changes, what is protected, and the jobs that follow. */

let fixture: ChannelsFixture;
let service: TestService;
let ws: Workspace;
let other: Workspace;
let sql: postgres.Sql;
let bluesky: string;
let linkedin: string;

const future = (hours: number) => new Date(Date.now() + hours * 3_600_000).toISOString();

beforeAll(async () => {
  fixture = await startWithChannels();
  ({ service, ws, other, sql, bluesky, linkedin } = fixture);
});
afterAll(() => fixture?.stop());

const rest = (path: string, options: { method?: string; body?: unknown; key?: string } = {}) => call(`${service.api}${path}`, { key: ws.apiKey, ...options });
const patch = (id: string, body: unknown, key = ws.apiKey) => rest(`/posts/${id}`, { method: 'PATCH', body, key });

async function create(row: Record<string, unknown>, postAction = 'SCHEDULED_TIME', integrations = [bluesky, linkedin]) {
  const created = await rest('/posts', { method: 'POST', body: { rows: [{ scheduledAt: future(24), ...row }], shared: { selectedIntegrations: integrations }, postAction } });
  expect(created.status, created.text).toBe(201);
  return (await rest(`/posts/${created.json.postId}`)).json;
}

const jobKeys = async () => (await sql<{ key: string }[]>`SELECT key FROM graphile_worker.jobs`).map((row) => row.key);
const scheduleOn = (post: any, integrationId: string) => post.schedules.find((s: any) => s.integrationId === integrationId && s.threadOrder === 0);

describe('PATCH /posts/{id}', () => {
  it('changes the content of the post and of the schedules that publish it, not of overrides, thread parts or published ones', async () => {
    const post = await create({ content: 'Old', overrides: [{ integrationId: linkedin, content: 'Own' }] });
    const thread = await create({ content: 'Old', thread: [{ content: 'Part' }] }, 'SCHEDULED_TIME', [bluesky]);
    const [third] = (await create({ content: 'Old too' }, 'SCHEDULED_TIME', [bluesky])).schedules;
    expect(third).toBeDefined();
    const answer = await patch(post.id, { content: 'New', isEvergreen: true });
    expect(answer.status, answer.text).toBe(200);
    expect(answer.json).toEqual({ postId: post.id, message: 'Post updated', approvalStatus: null, canSchedule: true });
    const after = (await rest(`/posts/${post.id}`)).json;
    expect(after.content).toBe('New');
    expect(after.isEvergreen).toBe(true);
    expect(scheduleOn(after, bluesky).scheduledContent).toBe('New');
    expect(scheduleOn(after, linkedin).scheduledContent).toBe('Own');
    expect((await patch(thread.id, { content: 'New' })).status).toBe(200);
    const threadAfter = (await rest(`/posts/${thread.id}`)).json;
    expect(threadAfter.schedules.map((s: any) => [s.threadOrder, s.scheduledContent])).toEqual([[0, 'New'], [1, 'Part']]);

    await sql`UPDATE schedules SET status = 'PUBLISHED' WHERE id = ${scheduleOn(after, bluesky).id}`;
    const again = await patch(post.id, { content: 'Newer' });
    expect(again.json.message).toMatch(/1 schedule was not altered because it is PUBLISHING or PUBLISHED/);
    expect(scheduleOn((await rest(`/posts/${post.id}`)).json, bluesky).scheduledContent).toBe('New');
  });

  it('checks new text against every channel it reaches, and changes nothing when one refuses it', async () => {
    const post = await create({ content: 'Short' });
    const linkedinOnly = await create({ content: 'Short' }, 'SCHEDULED_TIME', [linkedin]);
    const longComment = await patch(linkedinOnly.id, { firstComment: 'c'.repeat(1251) });
    expect(longComment.json).toEqual({ code: 'CONTENT_TOO_LONG', message: 'body.firstComment: Too long for LinkedIn (In): 1251 of 1250 characters (UTF-16 code units)' });
    const tooLong = await patch(post.id, { content: '👩‍👩‍👧'.repeat(301), isEvergreen: true });
    expect(tooLong.status).toBe(400);
    expect(tooLong.json).toEqual({ code: 'CONTENT_TOO_LONG', message: 'body.content: Too long for Bluesky (Sky): 301 of 300 characters (graphemes)' });
    const after = (await rest(`/posts/${post.id}`)).json;
    expect([after.content, after.isEvergreen]).toEqual(['Short', false]);
    const comment = await patch(post.id, { firstComment: 'x'.repeat(3001) });
    expect(comment.json.code).toBe('CONTENT_TOO_LONG');
  });

  it('a schedule given its own text in the same change is checked against that text, not the post\'s new one', async () => {
    const post = await create({ content: 'Short' });
    const long = 'L'.repeat(400);
    const answer = await patch(post.id, { content: long, schedules: [{ id: scheduleOn(post, bluesky).id, content: 'Short for Bluesky' }] });
    expect(answer.status, answer.text).toBe(200);
    const after = (await rest(`/posts/${post.id}`)).json;
    expect([after.content, scheduleOn(after, bluesky).scheduledContent, scheduleOn(after, linkedin).scheduledContent]).toEqual([long, 'Short for Bluesky', long]);
  });

  it('edits schedules one by one, refuses a published one with 409, and replaces tags and the first comment', async () => {
    const tag = await ws.admin('createTag', { name: 'Patched' });
    const foreign = await other.admin('createTag', { name: 'Theirs' });
    const post = await create({ content: 'Body', firstComment: 'First!' });
    const sky = scheduleOn(post, bluesky);
    const answer = await patch(post.id, { schedules: [{ id: sky.id, content: 'Sky only', settings: { langs: ['en'] } }], tagIds: [tag.id], firstComment: null });
    expect(answer.status, answer.text).toBe(200);
    const after = (await rest(`/posts/${post.id}`)).json;
    expect(scheduleOn(after, bluesky)).toEqual(expect.objectContaining({ scheduledContent: 'Sky only', settings: { langs: ['en'] }, firstComment: null }));
    expect(after.tagIds).toEqual([tag.id]);
    expect((await patch(post.id, { tagIds: [foreign.id] })).json).toEqual({ code: 'NOT_FOUND', message: 'Not found: body.tagIds[0]' });
    await sql`UPDATE schedules SET status = 'PUBLISHING' WHERE id = ${sky.id}`;
    const refused = await patch(post.id, { schedules: [{ id: sky.id, content: 'Too late' }] });
    expect(refused.status).toBe(409);
    expect(refused.json).toEqual({ code: 'INVALID_STATE', message: expect.stringContaining('is PUBLISHING') });
  });

  it('makes drafts live with postAction, queuing their jobs, spending quota, and refusing without a subscription', async () => {
    const draft = await create({ content: 'Draft' }, 'DRAFT');
    expect(draft.schedules.map((s: any) => s.status)).toEqual(['DRAFT', 'DRAFT']);
    expect((await patch(draft.id, { postAction: 'SCHEDULED_TIME' })).json.message).toMatch(/^body\.scheduledAt: required/);
    await sql`UPDATE organizations SET subscription_status = 'none' WHERE id = ${ws.workspaceId}`;
    try {
      expect((await patch(draft.id, { postAction: 'NEXT_WINDOW' })).status).toBe(402);
    } finally {
      await sql`UPDATE organizations SET subscription_status = 'active' WHERE id = ${ws.workspaceId}`;
    }
    const at = future(48);
    const live = await patch(draft.id, { postAction: 'SCHEDULED_TIME', scheduledAt: at });
    expect(live.json.message).toBe('Post updated; 2 draft schedules made live');
    const after = (await rest(`/posts/${draft.id}`)).json;
    expect(after.schedules.map((s: any) => [s.status, s.scheduledAt])).toEqual([
      ['SCHEDULED', at],
      ['SCHEDULED', at],
    ]);
    const keys = await jobKeys();
    for (const s of after.schedules) expect(keys).toContain(`publish-schedule:${s.id}`);
  });

  it('LinkedIn has no threads: a thread part written before that rule is neither changed nor made live, over REST and MCP', async () => {
    // As a thread part on LinkedIn written before createPost refused them (a draft): inserted as such.
    const post = await create({ content: 'Root' }, 'DRAFT', [linkedin]);
    const root = scheduleOn(post, linkedin);
    const [part] = await sql<{ id: string }[]>`
      INSERT INTO schedules (organization_id, post_id, integration_id, status, scheduled_content, thread_root_schedule_id, thread_order)
      SELECT organization_id, post_id, integration_id, 'DRAFT', 'Old part', id, 1 FROM schedules WHERE id = ${root.id} RETURNING id`;
    const edit = await patch(post.id, { content: 'New root', schedules: [{ id: part!.id, content: 'New part' }] });
    expect(edit.status).toBe(400);
    expect(edit.json).toEqual({
      code: 'VALIDATION_ERROR',
      message: 'body.schedules[0]: LinkedIn (In) has no threads, so thread part 2 cannot be published: publish each part as a post of its own, or leave In out',
    });
    const live = await call(`${service.base}/mcp`, {
      method: 'POST',
      key: ws.apiKey,
      body: { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'updatePost', arguments: { id: post.id, postAction: 'PUBLISH_NOW' } } },
    });
    expect(live.json.result.isError).toBe(true);
    expect(JSON.parse(live.json.result.content[0].text)).toEqual({
      code: 'VALIDATION_ERROR',
      message: 'body.postAction: LinkedIn (In) has no threads, so thread part 2 cannot be published: publish each part as a post of its own, or leave In out',
    });
    const after = (await rest(`/posts/${post.id}`)).json;
    expect(after.schedules.map((s: any) => [s.status, s.scheduledContent])).toEqual([['DRAFT', 'Root'], ['DRAFT', 'Old part']]);
    // Once the part is deleted, the post goes live.
    expect((await rest(`/schedules/${part!.id}`, { method: 'DELETE' })).status).toBe(200);
    expect((await patch(post.id, { postAction: 'PUBLISH_NOW' })).json.message).toBe('Post updated; 1 draft schedule made live');
  });

  it('answers 404 to another workspace and for a schedule of another post, over REST and MCP', async () => {
    const post = await create({ content: 'Mine' });
    const elsewhere = await create({ content: 'Other post' });
    expect((await patch(post.id, { content: 'Theirs' }, other.apiKey)).json).toEqual({ code: 'NOT_FOUND', message: 'Not found' });
    expect((await patch(post.id, { schedules: [{ id: elsewhere.schedules[0].id, content: 'x' }] })).status).toBe(404);
    const mcp = await call(`${service.base}/mcp`, {
      method: 'POST',
      key: ws.apiKey,
      body: { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'updatePost', arguments: { id: post.id, content: 'Via MCP' } } },
    });
    expect(mcp.json.result.structuredContent).toEqual({ postId: post.id, message: 'Post updated', approvalStatus: null, canSchedule: true });
    expect((await rest(`/posts/${post.id}`)).json.content).toBe('Via MCP');
  });
});

describe('a published post is history', () => {
  const publish = (post: any) => sql`UPDATE schedules SET status = 'PUBLISHED', published_at = now() WHERE post_id = ${post.id}`;

  it('refuses with 409 a change of text, media or first comment once every schedule is published; tags and isEvergreen still change', async () => {
    const post = await create({ content: 'What went out' });
    await publish(post);
    for (const change of [{ content: 'Rewritten' }, { firstComment: 'Later' }, { media: [] }]) {
      const refused = await patch(post.id, change);
      expect(refused.status, JSON.stringify(change)).toBe(409);
      expect(refused.json.code).toBe('INVALID_STATE');
      expect(refused.json.message).toMatch(/^This post has been published on every channel .* what was published is not rewritten: make a new post/);
    }
    expect((await rest(`/posts/${post.id}`)).json.content).toBe('What went out');
    const [tag] = await sql<{ id: string }[]>`INSERT INTO tags (organization_id, name, slug) VALUES (${ws.workspaceId}, 'History', 'history') RETURNING id`;
    const tagged = await patch(post.id, { tagIds: [tag!.id], isEvergreen: true });
    expect(tagged.status, tagged.text).toBe(200);
    const after = (await rest(`/posts/${post.id}`)).json;
    expect([after.content, after.tagIds, after.isEvergreen]).toEqual(['What went out', [tag!.id], true]);
  });

  it('a post published on one channel and waiting on another changes only the waiting one, and says so', async () => {
    const post = await create({ content: 'Half out' });
    await sql`UPDATE schedules SET status = 'PUBLISHED', published_at = now() WHERE id = ${scheduleOn(post, bluesky).id}`;
    const answer = await patch(post.id, { content: 'Only LinkedIn' });
    expect(answer.status, answer.text).toBe(200);
    expect(answer.json.message).toMatch(/1 schedule was not altered/);
    const after = (await rest(`/posts/${post.id}`)).json;
    expect([scheduleOn(after, bluesky).scheduledContent, scheduleOn(after, linkedin).scheduledContent]).toEqual(['Half out', 'Only LinkedIn']);
  });

  it('is copied into a new draft by a member (POST /posts/{id}/duplicate): text, tags, channels, their own texts and threads; not by a key', async () => {
    const [tag] = await sql<{ id: string }[]>`INSERT INTO tags (organization_id, name, slug) VALUES (${ws.workspaceId}, 'Again', 'again') RETURNING id`;
    const post = await create({ content: 'Say it again', tagIds: [tag!.id], isEvergreen: true, firstComment: 'More below', overrides: [{ integrationId: linkedin, content: 'LinkedIn words' }] });
    const thread = await create({ content: 'A thread', thread: [{ content: 'Its part' }] }, 'SCHEDULED_TIME', [bluesky]);
    await publish(post);
    await publish(thread);
    expect((await rest(`/posts/${post.id}/duplicate`, { method: 'POST', body: {} })).json).toEqual({ code: 'NOT_FOUND', message: 'Not found' });
    const owner = await signedIn(service, ws.workspaceId, ws.userId);
    const copied = await owner.request(`/api/v1/posts/${post.id}/duplicate`, { method: 'POST', body: {} });
    expect(copied.status, copied.text).toBe(201);
    expect(copied.json.message).toBe('Draft created: a copy of the post with 2 draft schedules; nothing is scheduled');
    const copy = (await rest(`/posts/${copied.json.postId}`)).json;
    expect(copy.id).not.toBe(post.id);
    expect([copy.content, copy.tagIds, copy.isEvergreen]).toEqual(['Say it again', [tag!.id], true]);
    expect(copy.schedules.map((s: any) => [s.integrationId, s.status, s.scheduledAt, s.scheduledContent, s.firstComment, s.platformPostId])).toEqual(
      expect.arrayContaining([
        [bluesky, 'DRAFT', null, 'Say it again', 'More below', null],
        [linkedin, 'DRAFT', null, 'LinkedIn words', 'More below', null],
      ]),
    );
    expect(copy.schedules).toHaveLength(2);
    const threadCopy = (await owner.request(`/api/v1/posts/${thread.id}/duplicate`, { method: 'POST', body: {} })).json;
    const parts = (await rest(`/posts/${threadCopy.postId}`)).json.schedules;
    expect(parts.map((s: any) => [s.threadOrder, s.scheduledContent, s.status])).toEqual([[0, 'A thread', 'DRAFT'], [1, 'Its part', 'DRAFT']]);
    expect(parts[1].threadRootScheduleId).toBe(parts[0].id);
    // The original is untouched, and another workspace's post is not found.
    expect((await rest(`/posts/${post.id}`)).json.schedules.every((s: any) => s.status === 'PUBLISHED')).toBe(true);
    const [theirs] = await sql<{ id: string }[]>`INSERT INTO posts (organization_id, user_id, content) VALUES (${other.workspaceId}, ${other.userId}, 'Theirs') RETURNING id`;
    const foreign = await owner.request(`/api/v1/posts/${theirs!.id}/duplicate`, { method: 'POST', body: {} });
    expect(foreign.json).toEqual({ code: 'NOT_FOUND', message: 'Not found' });
    expect((await sql`SELECT 1 FROM posts WHERE content = 'Theirs'`).length).toBe(1);
  });
});

describe('DELETE /posts/{id}', () => {
  it('removes the post, its schedules and their queued jobs', async () => {
    const post = await create({ content: 'Doomed', thread: [{ content: 'Part' }] }, 'SCHEDULED_TIME', [bluesky]);
    const ids: string[] = post.schedules.map((s: any) => s.id);
    expect(await jobKeys()).toContain(`publish-schedule:${scheduleOn(post, bluesky).id}`);
    const answer = await rest(`/posts/${post.id}`, { method: 'DELETE', body: {} });
    expect(answer.status, answer.text).toBe(200);
    expect(answer.json).toEqual({ success: true });
    expect((await rest(`/posts/${post.id}`)).status).toBe(404);
    expect(await sql`SELECT 1 FROM schedules WHERE id = ANY(${ids}::uuid[])`).toHaveLength(0);
    const keys = await jobKeys();
    for (const id of ids) expect(keys).not.toContain(`publish-schedule:${id}`);
  });

  it('refuses while a schedule is PUBLISHING, and answers 404 to another workspace', async () => {
    const post = await create({ content: 'Busy' });
    expect((await rest(`/posts/${post.id}`, { method: 'DELETE', body: {}, key: other.apiKey })).json).toEqual({ code: 'NOT_FOUND', message: 'Not found' });
    await sql`UPDATE schedules SET status = 'PUBLISHING' WHERE id = ${post.schedules[0].id}`;
    const refused = await rest(`/posts/${post.id}`, { method: 'DELETE' });
    expect(refused.status).toBe(409);
    expect(refused.json.code).toBe('INVALID_STATE');
    expect((await rest(`/posts/${post.id}`)).status).toBe(200);
    const withField = await rest(`/posts/${post.id}`, { method: 'DELETE', body: { force: true } });
    expect(withField.status).toBe(400);
    expect(withField.json.message).toMatch(/^body: Unrecognized key: "force"/);
  });
});
