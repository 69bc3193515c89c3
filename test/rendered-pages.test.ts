import { createHash } from 'node:crypto';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadPosts } from '../operations/posts/post.js';
import { mediaSummary } from '../operations/schedules/calendar.js';
import { photo } from './support/images.js';
import { call, eventually, startTestService, type TestService, type Workspace } from './support/service.js';

/**
 * The lists serve a post or a schedule again from what this process rendered before, while its rows are unchanged
 * (src/registry/render-cache.ts). Every read here is a page read before the change, so a stale render would show: each must
 * answer what a fresh render of the rows answers (loadPosts, which keeps nothing), whoever made the change, through
 * the API, the worker, or by hand in SQL.
 */

let service: TestService;
let ws: Workspace;
let sql: postgres.Sql;
let sky: string;
let pro: string;
let tag: string;
let postId: string;

const rest = (path: string, options: { method?: string; body?: unknown } = {}) => call(`${service.api}${path}`, { key: ws.apiKey, ...options });
const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('base64');

/** The post as a fresh render makes it, in the JSON an answer carries. */
async function fresh(id: string) {
  const { db, storage } = service.service.core.app;
  return JSON.parse(JSON.stringify((await loadPosts(db, storage, ws.workspaceId, [id]))[0] ?? null));
}

/** The post on the posts page, alone, and each of its schedules on the calendar: all equal to a fresh render. */
async function everyReadShowsFresh() {
  const expected = await fresh(postId);
  const page = await rest('/posts?limit=10');
  expect(page.status, page.text).toBe(200);
  expect(page.json.items.find((post: { id: string }) => post.id === postId)).toEqual(expected);
  expect((await rest(`/posts/${postId}`)).json).toEqual(expected);
  const calendar = await rest('/schedules?view=agenda&startDate=2030-01-01T00:00:00Z&limit=100');
  expect(calendar.status, calendar.text).toBe(200);
  const shown = calendar.json.schedules.filter((schedule: { postId: string }) => schedule.postId === postId);
  const byId = (a: { id: string }, b: { id: string }) => a.id.localeCompare(b.id);
  expect(shown.sort(byId)).toEqual(
    [...expected.schedules].sort(byId).map(({ integration, ...schedule }: { integration: { id: string; name: string; platform: string } }) => ({
      ...schedule,
      integration: { id: integration.id, name: integration.name, platform: integration.platform, image: null },
      post: { id: expected.id, content: expected.content, createdAt: expected.createdAt, ...mediaSummary(expected.attachments) },
    })),
  );
  return expected;
}

beforeAll(async () => {
  service = await startTestService({}, { api: true, worker: true });
  ws = await service.workspace({ plan: 'business' });
  sql = postgres(service.databaseUrl, { max: 1, onnotice: () => {} });
  sky = (await ws.admin('createIntegration', { platform: 'BLUESKY', name: 'Sky' })).id;
  pro = (await ws.admin('createIntegration', { platform: 'LINKEDIN', name: 'Pro' })).id;
  tag = (await ws.admin('createTag', { name: 'Launch' })).id;
  const created = await rest('/posts', {
    method: 'POST',
    body: { rows: [{ content: 'First words', scheduledAt: '2030-03-01T09:00:00Z', tagIds: [tag] }], shared: { selectedIntegrations: [sky, pro] }, postAction: 'SCHEDULED_TIME' },
  });
  expect(created.status, created.text).toBe(201);
  postId = created.json.postId;
});
afterAll(async () => {
  await sql?.end();
  await service?.stop();
});

describe('a page read again after a change shows the change', () => {
  it('made through the API: content, tags, a schedule of its own, media and its variants, a schedule deleted', async () => {
    expect((await everyReadShowsFresh()).content).toBe('First words');
    expect((await rest(`/posts/${postId}`, { method: 'PATCH', body: { content: 'Second words' } })).status).toBe(200);
    expect((await everyReadShowsFresh()).content).toBe('Second words');

    const other = (await ws.admin('createTag', { name: 'Research' })).id;
    expect((await rest(`/posts/${postId}`, { method: 'PATCH', body: { tagIds: [other] } })).status).toBe(200);
    expect((await everyReadShowsFresh()).tags.map((shown: { name: string }) => shown.name)).toEqual(['Research']);

    const [first] = (await fresh(postId)).schedules;
    const own = await rest(`/posts/${postId}`, { method: 'PATCH', body: { schedules: [{ id: first.id, content: 'Only here' }] } });
    expect(own.status, own.text).toBe(200);
    expect((await everyReadShowsFresh()).schedules.map((schedule: { scheduledContent: string }) => schedule.scheduledContent)).toContain('Only here');

    // An image: attached while its variants are made, then shown with them once the worker has made them.
    const bytes = await photo(800, 600);
    const started = await rest('/uploads/initiate', {
      method: 'POST',
      body: { scenarioId: 'post_attachments', fileName: 'a.jpg', fileType: 'image/jpeg', fileSize: bytes.length, checksum: sha256(bytes) },
    });
    expect((await fetch(started.json.signedUrl, { method: 'PUT', body: new Uint8Array(bytes), headers: started.json.requiredHeaders })).status).toBe(200);
    const completed = await rest('/uploads/complete', { method: 'POST', body: { uploadId: started.json.uploadId, checksum: sha256(bytes) } });
    expect(completed.status, completed.text).toBe(200);
    expect((await rest(`/posts/${postId}`, { method: 'PATCH', body: { media: [{ id: completed.json.mediaId, altText: 'A photo' }] } })).status).toBe(200);
    expect((await everyReadShowsFresh()).attachments.map((attachment: { altText: string }) => attachment.altText)).toEqual(['A photo']);
    await eventually(
      async () => (await sql<{ status: string }[]>`SELECT variants_status AS status FROM media WHERE id = ${completed.json.mediaId}`)[0]!.status,
      (status) => status !== 'pending',
      20_000,
    );
    const withVariants = await everyReadShowsFresh();
    expect(withVariants.attachments[0].media).toMatchObject({ variantsStatus: 'ready' });
    expect(Object.keys(withVariants.attachments[0].media.variants)).toContain('1:1');

    const deleted = await rest(`/schedules/${first.id}`, { method: 'DELETE' });
    expect(deleted.status, deleted.text).toBe(200);
    expect((await everyReadShowsFresh()).schedules.map((schedule: { id: string }) => schedule.id)).not.toContain(first.id);
  });

  it('made by hand in SQL, or by the engine: a status, a channel renamed, a tag renamed, the author renamed', async () => {
    await everyReadShowsFresh();
    await sql`UPDATE schedules SET status = 'FAILED', failure_reason = 'By hand' WHERE post_id = ${postId}`;
    expect((await everyReadShowsFresh()).schedules.map((schedule: { status: string }) => schedule.status)).toEqual(
      expect.arrayContaining(['FAILED']),
    );
    await sql`UPDATE integrations SET name = 'Sky renamed' WHERE id = ${sky}`;
    await sql`UPDATE integrations SET name = 'Pro renamed' WHERE id = ${pro}`;
    expect((await everyReadShowsFresh()).schedules.map((schedule: { integration: { name: string } }) => schedule.integration.name)).toEqual(
      expect.arrayContaining([expect.stringMatching(/renamed$/)]),
    );
    await sql`UPDATE tags SET name = 'Research, renamed' WHERE organization_id = ${ws.workspaceId} AND name = 'Research'`;
    expect((await everyReadShowsFresh()).tags[0].name).toBe('Research, renamed');
    await sql`UPDATE users SET name = 'Someone else' WHERE id = (SELECT user_id FROM posts WHERE id = ${postId})`;
    expect((await everyReadShowsFresh()).user.name).toBe('Someone else');
    await sql`UPDATE attachments SET alt_text = 'Described by hand' WHERE post_id = ${postId}`;
    expect((await everyReadShowsFresh()).attachments[0].altText).toBe('Described by hand');
  });

  it('a post kept for its workspace is never served to another', async () => {
    const expected = await everyReadShowsFresh();
    const other = await service.workspace({ plan: 'business' });
    const asOther = (path: string) => call(`${service.api}${path}`, { key: other.apiKey });
    expect((await asOther(`/posts/${postId}`)).status).toBe(404);
    expect((await asOther(`/schedules/${expected.schedules[0].id}?postId=${postId}`)).status).toBe(404);
    expect((await asOther('/posts?limit=10')).json.items).toEqual([]);
    expect((await asOther('/schedules?view=agenda&startDate=2030-01-01T00:00:00Z&limit=100')).json.schedules).toEqual([]);
  });

  it('a row written twice in one transaction, and the post deleted: neither shown stale', async () => {
    await everyReadShowsFresh();
    await sql.begin(async (tx) => {
      await tx`UPDATE posts SET content = 'Once' WHERE id = ${postId}`;
      await tx`UPDATE posts SET content = 'Twice' WHERE id = ${postId}`;
    });
    expect((await everyReadShowsFresh()).content).toBe('Twice');
    expect((await rest(`/posts/${postId}`, { method: 'DELETE' })).status).toBe(200);
    expect((await rest(`/posts/${postId}`)).status).toBe(404);
    expect((await rest('/posts?limit=10')).json.items.map((post: { id: string }) => post.id)).not.toContain(postId);
  });
});
