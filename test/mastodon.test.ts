import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import postgres from 'postgres';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser } from 'playwright-core';
import { checkAccessibility, launchBrowser, newPage, pageErrors, setOwnerPassword, signIn } from './support/browser.js';
import { photo } from './support/images.js';
import { connectMastodon, followLinks, startFakeMastodon, type FakeMastodon } from './support/mastodon.js';
import { call, eventually, isSettled, startTestService, uploadImage, type TestService, type Workspace } from './support/service.js';

/**
 * Mastodon end to end against the strict fake instance on loopback (test/support/mastodon.ts), as an API client drives
 * it: connecting by naming the server (this service's app registered there once, PKCE, the account read), publishing
 * through the worker (text, content warning, visibility, threads) exactly once, and the instance's refusals.
 */
let fake: FakeMastodon;
let service: TestService;
let ws: Workspace;
let sql: postgres.Sql;

beforeAll(async () => {
  fake = await startFakeMastodon({ autoConsent: 'ann' });
  service = await startTestService({ mediaFetchAllowHosts: [fake.host], publishStaleMs: 3000, publishRecoveryIntervalMs: 200, platformTimeoutMs: 2500 }, { api: true, worker: true });
  ws = await service.workspace({ plan: 'business' });
  sql = postgres(service.databaseUrl, { max: 2, onnotice: () => {}, transform: postgres.camel });
});

afterAll(async () => {
  await sql?.end();
  await service?.stop();
  await fake?.close();
});

const rest = (path: string, options: { method?: string; body?: unknown } = {}) => call(`${service.api}${path}`, { key: ws.apiKey, ...options });

const connect = (account = 'ann') => connectMastodon(service.api, ws.apiKey, fake, account);

async function publish(row: Record<string, unknown>, integrationId: string, settings?: Record<string, unknown>) {
  const created = await rest('/posts', {
    method: 'POST',
    body: { rows: [{ ...row, ...(settings && { overrides: [{ integrationId, settings }] }) }], shared: { selectedIntegrations: [integrationId] }, postAction: 'PUBLISH_NOW' },
  });
  expect(created.status, created.text).toBe(201);
  const schedules = await sql<{ id: string }[]>`SELECT id FROM schedules WHERE post_id = ${created.json.postId} ORDER BY thread_order`;
  return schedules.map((schedule) => schedule.id);
}

const scheduleState = async (id: string) =>
  (await sql<{ status: string; platformPostId: string | null; releaseUrl: string | null; failureReason: string | null; retryCount: number }[]>`
    SELECT status, platform_post_id, release_url, failure_reason, retry_count FROM schedules WHERE id = ${id}`)[0]!;
const settled = (id: string) => eventually(() => scheduleState(id), isSettled, 30_000);

/** The instance's limits as the channel's Integration carries them. */
const limitsOf = async (channel: string) =>
  ((await rest('/integrations')).json as { id: string; limits: { maxCharacters: number; imageTypes: string[] } }[]).find((one) => one.id === channel)!.limits;
/** Has the worker read the fake's limits again now (as it does daily, and after a "too long"), until `check` holds. */
async function readLimitsAgain(channel: string, check: (limits: Awaited<ReturnType<typeof limitsOf>>) => boolean) {
  await sql`SELECT graphile_worker.add_job('refresh-instance-limits', json_build_object('host', ${fake.host}::text))`;
  return eventually(() => limitsOf(channel), check, 15_000);
}

describe('connecting', () => {
  it('names the server: registers Postwise there once, asks with PKCE, and keeps the account with its handle and the server\'s limits', async () => {
    const link = await rest('/integrations/connect', { method: 'POST', body: { platform: 'MASTODON', instance: fake.host } });
    expect(link.status, link.text).toBe(200);
    const consent = new URL(link.json.redirectUrl);
    expect(consent.origin).toBe(fake.url);
    expect(consent.pathname).toBe('/oauth/authorize');
    expect(consent.searchParams.get('code_challenge_method')).toBe('S256');
    expect(consent.searchParams.get('scope')).toBe('read:accounts read:statuses write:statuses write:media');
    const page = await followLinks(link.json.redirectUrl);
    expect(page.status, page.html).toBe(200);
    expect(page.html).toContain(`@ann@${fake.domain}`);
    const channels = (await rest('/integrations')).json.filter((i: { platform: string }) => i.platform === 'MASTODON');
    expect(channels).toHaveLength(1);
    expect(channels[0]).toMatchObject({ name: 'Ann Example', handle: `@ann@${fake.domain}`, limits: { maxCharacters: 500, charactersReservedPerUrl: 23 } });
    expect(fake.registrations).toBe(1);

    // Another account of the same server: the same app, and a second channel.
    await connect('bob');
    expect(fake.registrations).toBe(1);
    const after = (await rest('/integrations')).json.filter((i: { platform: string }) => i.platform === 'MASTODON');
    expect(after.map((i: { handle: string }) => i.handle).sort()).toEqual([`@ann@${fake.domain}`, `@bob@${fake.domain}`]);
  });

  it('an agent starts it over MCP, naming the server: the link is the server\'s consent page', async () => {
    const mcp = new Client({ name: 'agent', version: '1.0.0' });
    await mcp.connect(new StreamableHTTPClientTransport(new URL(`${service.base}/mcp`), { requestInit: { headers: { 'x-api-key': ws.apiKey } } }));
    try {
      const result = await mcp.callTool({ name: 'connectIntegration', arguments: { platform: 'MASTODON', instance: `@ann@${fake.host}` } });
      expect(result.isError, JSON.stringify(result.content)).toBeFalsy();
      const link = new URL((result.structuredContent as { redirectUrl: string }).redirectUrl);
      expect(`${link.origin}${link.pathname}`).toBe(`${fake.url}/oauth/authorize`);
      const refused = await mcp.callTool({ name: 'connectIntegration', arguments: { platform: 'MASTODON', instance: '192.168.1.10' } });
      expect(refused.isError).toBe(true);
      expect(JSON.stringify(refused.content)).toMatch(/not a public internet address/);
    } finally {
      await mcp.close();
    }
  });

  it('without a server, its own page asks for it, then goes on to the server', async () => {
    const link = await rest('/integrations/connect', { method: 'POST', body: { platform: 'MASTODON' } });
    expect(link.status, link.text).toBe(200);
    expect(link.json.redirectUrl).toMatch(/\/connect\/mastodon\?state=/);
    const form = await fetch(link.json.redirectUrl);
    expect(await form.text()).toContain('name="instance"');
    const wrong = await fetch(link.json.redirectUrl, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: 'instance=not%20a%20server' });
    expect(wrong.status).toBe(400);
    expect(await wrong.text()).toContain('does not name a server');
    const going = await fetch(link.json.redirectUrl, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: `instance=${encodeURIComponent(fake.host)}` });
    const html = await going.text();
    const onward = /<a href="([^"]+)"/.exec(html)![1]!.replace(/&#38;/g, '&');
    expect(new URL(onward).origin).toBe(fake.url);
    const page = await followLinks(onward);
    expect(page.status, page.html).toBe(200);
  });

  it('refuses a server on a private address, and a server that forgot Postwise gets it registered again', async () => {
    const refused = await rest('/integrations/connect', { method: 'POST', body: { platform: 'MASTODON', instance: '10.1.2.3' } });
    expect(refused.status).toBe(400);
    expect(refused.json.message).toMatch(/not a public internet address/);
    fake.forgetApps();
    await connect('ann');
    expect(fake.registrations).toBe(2);
  });
});

describe('publishing', () => {
  it('publishes text with its content warning, visibility and language once, and a thread as replies', async () => {
    const channel = await connect('ann');
    const [root, part] = await publish(
      { content: 'Bonjour de Postwise', thread: [{ content: 'Et une réponse en dessous' }] },
      channel,
      { visibility: 'unlisted', spoilerText: 'About Postwise', langs: ['fr-CA'] },
    );
    const state = await settled(root!);
    expect(state, JSON.stringify(state)).toMatchObject({ status: 'PUBLISHED' });
    const status = fake.statuses.get(state.platformPostId!)!;
    expect(status).toMatchObject({ text: 'Bonjour de Postwise', visibility: 'unlisted', spoilerText: 'About Postwise', language: 'fr', inReplyToId: null });
    expect(state.releaseUrl).toBe(`${fake.url}/@ann/${status.id}`);
    expect(status.idempotencyKey).toBeTruthy();
    // The reply is seen by whom its post is; the content warning stays the post's.
    const reply = await settled(part!);
    expect(fake.statuses.get(reply.platformPostId!)).toMatchObject({ inReplyToId: status.id, visibility: 'unlisted', spoilerText: '', language: 'fr' });
  });

  it('refuses settings Mastodon cannot publish, saying which and what it takes, and creates nothing', async () => {
    const channel = await connect('ann');
    const before = await sql<{ n: number }[]>`SELECT count(*)::int AS n FROM posts`;
    for (const [settings, words] of [
      [{ visibility: 'followers' }, /On Mastodon \(.+\), visibility is public, unlisted, private \(followers only\) or direct \(mentioned people only\), not "followers"/],
      [{ spoilerText: 42 }, /spoilerText, the content warning, is text/],
      [{ sensitive: 'yes' }, /sensitive is true or false/],
      [{ focalPoints: [{ x: 2, y: 0 }] }, /focalPoints is a list/],
    ] as const) {
      const refused = await rest('/posts', {
        method: 'POST',
        body: { rows: [{ content: 'Checked first', overrides: [{ integrationId: channel, settings }] }], shared: { selectedIntegrations: [channel] }, postAction: 'PUBLISH_NOW' },
      });
      expect(refused.status, refused.text).toBe(400);
      expect(refused.json.code).toBe('VALIDATION_ERROR');
      expect(refused.json.message).toMatch(/^rows\[0\]\.overrides\[0\]\.settings: /);
      expect(refused.json.message).toMatch(words);
    }
    expect(await sql<{ n: number }[]>`SELECT count(*)::int AS n FROM posts`).toEqual(before);
    // A change to a scheduled post is checked the same way.
    const draft = await rest('/posts', { method: 'POST', body: { rows: [{ content: 'A draft' }], shared: { selectedIntegrations: [channel] }, postAction: 'DRAFT' } });
    const [schedule] = await sql<{ id: string }[]>`SELECT id FROM schedules WHERE post_id = ${draft.json.postId}`;
    const edited = await rest(`/posts/${draft.json.postId}`, { method: 'PATCH', body: { schedules: [{ id: schedule!.id, settings: { visibility: 'everyone' } }] } });
    expect(edited.status, edited.text).toBe(400);
    expect(edited.json.message).toMatch(/^body\.schedules\[0\]\.settings: On Mastodon/);
  });

  /** Runs a schedule waiting for its retry now rather than after the engine's backoff. */
  const retryNow = async (id: string, retries = 1) => {
    const waiting = await eventually(() => scheduleState(id), (state) => state.retryCount === retries && state.status === 'SCHEDULED', 30_000);
    expect(waiting.status).toBe('SCHEDULED');
    await sql`SELECT graphile_worker.add_job('publish-schedule', json_build_object('scheduleId', ${id}::uuid), job_key := ${`publish-schedule:${id}`})`;
    return settled(id);
  };
  /** The sends of statuses since the `from`th request (a faulted one has no body: it was answered before it was read). */
  const sends = (from: number) => fake.requests.slice(from).filter((request) => request.method === 'POST' && request.path === '/api/v1/statuses');
  const sent = (from: number, text: string) => sends(from).filter((request) => (request.body as { status?: string } | undefined)?.status === text);

  it('an answer lost after the status was made is found among the account\'s statuses, after the key\'s hour too: not sent again', async () => {
    const channel = await connect('ann');
    // The instance has forgotten the key by the retry (it keeps one an hour): only reading the account settles it.
    fake.idempotencyTtlMs = 0;
    try {
      const from = fake.requests.length;
      fake.failNext('statuses', 'drop');
      const [id] = await publish({ content: 'Sent once, whatever the network did' }, channel);
      const state = await retryNow(id!);
      expect(state.status).toBe('PUBLISHED');
      const made = fake.statusesOf('ann').filter((status) => status.text === 'Sent once, whatever the network did');
      expect(made).toHaveLength(1);
      expect(state.platformPostId).toBe(made[0]!.id);
      expect(sends(from)).toHaveLength(1);
      // It was read, not guessed: the account's statuses, then the candidate's source.
      expect(fake.requests.some((request) => request.path === `/api/v1/statuses/${made[0]!.id}/source`)).toBe(true);
    } finally {
      fake.idempotencyTtlMs = 3600_000;
    }
  });

  it('a send answered 503 (nothing made) is not found, and is sent again under the same key: one status', async () => {
    const channel = await connect('ann');
    const from = fake.requests.length;
    fake.failNext('statuses', { status: 503 });
    const [id] = await publish({ content: 'Refused once by a busy server' }, channel);
    const state = await retryNow(id!);
    expect(state.status).toBe('PUBLISHED');
    expect(fake.statusesOf('ann').filter((status) => status.text === 'Refused once by a busy server')).toHaveLength(1);
    const keys = sends(from).map((request) => request.headers['idempotency-key']);
    expect(keys).toHaveLength(2);
    expect(keys[0]).toBe(keys[1]);
  });

  it('a send the instance holds unanswered ends at the platform timeout; the status it then made is found, not sent again', async () => {
    const channel = await connect('ann');
    const from = fake.requests.length;
    const release = fake.holdNext('statuses');
    const [id] = await publish({ content: 'Held by a slow server' }, channel);
    const waiting = await eventually(() => scheduleState(id!), (state) => state.retryCount === 1, 30_000);
    expect(waiting.failureReason).toMatch(/did not answer in time/);
    release(); // the server gets to it after all, long after the client gave up
    await eventually(async () => fake.statusesOf('ann').filter((status) => status.text === 'Held by a slow server'), (made) => made.length === 1);
    const state = await retryNow(id!);
    expect(state.status).toBe('PUBLISHED');
    expect(sends(from)).toHaveLength(1);
    expect(fake.statusesOf('ann').filter((status) => status.text === 'Held by a slow server')).toHaveLength(1);
  });

  it('a first comment whose answer was lost is found, not sent again; deleting the post deletes both statuses', async () => {
    const channel = await connect('ann');
    const from = fake.requests.length;
    fake.failNext('statuses', 'answer');
    fake.failNext('statuses', 'drop');
    const created = await rest('/posts', {
      method: 'POST',
      body: { rows: [{ content: 'A post with a comment below', firstComment: 'The comment below it' }], shared: { selectedIntegrations: [channel] }, postAction: 'PUBLISH_NOW' },
    });
    expect(created.status, created.text).toBe(201);
    const [{ id }] = await sql<[{ id: string }]>`SELECT id FROM schedules WHERE post_id = ${created.json.postId}`;
    const state = await retryNow(id!);
    expect(state.status).toBe('PUBLISHED');
    expect(state.failureReason).toBeNull();
    expect(sent(from, 'A post with a comment below')).toHaveLength(1);
    expect(sent(from, 'The comment below it')).toHaveLength(1);
    const [comment] = fake.statusesOf('ann').filter((status) => status.text === 'The comment below it');
    expect(comment!.inReplyToId).toBe(state.platformPostId);
    const [row] = await sql<{ firstCommentPostId: string }[]>`SELECT first_comment_post_id FROM schedules WHERE id = ${id!}`;
    expect(row!.firstCommentPostId).toBe(comment!.id);

    // A reply outlives its parent on Mastodon: both are deleted.
    const deleted = await rest(`/schedules/${id}`, { method: 'DELETE' });
    expect(deleted.status, deleted.text).toBe(200);
    expect(fake.statuses.has(state.platformPostId!)).toBe(false);
    expect(fake.statuses.has(comment!.id)).toBe(false);
  });

  it('a thread part rate limited waits for X-RateLimit-Reset, then, retried on its own, replies under the part before it', async () => {
    const channel = await connect('ann');
    fake.failNext('statuses', 'answer');
    // A reset well past the engine's own backoff: the retry waits for it.
    const reset = new Date(Date.now() + 10 * 60_000);
    fake.failNext('statuses', { status: 429, reset });
    const [root, part] = await publish({ content: 'First of two', thread: [{ content: 'Second of two, retried' }] }, channel);
    const first = await settled(root!);
    expect(first.status).toBe('PUBLISHED');
    const [waiting] = await eventually(
      () => sql<{ nextAttemptAt: Date | null; retryCount: number }[]>`SELECT next_attempt_at, retry_count FROM schedules WHERE id = ${part!}`,
      (rows) => rows[0]?.retryCount === 1,
      30_000,
    );
    expect(Math.abs(waiting!.nextAttemptAt!.getTime() - reset.getTime())).toBeLessThan(5_000);
    const second = await retryNow(part!);
    expect(second.status, second.failureReason ?? '').toBe('PUBLISHED');
    expect(fake.statuses.get(second.platformPostId!)!.inReplyToId).toBe(first.platformPostId);
  });

  it('a refusal by the instance fails with its words, and its limits are read again at once; a revoked token marks the channel', async () => {
    const channel = await connect('ann');
    const maxCharacters = async () => (await limitsOf(channel)).maxCharacters;
    expect(await maxCharacters()).toBe(500);
    fake.limits.max_characters = 10;
    try {
      const [id] = await publish({ content: 'Longer than this instance now takes' }, channel);
      const failed = await settled(id!);
      expect(failed.status).toBe('FAILED');
      expect(failed.failureReason).toMatch(/character limit of 10/);
      // Read again after the refusal, not at the next daily reading: the next post is refused when it is made.
      await eventually(maxCharacters, (limit) => limit === 10, 15_000);
      const refused = await rest('/posts', { method: 'POST', body: { rows: [{ content: 'Also longer than ten' }], shared: { selectedIntegrations: [channel] }, postAction: 'PUBLISH_NOW' } });
      expect(refused.status).toBe(400);
      expect(refused.json).toMatchObject({ code: 'CONTENT_TOO_LONG', message: expect.stringMatching(/20 of 10 characters/) });
    } finally {
      fake.limits.max_characters = 500;
      await readLimitsAgain(channel, (limits) => limits.maxCharacters === 500);
    }

    // The member revokes Postwise's access in the instance's settings.
    for (const token of fake.tokens.values()) if (token.accountId === fake.accounts.get('ann')!.id) token.revokedAt = new Date();
    const [next] = await publish({ content: 'After the token was revoked' }, channel);
    const refused = await settled(next!);
    expect(refused.status).toBe('FAILED');
    const [row] = await sql<{ tokenStatus: string }[]>`SELECT token_status FROM integrations WHERE id = ${channel}`;
    expect(row!.tokenStatus).toBe('REVOKED');
  });
});

/** An image uploaded through the uploads API: its media id. */
const upload = async (bytes: Buffer, fileType: string) => (await uploadImage(service.api, ws.apiKey, bytes, fileType)).mediaId;

describe('the server\'s limits', () => {
  it('are read again each day: a server that raises its limit has posts checked by the new one', async () => {
    const channel = await connect('ann');
    const long = 'x'.repeat(600);
    const refused = await rest('/posts', { method: 'POST', body: { rows: [{ content: long }], shared: { selectedIntegrations: [channel] }, postAction: 'DRAFT' } });
    expect(refused.status).toBe(400);
    expect(refused.json.message).toMatch(/600 of 500 characters/);
    fake.limits.max_characters = 1000;
    try {
      await sql`SELECT graphile_worker.add_job('refresh-instance-limits', '{}'::json)`;
      await eventually(async () => (await rest('/integrations')).json.find((i: { id: string }) => i.id === channel).limits.maxCharacters, (limit) => limit === 1000, 15_000);
      const accepted = await rest('/posts', { method: 'POST', body: { rows: [{ content: long }], shared: { selectedIntegrations: [channel] }, postAction: 'DRAFT' } });
      expect(accepted.status, accepted.text).toBe(201);
    } finally {
      fake.limits.max_characters = 500;
    }
  });
});

describe('images', () => {
  it('uploads each image with its alt text, waits for one the server still processes, and attaches them in order', async () => {
    const channel = await connect('ann');
    const first = await upload(await photo(1200, 800), 'image/jpeg');
    const second = await upload(await photo(300, 300, 'png'), 'image/png');
    fake.processingMs = 1200;
    const created = await rest('/posts', {
      method: 'POST',
      body: {
        rows: [
          {
            content: 'Two pictures',
            media: [{ id: first, altText: 'A wide gradient' }, { id: second, altText: 'A square one' }],
            overrides: [{ integrationId: channel, settings: { sensitive: true, focalPoints: [{ x: -0.5, y: 0.25 }, null] } }],
          },
        ],
        shared: { selectedIntegrations: [channel] },
        postAction: 'PUBLISH_NOW',
      },
    });
    expect(created.status, created.text).toBe(201);
    const [schedule] = await sql<{ id: string }[]>`SELECT id FROM schedules WHERE post_id = ${created.json.postId}`;
    const state = await settled(schedule!.id);
    fake.processingMs = 0;
    expect(state, JSON.stringify(state)).toMatchObject({ status: 'PUBLISHED' });
    const status = fake.statuses.get(state.platformPostId!)!;
    const media = status.mediaIds.map((id) => fake.media.get(id)!);
    expect(media.map((item) => [item.description, item.mimeType, item.focus])).toEqual([
      ['A wide gradient', 'image/jpeg', { x: -0.5, y: 0.25 }],
      ['A square one', expect.stringMatching(/^image\//), null],
    ]);
    expect(status.sensitive).toBe(true);
    // The second was still processing when it was sent: polled until ready (206, then 200), then attached.
    expect(fake.requests.some((request) => request.method === 'GET' && request.path.startsWith('/api/v1/media/') && request.status === 206)).toBe(true);
  });

  it('sends the version of an image the server takes: a server without WebP gets a transparent PNG itself', async () => {
    const channel = await connect('ann');
    const types = fake.limits.supported_mime_types;
    fake.limits.supported_mime_types = types.filter((type) => type !== 'image/webp');
    try {
      await readLimitsAgain(channel, (limits) => !limits.imageTypes.includes('image/webp'));
      // Transparent: its variant is a WebP, which this server would refuse.
      const png = await sharp({ create: { width: 320, height: 200, channels: 4, background: { r: 20, g: 90, b: 200, alpha: 0.5 } } }).png().toBuffer();
      const media = await upload(png, 'image/png');
      const [variant] = await sql<{ variants: string }[]>`SELECT (variants->'source'->>'objectKey') AS variants FROM media WHERE id = ${media}`;
      expect(variant!.variants).toMatch(/\.webp$/);
      const created = await rest('/posts', {
        method: 'POST',
        body: { rows: [{ content: 'A see-through picture', media: [{ id: media, altText: 'Half-transparent blue' }] }], shared: { selectedIntegrations: [channel] }, postAction: 'PUBLISH_NOW' },
      });
      expect(created.status, created.text).toBe(201);
      const [schedule] = await sql<{ id: string }[]>`SELECT id FROM schedules WHERE post_id = ${created.json.postId}`;
      const state = await settled(schedule!.id);
      expect(state, JSON.stringify(state)).toMatchObject({ status: 'PUBLISHED' });
      expect(fake.statuses.get(state.platformPostId!)!.mediaIds.map((id) => fake.media.get(id)!.mimeType)).toEqual(['image/png']);
    } finally {
      fake.limits.supported_mime_types = types;
      await readLimitsAgain(channel, (limits) => limits.imageTypes.includes('image/webp'));
    }
  });
});

describe('checking and disconnecting', () => {
  it('"refresh now" checks the token with the instance (tokens do not expire there); a revoked one marks the channel', async () => {
    const channel = await connect('bob');
    const checks = () => fake.requests.filter((request) => request.path === '/api/v1/accounts/verify_credentials').length;
    const before = checks();
    expect(await ws.admin('refreshIntegration', { id: channel })).toMatchObject({ tokenStatus: 'VALID', connectionErrorCode: null });
    expect(checks()).toBe(before + 1);
    for (const token of fake.tokens.values()) if (token.accountId === fake.accounts.get('bob')!.id) token.revokedAt = new Date();
    expect(await ws.admin('refreshIntegration', { id: channel })).toMatchObject({ tokenStatus: 'REVOKED', connectionErrorCode: 'ACCESS_TOKEN_REVOKED' });
  });

  it('revokes the token on the instance', async () => {
    const channel = await connect('bob');
    const token = [...fake.tokens.values()].find((candidate) => candidate.accountId === fake.accounts.get('bob')!.id && !candidate.revokedAt)!;
    await ws.admin('disconnectIntegration', { id: channel });
    await eventually(async () => fake.revokedTokens.has(token.value), Boolean, 10_000);
    expect(fake.revokedTokens.has(token.value)).toBe(true);
  });
});

describe('the dashboard', () => {
  let browser: Browser | undefined;
  afterAll(async () => browser?.close());

  it('connects by naming the server on the channels page, through the server\'s own consent page', async () => {
    browser = await launchBrowser();
    const credentials = await setOwnerPassword(service, ws);
    const page = await newPage(browser, { baseURL: service.base });
    await signIn(page, service.base, credentials);
    await page.goto('/channels');
    const section = page.getByRole('region', { name: 'Connect a Mastodon account' });
    await section.getByLabel('Your server').fill('not a server');
    await section.getByRole('button', { name: 'Continue to your Mastodon server' }).click();
    await section.getByText(/does not name a server/).waitFor();
    await checkAccessibility(page, 'the Mastodon connect form with an error');
    fake.autoConsent(null);
    fake.signInAs('bob');
    await section.getByLabel('Your server').fill(fake.host);
    await Promise.all([page.waitForURL((url) => url.origin === fake.url), section.getByRole('button', { name: 'Continue to your Mastodon server' }).click()]);
    await Promise.all([page.waitForURL((url) => url.pathname === '/oauth/mastodon/callback'), page.getByRole('button', { name: 'Authorize' }).click()]);
    await page.getByRole('heading', { name: 'Mastodon account connected' }).waitFor();
    expect(await page.locator('body').innerText()).toContain(`@bob@${fake.domain}`);
    expect(pageErrors(page)).toEqual([]);
    fake.autoConsent('ann');
  });
});
