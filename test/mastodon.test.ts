import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser } from 'playwright-core';
import { checkAccessibility, launchBrowser, newPage, pageErrors, setOwnerPassword, signIn } from './support/browser.js';
import { createHash } from 'node:crypto';
import { photo } from './support/images.js';
import { startFakeMastodon, type FakeMastodon } from './support/mastodon.js';
import { call, eventually, isSettled, startTestService, type TestService, type Workspace } from './support/service.js';

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
  service = await startTestService({ mediaFetchAllowHosts: [fake.host], publishStaleMs: 3000, publishRecoveryIntervalMs: 200 }, { api: true, worker: true });
  ws = await service.workspace({ plan: 'business' });
  sql = postgres(service.databaseUrl, { max: 2, onnotice: () => {}, transform: postgres.camel });
});

afterAll(async () => {
  await sql?.end();
  await service?.stop();
  await fake?.close();
});

const rest = (path: string, options: { method?: string; body?: unknown } = {}) => call(`${service.api}${path}`, { key: ws.apiKey, ...options });

/** Follows a link as a browser would, through the instance's (auto) consent and back to this service's callback page. */
async function follow(url: string): Promise<{ status: number; html: string }> {
  let next = url;
  for (let hop = 0; hop < 6; hop++) {
    const answer = await fetch(next, { redirect: 'manual' });
    const location = answer.headers.get('location');
    if (answer.status >= 300 && answer.status < 400 && location) {
      next = new URL(location, next).href;
      continue;
    }
    return { status: answer.status, html: await answer.text() };
  }
  throw new Error('too many redirects');
}

async function connect(account = 'ann'): Promise<string> {
  fake.autoConsent(account);
  const link = await rest('/integrations/connect', { method: 'POST', body: { platform: 'MASTODON', instance: fake.host } });
  expect(link.status, link.text).toBe(200);
  const page = await follow(link.json.redirectUrl);
  expect(page.status, page.html).toBe(200);
  const id = /<code>([0-9a-f-]{36})<\/code>/.exec(page.html)![1]!;
  return id;
}

async function publish(row: Record<string, unknown>, integrationId: string, settings?: Record<string, unknown>) {
  const created = await rest('/posts', {
    method: 'POST',
    body: { rows: [row], shared: { selectedIntegrations: [integrationId], ...(settings && { settings }) }, postAction: 'PUBLISH_NOW' },
  });
  expect(created.status, created.text).toBe(201);
  const schedules = await sql<{ id: string }[]>`SELECT id FROM schedules WHERE post_id = ${created.json.postId} ORDER BY thread_order`;
  return schedules.map((schedule) => schedule.id);
}

const scheduleState = async (id: string) =>
  (await sql<{ status: string; platformPostId: string | null; releaseUrl: string | null; failureReason: string | null; retryCount: number }[]>`
    SELECT status, platform_post_id, release_url, failure_reason, retry_count FROM schedules WHERE id = ${id}`)[0]!;
const settled = (id: string) => eventually(() => scheduleState(id), isSettled, 30_000);

describe('connecting', () => {
  it('names the server: registers Postwise there once, asks with PKCE, and keeps the account with its handle and the server\'s limits', async () => {
    const link = await rest('/integrations/connect', { method: 'POST', body: { platform: 'MASTODON', instance: fake.host } });
    expect(link.status, link.text).toBe(200);
    const consent = new URL(link.json.redirectUrl);
    expect(consent.origin).toBe(fake.url);
    expect(consent.pathname).toBe('/oauth/authorize');
    expect(consent.searchParams.get('code_challenge_method')).toBe('S256');
    expect(consent.searchParams.get('scope')).toBe('read:accounts read:statuses write:statuses write:media');
    const page = await follow(link.json.redirectUrl);
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
    const page = await follow(onward);
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
      { content: 'Hello from Postwise', thread: [{ content: 'And a reply below it' }] },
      channel,
      undefined,
    );
    const state = await settled(root!);
    expect(state, JSON.stringify(state)).toMatchObject({ status: 'PUBLISHED' });
    const status = fake.statuses.get(state.platformPostId!)!;
    expect(status.text).toBe('Hello from Postwise');
    expect(state.releaseUrl).toBe(`${fake.url}/@ann/${status.id}`);
    expect(status.idempotencyKey).toBeTruthy();
    if (part) {
      const reply = await settled(part);
      expect(fake.statuses.get(reply.platformPostId!)!.inReplyToId).toBe(status.id);
    }
  });

  it('an answer lost after the status was made is sent again with the same key: one status', async () => {
    const channel = await connect('ann');
    const before = fake.statusesOf('ann').length;
    fake.failNext('statuses', 'drop');
    const [id] = await publish({ content: 'Sent once, whatever the network did' }, channel);
    // The unanswered send waits for its retry (the engine's backoff); the retry is run now rather than in a minute.
    const waiting = await eventually(() => scheduleState(id!), (state) => state.retryCount === 1, 30_000);
    expect(waiting.status).toBe('SCHEDULED');
    await sql`SELECT graphile_worker.add_job('publish-schedule', json_build_object('scheduleId', ${id!}::uuid), job_key := ${`publish-schedule:${id!}`})`;
    const state = await settled(id!);
    expect(state.status).toBe('PUBLISHED');
    const made = fake.statusesOf('ann').filter((status) => status.text === 'Sent once, whatever the network did');
    expect(made).toHaveLength(1);
    expect(fake.statusesOf('ann').length).toBe(before + 1);
    const keys = fake.requests.filter((request) => request.method === 'POST' && request.path === '/api/v1/statuses' && JSON.stringify(request.body).includes('Sent once')).map((request) => request.headers['idempotency-key']);
    expect(keys.length).toBeGreaterThanOrEqual(2);
    expect(new Set(keys).size).toBe(1);
  });

  it('a refusal by the instance fails with its words; a revoked token marks the channel', async () => {
    const channel = await connect('ann');
    fake.limits.max_characters = 10;
    const [id] = await publish({ content: 'Longer than this instance now takes' }, channel);
    const failed = await settled(id!);
    fake.limits.max_characters = 500;
    expect(failed.status).toBe('FAILED');
    expect(failed.failureReason).toMatch(/character limit of 10/);

    // The member revokes Postwise's access in the instance's settings.
    for (const token of fake.tokens.values()) if (token.accountId === fake.accounts.get('ann')!.id) token.revokedAt = new Date();
    const [next] = await publish({ content: 'After the token was revoked' }, channel);
    const refused = await settled(next!);
    expect(refused.status).toBe('FAILED');
    const [row] = await sql<{ tokenStatus: string }[]>`SELECT token_status FROM integrations WHERE id = ${channel}`;
    expect(row!.tokenStatus).toBe('REVOKED');
  });
});

const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');

/** An image uploaded through the uploads API, its variants made by the worker. */
async function upload(bytes: Buffer, fileType: string): Promise<string> {
  const started = await rest('/uploads/initiate', { method: 'POST', body: { scenarioId: 'post_attachments', fileName: 'image', fileType, fileSize: bytes.length, checksum: sha256(bytes) } });
  expect(started.status, started.text).toBe(200);
  expect((await fetch(started.json.signedUrl, { method: 'PUT', body: new Uint8Array(bytes), headers: started.json.requiredHeaders })).status).toBe(200);
  const complete = () => rest('/uploads/complete', { method: 'POST', body: { uploadId: started.json.uploadId, checksum: sha256(bytes) } });
  const done = await eventually(complete, (answer) => answer.json.variantsStatus !== 'pending', 20_000);
  expect(done.json, done.text).toMatchObject({ variantsStatus: 'ready' });
  return done.json.mediaId as string;
}

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
        rows: [{ content: 'Two pictures', media: [{ id: first, altText: 'A wide gradient' }, { id: second, altText: 'A square one' }] }],
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
    expect(media.map((item) => [item.description, item.mimeType])).toEqual([
      ['A wide gradient', 'image/jpeg'],
      ['A square one', expect.stringMatching(/^image\//)],
    ]);
    // The second was still processing when it was sent: polled until ready (206, then 200), then attached.
    expect(fake.requests.some((request) => request.method === 'GET' && request.path.startsWith('/api/v1/media/') && request.status === 206)).toBe(true);
  });
});

describe('disconnecting', () => {
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
