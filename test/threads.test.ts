import { createHash } from 'node:crypto';
import postgres from 'postgres';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../src/process/config.js';
import { photo } from './support/images.js';
import { followThreadsLinks, startFakeThreads, type FakeThreads } from './support/threads.js';
import { call, eventually, isSettled, startTestService, uploadImage, type TestService, type Workspace } from './support/service.js';

/**
 * Threads end to end against the strict fake of Meta's Threads API on loopback (test/support/threads.ts): connecting
 * through the operator's Meta app (the code, then the long-lived token, then the profile), publishing through the
 * worker by containers (text, images fetched by the fake from this service's store, carousels, replies) exactly once,
 * the publishing quota, Meta's refusals, and the long-lived token's refresh.
 */
let fake: FakeThreads;
let service: TestService;
let ws: Workspace;
let sql: postgres.Sql;

beforeAll(async () => {
  fake = await startFakeThreads({ autoConsent: 'threads_ann' });
  const threads = { ...loadConfig({}).threads, appId: fake.app.appId, appSecret: fake.app.appSecret, authUrl: fake.url, apiUrl: fake.url, version: fake.version };
  service = await startTestService({ threads, publishStaleMs: 3000, publishRecoveryIntervalMs: 200, platformTimeoutMs: 3000 }, { api: true, worker: true });
  fake.app.redirectUris.push(`${service.base}/oauth/threads/callback`);
  ws = await service.workspace({ plan: 'business' });
  sql = postgres(service.databaseUrl, { max: 2, onnotice: () => {}, transform: postgres.camel });
});

afterAll(async () => {
  await sql?.end();
  await service?.stop();
  await fake?.close();
});

const rest = (path: string, options: { method?: string; body?: unknown } = {}) => call(`${service.api}${path}`, { key: ws.apiKey, ...options });

async function connect(account = 'threads_ann'): Promise<string> {
  fake.autoConsent(account);
  const link = await rest('/integrations/connect', { method: 'POST', body: { platform: 'THREADS' } });
  expect(link.status, link.text).toBe(200);
  const page = await followThreadsLinks(link.json.redirectUrl);
  expect(page.status, page.html).toBe(200);
  return /<code>([0-9a-f-]{36})<\/code>/.exec(page.html)![1]!;
}

async function publish(row: Record<string, unknown>, integrationId: string): Promise<string[]> {
  const created = await rest('/posts', { method: 'POST', body: { rows: [row], shared: { selectedIntegrations: [integrationId] }, postAction: 'PUBLISH_NOW' } });
  expect(created.status, created.text).toBe(201);
  const schedules = await sql<{ id: string }[]>`SELECT id FROM schedules WHERE post_id = ${created.json.postId} ORDER BY thread_order`;
  return schedules.map((schedule) => schedule.id);
}

const scheduleState = async (id: string) =>
  (await sql<{ status: string; platformPostId: string | null; releaseUrl: string | null; failureReason: string | null; retryCount: number }[]>`
    SELECT status, platform_post_id, release_url, failure_reason, retry_count FROM schedules WHERE id = ${id}`)[0]!;
const settled = (id: string) => eventually(() => scheduleState(id), isSettled, 30_000);
/** Runs a schedule waiting for its retry now rather than after the engine's backoff. */
async function retryNow(id: string) {
  await eventually(() => scheduleState(id), (state) => state.retryCount === 1 && state.status === 'SCHEDULED', 30_000);
  await sql`SELECT graphile_worker.add_job('publish-schedule', json_build_object('scheduleId', ${id}::uuid), job_key := ${`publish-schedule:${id}`})`;
  return settled(id);
}
const publishes = (from: number) => fake.requests.slice(from).filter((request) => request.method === 'POST' && request.path.endsWith('/threads_publish'));

describe('connecting', () => {
  it('asks with the app\'s scopes, exchanges the code for a long-lived token, and keeps the account with its handle and picture', async () => {
    const link = await rest('/integrations/connect', { method: 'POST', body: { platform: 'THREADS' } });
    const consent = new URL(link.json.redirectUrl);
    expect(consent.origin + consent.pathname).toBe(fake.authorizeUrl);
    expect(consent.searchParams.get('scope')!.split(',')).toEqual(expect.arrayContaining(['threads_basic', 'threads_content_publish', 'threads_manage_replies']));
    const id = await connect();
    const integration = ((await rest('/integrations')).json as { id: string; image: string; expiresAt: string }[]).find((one) => one.id === id)!;
    const account = fake.account('threads_ann');
    expect(integration).toMatchObject({ platform: 'THREADS', name: account.name, handle: '@threads_ann', tokenStatus: 'VALID' });
    expect(integration.image).toBe(account.pictureUrl);
    // The long-lived token (60 days), not the hour-long one; its refresh queued a week before it ends.
    const expiresAt = Date.parse(integration.expiresAt);
    expect(expiresAt - Date.now()).toBeGreaterThan(59 * 86_400_000);
    const [job] = await sql<{ runAt: Date }[]>`SELECT run_at FROM graphile_worker.jobs WHERE key = ${`refresh-credentials:${id}`}`;
    expect(Math.round((expiresAt - job!.runAt.getTime()) / 86_400_000)).toBe(7);
    const stored = [...fake.tokens.values()].filter((token) => token.accountId === account.id);
    expect(stored.map((token) => token.kind)).toEqual(expect.arrayContaining(['short', 'long']));
  });

  it('is not offered on a server without the Meta app, and says which settings it needs', async () => {
    const bare = await startTestService({}, { api: true, worker: false });
    try {
      const other = await bare.workspace({ plan: 'business' });
      const platforms = await call(`${bare.api}/platforms`, { key: other.apiKey });
      const threads = (platforms.json as { platform: string; connectable: boolean; settings: string[]; unavailableReason: string }[]).find((one) => one.platform === 'THREADS')!;
      expect(threads).toMatchObject({ connectable: false, settings: ['THREADS_APP_ID', 'THREADS_APP_SECRET'] });
      expect(threads.unavailableReason).toMatch(/THREADS_APP_ID and THREADS_APP_SECRET/);
      const refused = await call(`${bare.api}/integrations/connect`, { key: other.apiKey, method: 'POST', body: { platform: 'THREADS' } });
      expect(refused.status).toBe(400);
      expect(refused.json).toMatchObject({ code: 'VALIDATION_ERROR', message: expect.stringMatching(/THREADS_APP_ID/) });
    } finally {
      await bare.stop();
    }
  });
});

describe('publishing', () => {
  it('publishes text through a container once, with its permalink, and a thread and first comment as replies', async () => {
    const channel = await connect();
    const from = fake.requests.length;
    const created = await rest('/posts', {
      method: 'POST',
      body: { rows: [{ content: 'Hello from Postwise', thread: [{ content: 'A second part' }], firstComment: 'And a comment' }], shared: { selectedIntegrations: [channel] }, postAction: 'PUBLISH_NOW' },
    });
    expect(created.status, created.text).toBe(201);
    const [root, part] = await sql<{ id: string }[]>`SELECT id FROM schedules WHERE post_id = ${created.json.postId} ORDER BY thread_order`;
    const first = await settled(root!.id);
    expect(first, JSON.stringify(first)).toMatchObject({ status: 'PUBLISHED', failureReason: null });
    const post = fake.posts.get(first.platformPostId!)!;
    expect(post.text).toBe('Hello from Postwise');
    expect(first.releaseUrl).toMatch(new RegExp(`/@threads_ann/post/${post.shortcode}$`));
    const second = await settled(part!.id);
    expect(fake.posts.get(second.platformPostId!)!.replyToId).toBe(post.id);
    const comment = fake.postsOf('threads_ann', { replies: true }).find((one) => one.text === 'And a comment')!;
    expect(comment.replyToId).toBe(post.id);
    expect(publishes(from)).toHaveLength(3);
    // The container was kept before it was published.
    const [kept] = await sql<{ postSentRef: string }[]>`SELECT post_sent_ref FROM schedules WHERE id = ${root!.id}`;
    expect(fake.containers.get(kept!.postSentRef)?.postId).toBe(post.id);
  });

  it('gives Meta the store\'s URL of each image, which it fetches: one image, and a carousel with alt text', async () => {
    const channel = await connect();
    const one = await upload(await photo(900, 600), 'image/jpeg');
    const two = await upload(await photo(400, 400, 'png'), 'image/png');
    const [single] = await publish({ content: 'One picture', media: [{ id: one, altText: 'A gradient' }] }, channel);
    const a = await settled(single!);
    expect(a, JSON.stringify(a)).toMatchObject({ status: 'PUBLISHED' });
    const image = fake.posts.get(a.platformPostId!)!;
    expect(image).toMatchObject({ mediaType: 'IMAGE', altText: 'A gradient' });
    const [carousel] = await publish({ content: 'Two pictures', media: [{ id: one, altText: 'First' }, { id: two, altText: 'Second' }] }, channel);
    const b = await settled(carousel!);
    expect(b, JSON.stringify(b)).toMatchObject({ status: 'PUBLISHED' });
    const made = fake.posts.get(b.platformPostId!)!;
    expect(made.mediaType).toBe('CAROUSEL_ALBUM');
    const items = made.children.map((id) => fake.posts.get(id)!);
    expect(items.map((item) => item.altText)).toEqual(['First', 'Second']);
    // What Meta fetched, from the store's public URL, is what the store holds there.
    const containers = fake.containers.get(made.containerId!)!.children.map((id) => fake.containers.get(id)!);
    expect(containers).toHaveLength(2);
    for (const container of containers) {
      expect(container.fetch).toMatchObject({ state: 'done', mimeType: expect.stringMatching(/^image\/(jpeg|png)$/) });
      const stored = Buffer.from(await (await fetch(container.imageUrl!)).arrayBuffer());
      expect(container.fetch!.sha256).toBe(sha256(stored));
    }
  });

  it('a publish whose answer was lost is found by its container, and not published again', async () => {
    const channel = await connect();
    const from = fake.requests.length;
    fake.failNext('publish', 'drop');
    const [id] = await publish({ content: 'Published once, whatever the network did' }, channel);
    const state = await retryNow(id!);
    expect(state.status).toBe('PUBLISHED');
    expect(fake.postsOf('threads_ann').filter((post) => post.text === 'Published once, whatever the network did')).toHaveLength(1);
    expect(publishes(from)).toHaveLength(1);
    expect(fake.posts.get(state.platformPostId!)!.text).toBe('Published once, whatever the network did');
  });

  it('a first comment whose publish answer was lost is found among the account\'s replies, and not published again', async () => {
    const channel = await connect();
    const from = fake.requests.length;
    fake.failNext('publish', 'answer');
    fake.failNext('publish', 'drop');
    const [id] = await publish({ content: 'A post whose comment goes missing', firstComment: 'The comment, published once' }, channel);
    const state = await retryNow(id!);
    expect(state, JSON.stringify(state)).toMatchObject({ status: 'PUBLISHED', failureReason: null });
    const comments = fake.postsOf('threads_ann', { replies: true }).filter((post) => post.text === 'The comment, published once');
    expect(comments).toHaveLength(1);
    expect(comments[0]!.replyToId).toBe(state.platformPostId);
    expect(publishes(from)).toHaveLength(2);
    expect(fake.requests.slice(from).some((request) => request.method === 'GET' && request.path.endsWith('/replies'))).toBe(true);
  });

  it('a container Meta could not prepare fails with its message; a post beyond the day\'s quota fails before anything is made', async () => {
    const channel = await connect();
    fake.failContainers(1, 'FAILED_DOWNLOADING_VIDEO');
    const [broken] = await publish({ content: 'Meta will fail this one' }, channel);
    const failed = await settled(broken!);
    expect(failed.status).toBe('FAILED');
    expect(failed.failureReason).toMatch(/Threads could not prepare the post: FAILED_DOWNLOADING_VIDEO/);

    const quota = fake.quotas.posts;
    fake.quotas.posts = fake.quotaUsage('threads_ann').posts;
    try {
      const containers = fake.containers.size;
      const [over] = await publish({ content: 'One too many today' }, channel);
      const refused = await settled(over!);
      expect(refused.status).toBe('FAILED');
      expect(refused.failureReason).toMatch(/Threads allows \d+ posts a day through its API, and this account has made \d+ in the last 24 hours/);
      expect(fake.containers.size).toBe(containers);
    } finally {
      fake.quotas.posts = quota;
    }
  });

  it('a rate limit waits for a later attempt, Meta\'s trace id kept; deleting the post deletes it and its first comment on Threads', async () => {
    const channel = await connect();
    fake.failNext('containers', { status: 400, code: 4, message: 'Application request limit reached', isTransient: true });
    const [id] = await publish({ content: 'Slowed down once', firstComment: 'The comment under it' }, channel);
    const waiting = await eventually(
      async () => (await sql<{ status: string; retryCount: number; failureDetail: { status: number; platformCode: string; traceId: string } | null }[]>`
        SELECT status, retry_count, failure_detail FROM schedules WHERE id = ${id!}`)[0]!,
      (state) => state.retryCount === 1,
      30_000,
    );
    expect(waiting).toMatchObject({ status: 'SCHEDULED', failureDetail: { status: 400, platformCode: '4' } });
    expect(waiting.failureDetail!.traceId).toMatch(/^[\w-]{16,}$/);
    const state = await retryNow(id!);
    expect(state.status).toBe('PUBLISHED');
    const comment = fake.postsOf('threads_ann', { replies: true }).find((one) => one.text === 'The comment under it')!;
    const deleted = await rest(`/schedules/${id}`, { method: 'DELETE' });
    expect(deleted.status, deleted.text).toBe(200);
    expect(fake.posts.get(state.platformPostId!)!.deletedAt).not.toBeNull();
    expect(fake.posts.get(comment.id)!.deletedAt).not.toBeNull();
  });

  it('content Meta refuses fails at once with Meta\'s words; disconnecting forgets the token', async () => {
    const channel = await connect();
    fake.failNext('containers', { status: 400, code: 100, message: 'Invalid parameter', userMessage: 'The post could not be created.' });
    const [id] = await publish({ content: 'Meta will refuse this' }, channel);
    const failed = await settled(id!);
    expect(failed).toMatchObject({ status: 'FAILED', retryCount: 0 });
    expect(failed.failureReason).toBe('Threads refused it: The post could not be created.');

    await ws.admin('disconnectIntegration', { id: channel });
    const [row] = await sql<{ credentials: Buffer | null; tokenStatus: string }[]>`SELECT credentials, token_status FROM integrations WHERE id = ${channel}`;
    expect(row).toMatchObject({ credentials: null, tokenStatus: 'MISSING' });
    expect(await sql`SELECT 1 FROM graphile_worker.jobs WHERE key = ${`refresh-credentials:${channel}`}`).toHaveLength(0);
  });

  it('a revoked token fails the post and marks the channel', async () => {
    if (![...fake.accounts.values()].some((account) => account.username === 'threads_bob')) fake.addAccount({ username: 'threads_bob', name: 'Bob' });
    const channel = await connect('threads_bob');
    for (const token of fake.tokens.values()) if (token.accountId === fake.account('threads_bob').id) fake.revoke(token.value);
    const [id] = await publish({ content: 'After the app was removed' }, channel);
    const failed = await settled(id!);
    expect(failed.status).toBe('FAILED');
    const [row] = await sql<{ tokenStatus: string; connectionErrorCode: string }[]>`SELECT token_status, connection_error_code FROM integrations WHERE id = ${channel}`;
    expect(row).toMatchObject({ tokenStatus: 'REVOKED' });
  });
});

describe('Threads\' rules, when a post is written', () => {
  it('refuses what Meta would: over 500 characters (an emoji its bytes), over 5 links, a WebP image, an unknown replyControl', async () => {
    const channel = await connect();
    const create = (row: Record<string, unknown>) =>
      rest('/posts', { method: 'POST', body: { rows: [row], shared: { selectedIntegrations: [channel] }, postAction: 'PUBLISH_NOW' } });
    const long = await create({ content: `${'x'.repeat(497)}🙂` });
    expect(long.status).toBe(400);
    expect(long.json).toMatchObject({ code: 'CONTENT_TOO_LONG', message: expect.stringMatching(/Too long for Threads \(.+\): 501 of 500 characters \(an emoji counting its UTF-8 bytes\)/) });
    const links = await create({ content: [1, 2, 3, 4, 5, 6].map((n) => `https://example.com/${n}`).join(' ') });
    expect(links.json).toMatchObject({ code: 'CONTENT_TOO_LONG', message: expect.stringMatching(/Too many links for Threads \(.+\): 6, and it takes at most 5/) });
    const webp = await upload(await sharp({ create: { width: 64, height: 64, channels: 3, background: '#336699' } }).webp().toBuffer(), 'image/webp');
    const image = await create({ content: 'A WebP', media: [{ id: webp }] });
    expect(image.json).toMatchObject({ code: 'MEDIA_RULE_VIOLATED', message: expect.stringMatching(/Image 1 is a WebP image; Threads \(.+\) takes JPEG and PNG images/) });
    const control = await create({ content: 'Who may answer', overrides: [{ integrationId: channel, settings: { replyControl: 'nobody' } }] });
    expect(control.json).toMatchObject({ code: 'VALIDATION_ERROR', message: expect.stringMatching(/replyControl is everyone, accounts_you_follow/) });

    // A replyControl Meta takes reaches the container.
    const [id] = await publish({ content: 'Only followers may answer', overrides: [{ integrationId: channel, settings: { replyControl: 'followers_only' } }] }, channel);
    const state = await settled(id!);
    expect(state.status).toBe('PUBLISHED');
    expect(fake.posts.get(state.platformPostId!)!.replyControl).toBe('followers_only');
  });
});

describe('the long-lived token', () => {
  it('is refreshed by the worker (once a day old), its new expiry kept and its next refresh queued', async () => {
    const channel = await connect();
    const [before] = await sql<{ credentials: Buffer; expiresAt: Date }[]>`SELECT credentials, expires_at FROM integrations WHERE id = ${channel}`;
    fake.advance(2 * 86_400_000);
    await sql`SELECT graphile_worker.add_job('refresh-credentials', json_build_object('integrationId', ${channel}::uuid), job_key := ${`refresh-credentials:${channel}`})`;
    const after = await eventually(
      async () => (await sql<{ credentials: Buffer; expiresAt: Date }[]>`SELECT credentials, expires_at FROM integrations WHERE id = ${channel}`)[0]!,
      (row) => !row.credentials.equals(before!.credentials),
      15_000,
    );
    expect(after.expiresAt.getTime()).toBeGreaterThan(before!.expiresAt.getTime());
    expect(fake.requests.some((request) => request.path === '/refresh_access_token')).toBe(true);
    const [next] = await sql<{ runAt: Date }[]>`SELECT run_at FROM graphile_worker.jobs WHERE key = ${`refresh-credentials:${channel}`}`;
    expect(Math.round((after.expiresAt.getTime() - next!.runAt.getTime()) / 86_400_000)).toBe(7);
    // And the channel publishes with the new token.
    const [id] = await publish({ content: 'With a fresh token' }, channel);
    expect((await settled(id!)).status).toBe('PUBLISHED');
  });

  it('a refresh Meta refuses for another reason (a token less than a day old) warns once that the token will expire, the channel left as it is', async () => {
    if (![...fake.accounts.values()].some((account) => account.username === 'threads_dee')) fake.addAccount({ username: 'threads_dee', name: 'Dee' });
    const channel = await connect('threads_dee');
    const refresh = () => sql`SELECT graphile_worker.add_job('refresh-credentials', json_build_object('integrationId', ${channel}::uuid), job_key := ${`refresh-credentials:${channel}`})`;
    const warnings = async () => (await rest(`/events?type=integration.token_expiring&resourceId=${channel}`)).json.items as unknown[];
    await refresh();
    await eventually(warnings, (items) => items.length === 1, 15_000);
    const before = fake.requests.filter((request) => request.path === '/refresh_access_token').length;
    await refresh();
    // Run again (and refused again), it does not say so twice.
    await eventually(async () => fake.requests.filter((request) => request.path === '/refresh_access_token').length, (count) => count > before, 15_000);
    await eventually(async () => (await sql`SELECT 1 FROM graphile_worker.jobs WHERE key = ${`refresh-credentials:${channel}`} AND locked_at IS NULL AND run_at <= now()`).length, (n) => n === 0, 15_000);
    expect(await warnings()).toHaveLength(1);
    const [row] = await sql<{ tokenStatus: string }[]>`SELECT token_status FROM integrations WHERE id = ${channel}`;
    expect(row!.tokenStatus).toBe('VALID');
  });

  it('a refresh Meta refuses (the app removed) marks the channel, with its event', async () => {
    if (![...fake.accounts.values()].some((account) => account.username === 'threads_cy')) fake.addAccount({ username: 'threads_cy', name: 'Cy' });
    const channel = await connect('threads_cy');
    for (const token of fake.tokens.values()) if (token.accountId === fake.account('threads_cy').id) fake.revoke(token.value, 'deauthorized');
    await sql`SELECT graphile_worker.add_job('refresh-credentials', json_build_object('integrationId', ${channel}::uuid), job_key := ${`refresh-credentials:${channel}`})`;
    const row = await eventually(
      async () => (await sql<{ tokenStatus: string; connectionErrorCode: string | null }[]>`SELECT token_status, connection_error_code FROM integrations WHERE id = ${channel}`)[0]!,
      (state) => state.tokenStatus !== 'VALID',
      15_000,
    );
    expect(row).toMatchObject({ tokenStatus: 'REVOKED', connectionErrorCode: 'ACCESS_TOKEN_REVOKED' });
    // The feed shows an event once the transactions before it have ended: waited for, not assumed.
    const events = await eventually(() => rest(`/events?type=integration.error&resourceId=${channel}`), (answer) => answer.json.items?.length > 0, 15_000);
    expect(events.status, events.text).toBe(200);
    expect(events.json.items).toHaveLength(1);
  });
});

const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');
/** An image uploaded through the uploads API: its media id. */
const upload = async (bytes: Buffer, fileType: string) => (await uploadImage(service.api, ws.apiKey, bytes, fileType)).mediaId;

