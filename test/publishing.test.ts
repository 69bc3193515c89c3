import { randomBytes, randomUUID } from 'node:crypto';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { recordKey } from '../src/platforms/bluesky.js';
import { PlatformError, platforms } from '../src/platforms/index.js';
import { parseEncryptionKey, secretsFrom } from '../src/auth/secrets.js';
import { createAccount, postsOf, type TestAccount } from './support/bluesky.js';
import { admin } from './support/processes.js';
import { call, eventually, isSettled, jobsLeftUnder, startTestService, type TestService, type Workspace } from './support/service.js';

/**
 * The publishing engine against a real PDS on loopback (test/support/pds.ts): connecting through the HTML form as a
 * browser does, publishing through the worker, reading the records back, and the faults that must not publish twice.
 */

let service: TestService;
let ws: Workspace;
let sql: postgres.Sql;
let account: TestAccount;
let integrationId: string;

beforeAll(async () => {
  // Recovery is quick here so the crash test need not wait minutes; no publish takes 3 s on loopback.
  service = await startTestService({ publishStaleMs: 3000, publishRecoveryIntervalMs: 200 }, { api: true, worker: true });
  ws = await service.workspace({ plan: 'business' });
  sql = postgres(service.databaseUrl, { max: 2, onnotice: () => {}, transform: postgres.camel });
  account = await createAccount();
});
afterAll(async () => {
  await sql?.end();
  await service?.stop();
});

const rest = (path: string, options: { method?: string; body?: unknown } = {}) => call(`${service.api}${path}`, { key: ws.apiKey, ...options });

/** A form POST as a browser sends it. */
const submit = (url: string, fields: Record<string, string>) =>
  fetch(url, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams(fields) });

async function connectLink(workspace = ws) {
  const answer = await call(`${service.api}/integrations/connect`, { method: 'POST', key: workspace.apiKey, body: { platform: 'BLUESKY' } });
  expect(answer.status, answer.text).toBe(200);
  return answer.json.redirectUrl as string;
}

/** Connects `who` through the connect page; returns the integration's id. */
async function connectThroughForm(who: TestAccount, workspace = ws) {
  const url = await connectLink(workspace);
  const done = await submit(url, { handle: who.handle, appPassword: who.appPassword, serviceUrl: who.pdsUrl });
  expect(done.status, await done.clone().text()).toBe(200);
  const id = (await done.text()).match(/<code>([0-9a-f-]{36})<\/code>/)![1]!;
  return id;
}

async function createPost(row: Record<string, unknown>, integrations: string[], postAction = 'PUBLISH_NOW') {
  const created = await rest('/posts', { method: 'POST', body: { rows: [row], shared: { selectedIntegrations: integrations }, postAction } });
  expect(created.status, created.text).toBe(201);
  return sql<{ id: string; threadOrder: number; createdAt: Date }[]>`
    SELECT id, thread_order, created_at FROM schedules WHERE post_id = ${created.json.postId} ORDER BY thread_order`;
}

/** A thread of `parts`, a year ahead: its job does not run while a test plays the worker. */
const farThread = (content: string, parts: string[]) =>
  createPost({ content, scheduledAt: new Date(Date.now() + 365 * 86_400_000).toISOString(), thread: parts.map((part) => ({ content: part })) }, [integrationId], 'SCHEDULED_TIME');

/** What a worker leaves once a thread's first post is out (`ago` before now): its record on the PDS, the schedule PUBLISHED, no job. */
async function firstPostOut(root: { id: string; createdAt: Date }, text: string, ago = '0 seconds') {
  const rkey = recordKey({ scheduleId: root.id, createdAt: root.createdAt, kind: 'post' });
  const record = { $type: 'app.bsky.feed.post', text, createdAt: new Date().toISOString() };
  const created = (await account.agent.com.atproto.repo.createRecord({ repo: account.did, collection: 'app.bsky.feed.post', rkey, record })).data;
  await sql`
    UPDATE schedules SET status = 'PUBLISHED', published_at = now() - ${ago}::interval, last_attempt = now() - ${ago}::interval,
      platform_post_id = ${created.uri} WHERE id = ${root.id}`;
  await sql`SELECT graphile_worker.remove_job(${`publish-schedule:${root.id}`})`;
  return created;
}

interface ScheduleState {
  id: string;
  status: string;
  platformPostId: string | null;
  releaseUrl: string | null;
  publishedAt: Date | null;
  failureReason: string | null;
  failureDetail: any;
  retryCount: number;
  lastAttempt: Date | null;
}

/** Waits until every schedule of `ids` has left SCHEDULED and PUBLISHING. */
async function settled(ids: string[], timeoutMs = 20_000): Promise<ScheduleState[]> {
  const started = Date.now();
  for (;;) {
    const rows = await sql<ScheduleState[]>`
      SELECT id, status, platform_post_id, release_url, published_at, failure_reason, failure_detail, retry_count, last_attempt
      FROM schedules WHERE id = ANY(${ids}::uuid[]) ORDER BY thread_order`;
    if (rows.every(isSettled) || Date.now() - started > timeoutMs) return rows;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

const rkeyOf = (uri: string) => uri.split('/').at(-1)!;
const getRecord = async (uri: string) =>
  (await account.agent.com.atproto.repo.getRecord({ repo: account.did, collection: 'app.bsky.feed.post', rkey: rkeyOf(uri) })).data;
/** The UTF-8 byte range of `part` in `text`, as facets index it. */
/** Facets as compared here: without their `$type`, which the lexicon lets a client add or leave out. */
const facetsOf = (record: any) => (record.facets ?? []).map(({ index, features }: any) => ({ index, features }));
const byteRange = (text: string, part: string) => {
  const start = Buffer.byteLength(text.slice(0, text.indexOf(part)));
  return { byteStart: start, byteEnd: start + Buffer.byteLength(part) };
};

describe('connecting a Bluesky account', () => {
  it('through the connect page: the form, wrong credentials, success, and the link refused once used', async () => {
    const url = await connectLink();
    expect(url).toMatch(new RegExp(`^${service.base}/connect/bluesky\\?state=`));
    const page = await fetch(url);
    expect(page.status).toBe(200);
    const html = await page.text();
    expect(html).toContain('name="handle"');
    expect(html).toContain('name="appPassword"');

    const wrong = await submit(url, { handle: account.handle, appPassword: 'wrong-password', serviceUrl: account.pdsUrl });
    expect(wrong.status).toBe(400);
    expect(await wrong.text()).toContain('not accepted');
    expect((await rest('/integrations')).json).toEqual([]);

    const done = await submit(url, { handle: account.handle, appPassword: account.appPassword, serviceUrl: account.pdsUrl });
    expect(done.status).toBe(200);
    expect(await done.text()).toContain('connected');
    const [integration] = (await rest('/integrations')).json;
    expect(integration).toMatchObject({ platform: 'BLUESKY', name: account.handle, tokenStatus: 'VALID', connectStatus: 'ACTIVE', connectionErrorCode: null });
    integrationId = integration.id;
    const [stored] = await sql<{ accountId: string; credentials: Buffer }[]>`SELECT account_id, credentials FROM integrations WHERE id = ${integrationId}`;
    expect(stored!.accountId).toBe(account.did);
    // Sealed: neither the app password nor a token is in the column as text.
    expect(stored!.credentials.toString('latin1')).not.toContain(account.appPassword);
    expect(stored!.credentials.toString('latin1')).not.toContain('eyJ');

    const replayed = await submit(url, { handle: account.handle, appPassword: account.appPassword, serviceUrl: account.pdsUrl });
    expect(replayed.status).toBe(400);
    expect(await replayed.text()).toContain('used already');
    expect((await fetch(url)).status).toBe(400);
  });

  it('refuses forged and altered states, and platforms that cannot be connected', async () => {
    const url = new URL(await connectLink());
    const [payload, signature] = url.searchParams.get('state')!.split('.');
    const forged = JSON.parse(Buffer.from(payload!, 'base64url').toString());
    forged.e += 3_600_000;
    const altered = `${Buffer.from(JSON.stringify(forged)).toString('base64url')}.${signature}`;
    for (const state of [altered, `${payload}.${randomBytes(32).toString('base64url')}`, 'nonsense', '']) {
      const answer = await fetch(`${service.base}/connect/bluesky?state=${encodeURIComponent(state)}`);
      expect(answer.status, state).toBe(400);
      expect(await answer.text()).toContain('not valid');
    }
    const linkedin = await rest('/integrations/connect', { method: 'POST', body: { platform: 'LINKEDIN' } });
    expect(linkedin.status).toBe(400);
    // This service has no LinkedIn client configured (test/linkedin.test.ts connects LinkedIn).
    expect(linkedin.json).toMatchObject({ code: 'VALIDATION_ERROR', message: expect.stringContaining('set LINKEDIN_CLIENT_ID and LINKEDIN_CLIENT_SECRET') });
    const unknown = await rest('/integrations/connect', { method: 'POST', body: { platform: 'MYSPACE' } });
    expect(unknown.json.message).toBe('platform: unknown platform "MYSPACE"; supported: BLUESKY, MASTODON');
  });

  it('refuses a link past its 15 minutes, even signed by this service', async () => {
    const url = new URL(await connectLink());
    const [payload] = url.searchParams.get('state')!.split('.');
    const state = JSON.parse(Buffer.from(payload!, 'base64url').toString());
    state.e = Date.now() - 1000;
    const expiredPayload = Buffer.from(JSON.stringify(state)).toString('base64url');
    const secrets = secretsFrom(parseEncryptionKey(service.service.core.app.config.encryptionKey!));
    const expired = `${service.base}/connect/bluesky?state=${encodeURIComponent(`${expiredPayload}.${secrets.sign(expiredPayload)}`)}`;
    const page = await fetch(expired);
    expect(page.status).toBe(400);
    expect(await page.text()).toContain('expired');
    const posted = await submit(expired, { handle: account.handle, appPassword: account.appPassword, serviceUrl: account.pdsUrl });
    expect(posted.status).toBe(400);
    expect(await posted.text()).toContain('expired');
  });

  it('from a shell: npm run admin -- connect-bluesky reconnects the same account', async () => {
    const env = { DATABASE_URL: service.databaseUrl, ENCRYPTION_KEY: service.service.core.app.config.encryptionKey! };
    const bad = await admin(['connect-bluesky', '--workspace', ws.workspaceId, '--handle', account.handle, '--app-password', 'nope', '--service-url', account.pdsUrl], env);
    expect(bad.code).toBe(1);
    expect(bad.json.code).toBe('VALIDATION_ERROR');
    const done = await admin(
      ['connect-bluesky', '--workspace', ws.workspaceId, '--handle', account.handle, '--app-password', account.appPassword, '--service-url', account.pdsUrl],
      env,
    );
    expect(done.code).toBe(0);
    expect(done.json).toMatchObject({ id: integrationId, platform: 'BLUESKY', tokenStatus: 'VALID' });
    expect((await rest('/integrations')).json).toHaveLength(1);
  }, 60_000);
});

describe('publishing', () => {
  it('publishes a post with a link, a mention and a hashtag, its thread and its first comment, read back from the PDS', async () => {
    const content = `Grüße @${account.handle} — see https://example.com/a?b=c #postwise 🎉`;
    const schedules = await createPost(
      {
        content,
        thread: [{ content: 'Part one, a reply' }, { content: 'Part two #thread' }],
        firstComment: 'First comment https://example.org',
        overrides: [{ integrationId, settings: { langs: ['de', 'en'] } }],
      },
      [integrationId],
    );
    expect(schedules).toHaveLength(3);
    const states = await settled(schedules.map((s) => s.id));
    for (const state of states) {
      expect(state, JSON.stringify(state)).toMatchObject({ status: 'PUBLISHED', failureReason: null });
      expect(state.platformPostId).toMatch(new RegExp(`^at://${account.did}/app.bsky.feed.post/`));
      expect(state.releaseUrl).toBe(`https://bsky.app/profile/${account.handle}/post/${rkeyOf(state.platformPostId!)}`);
      expect(state.publishedAt).toBeInstanceOf(Date);
    }
    // The record keys are the ones derived from the schedules.
    expect(states.map((s) => rkeyOf(s.platformPostId!))).toEqual(schedules.map((s) => recordKey({ scheduleId: s.id, createdAt: s.createdAt, kind: 'post' })));

    const root = await getRecord(states[0]!.platformPostId!);
    const value = root.value as any;
    expect(value.text).toBe(content);
    expect(value.langs).toEqual(['de', 'en']);
    expect(value.reply).toBeUndefined();
    expect(facetsOf(value)).toEqual(
      expect.arrayContaining([
        { index: byteRange(content, `@${account.handle}`), features: [{ $type: 'app.bsky.richtext.facet#mention', did: account.did }] },
        { index: byteRange(content, 'https://example.com/a?b=c'), features: [{ $type: 'app.bsky.richtext.facet#link', uri: 'https://example.com/a?b=c' }] },
        { index: byteRange(content, '#postwise'), features: [{ $type: 'app.bsky.richtext.facet#tag', tag: 'postwise' }] },
      ]),
    );
    expect(facetsOf(value)).toHaveLength(3);

    const one = await getRecord(states[1]!.platformPostId!);
    const two = await getRecord(states[2]!.platformPostId!);
    const rootRef = { uri: root.uri, cid: root.cid };
    expect((one.value as any).reply).toEqual({ root: rootRef, parent: rootRef });
    expect((two.value as any).reply).toEqual({ root: rootRef, parent: { uri: one.uri, cid: one.cid } });
    expect(facetsOf(two.value)).toEqual([{ index: byteRange('Part two #thread', '#thread'), features: [{ $type: 'app.bsky.richtext.facet#tag', tag: 'thread' }] }]);

    const commentKey = recordKey({ scheduleId: schedules[0]!.id, createdAt: schedules[0]!.createdAt, kind: 'firstComment' });
    const comment = (await account.agent.com.atproto.repo.getRecord({ repo: account.did, collection: 'app.bsky.feed.post', rkey: commentKey })).data;
    expect((comment.value as any).text).toBe('First comment https://example.org');
    expect((comment.value as any).reply).toEqual({ root: rootRef, parent: rootRef });

    const [{ postId }] = [...(await sql<{ postId: string }[]>`SELECT post_id FROM schedules WHERE id = ${schedules[0]!.id}`)] as [{ postId: string }];
    const schedule = (await rest(`/schedules/${schedules[0]!.id}?postId=${postId}`)).json.schedules.find((s: any) => s.id === schedules[0]!.id);
    expect(schedule).toMatchObject({ status: 'PUBLISHED', platformPostId: root.uri });
    const [integration] = (await rest('/integrations')).json;
    expect(integration.lastValidatedAt).not.toBeNull();
  });

  it('a mention of a handle that does not resolve is published as plain text, the other facets kept', async () => {
    const content = `Hello @nobody-here.test and @${account.handle} #kept`;
    const [schedule] = await createPost({ content }, [integrationId]);
    const [state] = await settled([schedule!.id]);
    expect(state, JSON.stringify(state)).toMatchObject({ status: 'PUBLISHED', failureReason: null });
    const value = (await getRecord(state!.platformPostId!)).value as any;
    expect(value.text).toBe(content);
    expect(facetsOf(value)).toEqual([
      { index: byteRange(content, `@${account.handle}`), features: [{ $type: 'app.bsky.richtext.facet#mention', did: account.did }] },
      { index: byteRange(content, '#kept'), features: [{ $type: 'app.bsky.richtext.facet#tag', tag: 'kept' }] },
    ]);
  });

  it('two workers racing for one due schedule make one record', async () => {
    const second = await startTestService({ databaseUrl: service.databaseUrl, encryptionKey: service.service.core.app.config.encryptionKey }, { api: false, worker: true });
    try {
      const before = (await postsOf(account)).length;
      const [schedule] = await createPost({ content: 'Raced for by two workers' }, [integrationId]);
      // Stale duplicates of its job, without the key, so that several run at once on both workers.
      for (let i = 0; i < 4; i++) await sql`SELECT graphile_worker.add_job('publish-schedule', json_build_object('scheduleId', ${schedule!.id}::uuid))`;
      const [state] = await settled([schedule!.id]);
      expect(state!.status).toBe('PUBLISHED');
      // Every duplicate job has had its turn: none is left that was never taken or is running now (a job is deleted when
      // its task returns, and keeps its attempts if it threw). Waited for as that state, not for a moment.
      const untried = () => sql<{ n: number }[]>`
        SELECT count(*)::int AS n FROM graphile_worker._private_jobs
        WHERE payload->>'scheduleId' = ${schedule!.id} AND (attempts = 0 OR locked_at IS NOT NULL)`;
      expect((await eventually(untried, ([row]) => row!.n === 0, 20_000))[0]!.n).toBe(0);
      const posts = await postsOf(account);
      expect(posts.length).toBe(before + 1);
      expect(posts.filter((post) => (post.value as any).text === 'Raced for by two workers')).toHaveLength(1);
    } finally {
      await second.stop();
    }
  });

  it('a schedule left PUBLISHING by a worker killed after the PDS accepted is recovered without a second record', async () => {
    // A schedule due in a year, so that its job does not run: the test plays the worker that died mid-job, which had
    // claimed it when it was due (an hour ago).
    const future = new Date(Date.now() + 365 * 86_400_000).toISOString();
    const [accepted] = await createPost({ content: 'Accepted, then the worker died', scheduledAt: future }, [integrationId], 'SCHEDULED_TIME');
    const [unsent] = await createPost({ content: 'Claimed, then the worker died', scheduledAt: future }, [integrationId], 'SCHEDULED_TIME');
    // What the dead worker left: both claimed long ago, the first one's record accepted by the PDS, no status written.
    const rkey = recordKey({ scheduleId: accepted!.id, createdAt: accepted!.createdAt, kind: 'post' });
    const record = { $type: 'app.bsky.feed.post', text: 'Accepted, then the worker died', createdAt: new Date().toISOString() };
    const created = await account.agent.com.atproto.repo.createRecord({ repo: account.did, collection: 'app.bsky.feed.post', rkey, record });
    // The job goes first: the worker's recovery sweep (every 200 ms here) may take the schedule up as soon as it looks
    // abandoned, and queue a job that a later remove_job would take away again.
    for (const id of [accepted!.id, unsent!.id]) {
      await sql`SELECT graphile_worker.remove_job(${`publish-schedule:${id}`})`;
      await sql`UPDATE schedules SET status = 'PUBLISHING', scheduled_at = now() - interval '1 hour', last_attempt = now() - interval '1 hour' WHERE id = ${id}`;
    }
    const before = (await postsOf(account)).length;

    const states = await settled([accepted!.id, unsent!.id]);
    expect(states.map((s) => s.status)).toEqual(['PUBLISHED', 'PUBLISHED']);
    const byId = Object.fromEntries(states.map((s) => [s.id, s]));
    expect(byId[accepted!.id]!.platformPostId).toBe(created.data.uri);
    const posts = await postsOf(account);
    expect(posts.length).toBe(before + 1); // only the one never sent
    expect(posts.filter((post) => (post.value as any).text === 'Accepted, then the worker died')).toHaveLength(1);
    expect(posts.filter((post) => (post.value as any).text === 'Claimed, then the worker died')).toHaveLength(1);
  });

  it('a thread whose middle part was deleted goes on without it: the part after it replies to the one before', async () => {
    const [root, middle, last] = await farThread('A thread losing its middle', ['Middle, deleted', 'Last, published']);
    expect((await rest(`/schedules/${middle!.id}`, { method: 'DELETE', body: {} })).status).toBe(200);
    // Due now, its job with it, as a reschedule moves them.
    await sql`UPDATE schedules SET scheduled_at = now() WHERE id IN (${root!.id}, ${last!.id})`;
    await sql`SELECT graphile_worker.add_job('publish-schedule', json_build_object('scheduleId', ${root!.id}::uuid), job_key := ${`publish-schedule:${root!.id}`})`;
    const states = await settled([root!.id, last!.id]);
    expect(states.map((s) => s.status)).toEqual(['PUBLISHED', 'PUBLISHED']);
    const first = await getRecord(states[0]!.platformPostId!);
    const ref = { uri: first.uri, cid: first.cid };
    expect(((await getRecord(states[1]!.platformPostId!)).value as any).reply).toEqual({ root: ref, parent: ref });
  });

  it('a thread whose worker stopped between two parts: the sweep queues the next part, which replies in its place', async () => {
    const [root, one, two] = await farThread('Stopped between parts', ['Part one, after the stop', 'Part two, after the stop']);
    // What the stopped worker left: the first post published an hour ago, the parts due, no job.
    const created = await firstPostOut(root!, 'Stopped between parts', '1 hour');
    await sql`UPDATE schedules SET scheduled_at = now() - interval '1 hour' WHERE post_id = (SELECT post_id FROM schedules WHERE id = ${root!.id})`;

    const states = await settled([one!.id, two!.id]);
    expect(states.map((s) => s.status)).toEqual(['PUBLISHED', 'PUBLISHED']);
    const rootRef = { uri: created.uri, cid: created.cid };
    const first = await getRecord(states[0]!.platformPostId!);
    expect((first.value as any).reply).toEqual({ root: rootRef, parent: rootRef });
    expect(((await getRecord(states[1]!.platformPostId!)).value as any).reply).toEqual({ root: rootRef, parent: { uri: first.uri, cid: first.cid } });
  });

  it('a channel without credentials fails its schedules with a reason to connect it', async () => {
    const bare = (await ws.admin('createIntegration', { platform: 'BLUESKY', name: 'Never connected' })).id;
    const [schedule] = await createPost({ content: 'Nowhere to go' }, [bare]);
    const [state] = await settled([schedule!.id]);
    expect(state).toMatchObject({ status: 'FAILED', failureReason: 'This channel is not connected: connect it (POST /integrations/connect), then retry' });
  });

  it('a revoked app password fails the schedule with a reason to reconnect, and the channel says so', async () => {
    const revoked = await createAccount();
    const id = await connectThroughForm(revoked);
    const [{ lastValidatedAt: connectedAt }] = (await sql<{ lastValidatedAt: Date }[]>`SELECT last_validated_at FROM integrations WHERE id = ${id}`) as unknown as [
      { lastValidatedAt: Date },
    ];
    await revoked.agent.com.atproto.server.revokeAppPassword({ name: 'postwise' });
    // The PDS honours an access token until it expires; the stored session is dropped as its expiry would.
    const secrets = secretsFrom(parseEncryptionKey(service.service.core.app.config.encryptionKey!));
    const [row] = await sql<{ credentials: Buffer }[]>`SELECT credentials FROM integrations WHERE id = ${id}`;
    const { session: _dropped, ...withoutSession } = JSON.parse(secrets.open(row!.credentials).toString());
    await sql`UPDATE integrations SET credentials = ${secrets.seal(Buffer.from(JSON.stringify(withoutSession)))} WHERE id = ${id}`;

    const schedules = await createPost({ content: 'Should not go out', thread: [{ content: 'Nor this' }] }, [id]);
    const states = await settled(schedules.map((s) => s.id));
    expect(states[0]).toMatchObject({ status: 'FAILED', failureReason: "Bluesky no longer accepts this channel's app password: reconnect the channel" });
    expect(states[0]!.failureDetail).toMatchObject({ status: 401, platformCode: 'AuthenticationRequired' });
    expect(states[1]).toMatchObject({ status: 'FAILED', failureReason: 'Not published: part 0 of the thread failed' });
    const channel = async () => (await rest('/integrations')).json.find((candidate: any) => candidate.id === id);
    expect(await channel()).toMatchObject({
      tokenStatus: 'REVOKED',
      connectionErrorCode: 'REFRESH_TOKEN_REVOKED',
      connectionError: "Bluesky no longer accepts this channel's app password: reconnect the channel",
      hasFailedSchedules: true,
      // The last good check stays the connect's.
      lastValidatedAt: connectedAt.toISOString(),
    });
    expect(await postsOf(revoked)).toEqual([]);

    // Later schedules of the channel fail at once, without a call to Bluesky.
    const app = service.service.core.app;
    const calls: string[] = [];
    app.platformFetch = (input, init) => (calls.push(String(input instanceof Request ? input.url : input)), fetch(input, init));
    try {
      const [later] = await createPost({ content: 'Nor this one' }, [id]);
      expect((await settled([later!.id]))[0]).toMatchObject({
        status: 'FAILED',
        failureReason: "Bluesky no longer accepts this channel's credentials: reconnect the channel, then retry",
      });
      expect(calls).toEqual([]);

      // Reconnected with a new app password, the channel is VALID again and a retry publishes.
      revoked.appPassword = (await revoked.agent.com.atproto.server.createAppPassword({ name: 'postwise-2' })).data.password;
      expect(await connectThroughForm(revoked)).toBe(id);
      expect(await channel()).toMatchObject({ tokenStatus: 'VALID', connectionErrorCode: null, connectionError: null });
      expect((await rest(`/posts/schedules/${later!.id}/retry`, { method: 'POST' })).status).toBe(200);
      expect((await settled([later!.id]))[0]).toMatchObject({ status: 'PUBLISHED' });
      expect((await postsOf(revoked)).map((post) => (post.value as any).text)).toEqual(['Nor this one']);
    } finally {
      app.platformFetch = undefined;
    }
  });

  /** A channel whose PDS address can be changed under it (to one where nothing listens, and back). */
  async function flakyChannel() {
    const flaky = await createAccount();
    const id = await connectThroughForm(flaky);
    const secrets = secretsFrom(parseEncryptionKey(service.service.core.app.config.encryptionKey!));
    const setServiceUrl = async (serviceUrl: string) => {
      const [row] = await sql<{ credentials: Buffer }[]>`SELECT credentials FROM integrations WHERE id = ${id}`;
      const credentials = { ...JSON.parse(secrets.open(row!.credentials).toString()), serviceUrl };
      await sql`UPDATE integrations SET credentials = ${secrets.seal(Buffer.from(JSON.stringify(credentials)))} WHERE id = ${id}`;
    };
    return { flaky, id, setServiceUrl };
  }

  it('an unreachable PDS is retried later, a bounded number of times, and a retry by the user then publishes once', async () => {
    const { flaky, id, setServiceUrl } = await flakyChannel();
    // Port 9 (discard) on loopback: nothing listens, the connection is refused before anything is sent.
    await setServiceUrl('http://127.0.0.1:9');
    const [schedule] = await createPost({ content: 'Out once the PDS is back' }, [id]);
    const job = () => sql<{ runAt: Date }[]>`SELECT run_at FROM graphile_worker.jobs WHERE key = ${`publish-schedule:${schedule!.id}`}`;
    // Waited for as a state (the first attempt failed and the retry is queued), the time only a safety bound.
    const [state] = await eventually(
      () => sql<ScheduleState[]>`SELECT id, status, retry_count, failure_reason, failure_detail FROM schedules WHERE id = ${schedule!.id}`,
      ([row]) => row!.retryCount === 1 && row!.status === 'SCHEDULED',
      15_000,
    );
    // Said at once while it waits for its next attempt; a network failure has no HTTP status or platform code.
    expect(state).toMatchObject({
      status: 'SCHEDULED',
      retryCount: 1,
      failureReason: 'Bluesky did not answer: attempt 1 of 4 failed, and it is tried again automatically',
    });
    expect(state!.failureDetail).toMatchObject({ status: null, platformCode: null });
    const [retry] = await job();
    // The first retry waits 30 s.
    expect(retry!.runAt.getTime() - Date.now()).toBeGreaterThan(20_000);
    expect(retry!.runAt.getTime() - Date.now()).toBeLessThan(31_000);

    // The last allowed retry, due now: it fails for good.
    await sql`UPDATE schedules SET retry_count = 3 WHERE id = ${schedule!.id}`;
    await sql`SELECT graphile_worker.add_job('publish-schedule', json_build_object('scheduleId', ${schedule!.id}::uuid), job_key := ${`publish-schedule:${schedule!.id}`})`;
    const [failed] = await settled([schedule!.id]);
    expect(failed).toMatchObject({ status: 'FAILED', retryCount: 3 });
    expect(failed!.failureReason).toMatch(/^Bluesky did not answer \(gave up after 3 retries\)$/);
    expect(await job()).toEqual([]);
    // Failed for good: no next attempt.
    expect((await sql`SELECT next_attempt_at FROM schedules WHERE id = ${schedule!.id}`)[0]!.nextAttemptAt).toBeNull();

    await setServiceUrl(flaky.pdsUrl);
    const retried = await rest(`/posts/schedules/${schedule!.id}/retry`, { method: 'POST' });
    expect(retried.status, retried.text).toBe(200);
    const [published] = await settled([schedule!.id]);
    // A user's retry renews the automatic ones: a transient failure now would be retried again.
    expect(published).toMatchObject({ status: 'PUBLISHED', failureReason: null, retryCount: 0 });
    expect((await postsOf(flaky)).map((post) => (post.value as any).text)).toEqual(['Out once the PDS is back']);
  });

  it('a retry waiting says when: nextAttemptAt is its job\'s time, cleared by a reschedule by hand and once an attempt publishes it', async () => {
    const { flaky, id, setServiceUrl } = await flakyChannel();
    await setServiceUrl('http://127.0.0.1:9');
    const [schedule] = await createPost({ content: 'Out on its second attempt' }, [id]);
    const key = `publish-schedule:${schedule!.id}`;
    const [waiting] = await eventually(
      () => sql<{ status: string; retryCount: number; nextAttemptAt: Date | null; runAt: Date | null }[]>`
        SELECT s.status, s.retry_count, s.next_attempt_at, j.run_at FROM schedules s
        LEFT JOIN graphile_worker.jobs j ON j.key = ${key} WHERE s.id = ${schedule!.id}`,
      ([row]) => row!.retryCount === 1 && row!.status === 'SCHEDULED',
      15_000,
    );
    // Set with the retry's job, in its transaction: the same instant.
    expect(waiting!.nextAttemptAt).not.toBeNull();
    expect(waiting!.nextAttemptAt!.getTime()).toBe(waiting!.runAt!.getTime());
    expect(waiting!.nextAttemptAt!.getTime() - Date.now()).toBeGreaterThan(20_000);
    // The Schedule shows it.
    const { postId } = (await sql<{ postId: string }[]>`SELECT post_id FROM schedules WHERE id = ${schedule!.id}`)[0]!;
    const shown = await rest(`/posts/${postId}`);
    expect(shown.status, shown.text).toBe(200);
    expect(shown.json.schedules[0]).toMatchObject({ status: 'SCHEDULED', retryCount: 1, nextAttemptAt: waiting!.nextAttemptAt!.toISOString() });

    // Rescheduled by hand: its job moves to the new time, and the automatic retry's time goes.
    const later = new Date(Date.now() + 3_600_000).toISOString();
    expect((await rest(`/posts/schedules/${schedule!.id}/reschedule`, { method: 'POST', body: { scheduledAt: later } })).status).toBe(200);
    expect((await sql`SELECT next_attempt_at FROM schedules WHERE id = ${schedule!.id}`)[0]!.nextAttemptAt).toBeNull();

    // Refused again, then the PDS is back: the retry (run now rather than in 30 s) publishes it, and clears the time.
    await sql`UPDATE schedules SET scheduled_at = now() WHERE id = ${schedule!.id}`;
    await sql`SELECT graphile_worker.add_job('publish-schedule', json_build_object('scheduleId', ${schedule!.id}::uuid), job_key := ${key})`;
    await eventually(
      () => sql<{ retryCount: number; nextAttemptAt: Date | null }[]>`SELECT retry_count, next_attempt_at FROM schedules WHERE id = ${schedule!.id}`,
      ([row]) => row!.retryCount === 2 && row!.nextAttemptAt !== null,
      15_000,
    );
    await setServiceUrl(flaky.pdsUrl);
    await sql`UPDATE graphile_worker._private_jobs SET run_at = now() WHERE key = ${key}`;
    const [published] = await settled([schedule!.id]);
    expect(published).toMatchObject({ status: 'PUBLISHED', retryCount: 2, failureReason: null });
    expect((await sql`SELECT next_attempt_at FROM schedules WHERE id = ${schedule!.id}`)[0]!.nextAttemptAt).toBeNull();
    expect((await rest(`/posts/${postId}`)).json.schedules[0]).toMatchObject({ status: 'PUBLISHED', nextAttemptAt: null });
  });

  it('the abort signal a job is given ends its platform calls: nothing is sent once the worker shuts down', async () => {
    const { publisher } = platforms.BLUESKY;
    const connection = await publisher!.connect!({ identifier: account.handle, password: account.appPassword, serviceUrl: account.pdsUrl }, { signal: AbortSignal.timeout(10_000), timeoutMs: 10_000 });
    const shutdown = new AbortController();
    const opened = publisher!.open(connection.credentials, { signal: shutdown.signal, timeoutMs: 10_000, saveCredentials: async () => {} });
    shutdown.abort(new Error('worker shutting down'));
    const before = (await postsOf(account)).length;
    const key = { scheduleId: randomUUID(), createdAt: new Date(), kind: 'post' as const };
    const error = await opened.publish({ key, text: 'Never sent', settings: {} }).catch((caught) => caught);
    expect(error).toBeInstanceOf(PlatformError);
    // Ended in transit by the client: no HTTP status, and the engine takes it for a call whose outcome is unknown.
    expect([error.kind, error.detail.status, error.detail.raw.status]).toEqual(['unknown', null, 1]);
    expect((await postsOf(account)).length).toBe(before);
  });

  it('DELETE /schedules/{id} on a published thread deletes its records on the platform and keeps the rows, with platformDeletedAt', async () => {
    const schedules = await createPost({ content: 'Here, then gone', thread: [{ content: 'Gone too' }], firstComment: 'And this' }, [integrationId]);
    const states = await settled(schedules.map((s) => s.id));
    expect(states.map((s) => s.status)).toEqual(['PUBLISHED', 'PUBLISHED']);
    const commentKey = recordKey({ scheduleId: schedules[0]!.id, createdAt: schedules[0]!.createdAt, kind: 'firstComment' });
    const rkeys = [...states.map((s) => rkeyOf(s.platformPostId!)), commentKey];
    const exists = async (rkey: string) =>
      account.agent.com.atproto.repo.getRecord({ repo: account.did, collection: 'app.bsky.feed.post', rkey }).then(
        () => true,
        (error) => (error.error === 'RecordNotFound' ? false : Promise.reject(error)),
      );
    for (const rkey of rkeys) expect(await exists(rkey)).toBe(true);

    const deleted = await rest(`/schedules/${schedules[0]!.id}`, { method: 'DELETE' });
    expect(deleted.status, deleted.text).toBe(200);
    for (const rkey of rkeys) expect(await exists(rkey)).toBe(false);
    const rows = await sql<{ status: string; platformDeletedAt: Date | null }[]>`
      SELECT status, platform_deleted_at FROM schedules WHERE id = ANY(${schedules.map((s) => s.id)}::uuid[])`;
    expect(rows).toHaveLength(2);
    for (const row of rows) expect(row).toMatchObject({ status: 'PUBLISHED', platformDeletedAt: expect.any(Date) });
    expect((await rest(`/schedules/${schedules[0]!.id}`, { method: 'DELETE' })).status).toBe(200);
  });

  it('DELETE /schedules/{id} on a thread\'s published first post cancels its parts not yet published, and waits for one being published', async () => {
    const [root, one, two] = await farThread('First out, then deleted', ['Being published', 'Never published']);
    // What a worker midway through the thread leaves: the first post out, part one being published.
    const created = await firstPostOut(root!, 'First out, then deleted');
    await sql`UPDATE schedules SET status = 'PUBLISHING', last_attempt = now() WHERE id = ${one!.id}`;

    const busy = await rest(`/schedules/${root!.id}`, { method: 'DELETE' });
    expect(busy.status).toBe(409);
    expect(busy.json).toEqual({ code: 'INVALID_STATE', message: 'Part 1 of this thread is PUBLISHING; try again once it is published' });
    expect((await getRecord(created.uri)).uri).toBe(created.uri);

    await sql`UPDATE schedules SET status = 'SCHEDULED' WHERE id = ${one!.id}`;
    const deleted = await rest(`/schedules/${root!.id}`, { method: 'DELETE' });
    expect(deleted.status, deleted.text).toBe(200);
    await expect(getRecord(created.uri)).rejects.toMatchObject({ error: 'RecordNotFound' });
    expect(await sql`SELECT id FROM schedules WHERE id IN (${one!.id}, ${two!.id})`).toEqual([]);
    expect(await sql`SELECT 1 FROM graphile_worker.jobs WHERE key IN (${`publish-schedule:${one!.id}`}, ${`publish-schedule:${two!.id}`})`).toEqual([]);
    const [first] = await sql<{ status: string; platformDeletedAt: Date | null }[]>`SELECT status, platform_deleted_at FROM schedules WHERE id = ${root!.id}`;
    expect(first).toMatchObject({ status: 'PUBLISHED', platformDeletedAt: expect.any(Date) });
  });

  it('faults where the client really sends: an answer lost after the PDS accepted (500) is settled by the lookup, a 429 waits its Retry-After', async () => {
    const app = service.service.core.app;
    let fault: 'lose the answer' | 'rate limit' | undefined;
    let answersLost = 0;
    const json = (status: number, body: object, headers: Record<string, string> = {}) =>
      new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json', ...headers } });
    app.platformFetch = async (input, init) => {
      const url = typeof input === 'string' ? input : input instanceof URL ? input.href : input.url;
      if (url.includes('/xrpc/com.atproto.repo.createRecord')) {
        if (fault === 'lose the answer') {
          await fetch(input, init); // the PDS writes the record; its answer never arrives
          answersLost++;
          return json(500, { error: 'InternalServerError', message: 'Internal Server Error' });
        }
        if (fault === 'rate limit') return json(429, { error: 'RateLimitExceeded', message: 'Rate Limit Exceeded' }, { 'retry-after': '120' });
      }
      return fetch(input, init);
    };
    try {
      fault = 'lose the answer';
      const [lost] = await createPost({ content: 'Accepted, answer lost' }, [integrationId]);
      const [settledLost] = await settled([lost!.id]);
      expect(answersLost).toBe(1);
      expect(settledLost).toMatchObject({ status: 'PUBLISHED', retryCount: 0 });
      expect(settledLost!.platformPostId).toMatch(new RegExp(`/${recordKey({ scheduleId: lost!.id, createdAt: lost!.createdAt, kind: 'post' })}$`));
      expect((await postsOf(account)).filter((post) => (post.value as any).text === 'Accepted, answer lost')).toHaveLength(1);

      fault = 'rate limit';
      const [limited] = await createPost({ content: 'Sent after the rate limit' }, [integrationId]);
      const [state] = await eventually(
        () => sql<ScheduleState[]>`SELECT id, status, retry_count, failure_detail FROM schedules WHERE id = ${limited!.id}`,
        ([row]) => row!.retryCount === 1,
        15_000,
      );
      expect(state).toMatchObject({ status: 'SCHEDULED', retryCount: 1, failureDetail: { status: 429, platformCode: 'RateLimitExceeded' } });
      const [retry] = await sql<{ runAt: Date }[]>`SELECT run_at FROM graphile_worker.jobs WHERE key = ${`publish-schedule:${limited!.id}`}`;
      expect(retry!.runAt.getTime() - Date.now()).toBeGreaterThan(100_000); // Retry-After 120 s, beyond the first backoff's 30 s

      fault = undefined;
      await sql`SELECT graphile_worker.add_job('publish-schedule', json_build_object('scheduleId', ${limited!.id}::uuid), job_key := ${`publish-schedule:${limited!.id}`})`;
      expect((await settled([limited!.id]))[0]).toMatchObject({ status: 'PUBLISHED' });
      expect((await postsOf(account)).filter((post) => (post.value as any).text === 'Sent after the rate limit')).toHaveLength(1);
    } finally {
      app.platformFetch = undefined;
    }
  });
});

/** The URL of a request as the client hands it to fetch (a Request, a URL or a string). */
const urlOf = (input: Parameters<typeof fetch>[0]) => (typeof input === 'string' ? input : input instanceof URL ? input.href : input.url);
const json = (status: number, body: object, headers: Record<string, string> = {}) =>
  new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json', ...headers } });
/** What fetch does when nobody answers: nothing, until the request's signal ends it. */
const noAnswer = (init: RequestInit | undefined) =>
  new Promise<Response>((_, reject) => {
    const signal = init!.signal!;
    if (signal.aborted) reject(signal.reason);
    signal.addEventListener('abort', () => reject(signal.reason));
  });
const textsOf = async (who: TestAccount, text: string) => (await postsOf(who)).filter((post) => (post.value as any).text === text);

describe('moves, timeouts and sessions', () => {
  it('reschedule and cancel while the job waits: the job moves or goes, and a stale job finds nothing to do', async () => {
    const later = new Date(Date.now() + 3600_000).toISOString();
    const [toMove] = await createPost({ content: 'Moved, then published', scheduledAt: later }, [integrationId], 'SCHEDULED_TIME');
    const [toCancel] = await createPost({ content: 'Cancelled before its time', scheduledAt: new Date(Date.parse(later) + 60_000).toISOString() }, [integrationId], 'SCHEDULED_TIME');
    const [toDelay] = await createPost({ content: 'Moved later', scheduledAt: new Date(Date.now() + 1800_000).toISOString() }, [integrationId], 'SCHEDULED_TIME');
    const runAt = async (id: string) => (await sql<{ runAt: Date }[]>`SELECT run_at FROM graphile_worker.jobs WHERE key = ${`publish-schedule:${id}`}`)[0]?.runAt;
    expect((await runAt(toMove!.id))!.toISOString()).toBe(later);

    // Soon, with room for the reschedule and the read of its job before the worker takes it on a busy machine.
    const soon = new Date(Date.now() + 5000).toISOString();
    expect((await rest(`/posts/schedules/${toMove!.id}/reschedule`, { method: 'POST', body: { scheduledAt: soon } })).status).toBe(200);
    expect((await runAt(toMove!.id))!.toISOString()).toBe(soon);
    expect((await rest(`/schedules/${toCancel!.id}`, { method: 'DELETE' })).status).toBe(200);
    expect(await runAt(toCancel!.id)).toBeUndefined();
    const farther = new Date(Date.now() + 7200_000).toISOString();
    expect((await rest(`/posts/schedules/${toDelay!.id}/reschedule`, { method: 'POST', body: { scheduledAt: farther } })).status).toBe(200);

    // Stale jobs due now, as a worker may hold one taken just before the move: they publish nothing.
    for (const id of [toCancel!.id, toDelay!.id]) {
      await sql`SELECT graphile_worker.add_job('publish-schedule', json_build_object('scheduleId', ${id}::uuid), job_key := ${`stale:${id}`})`;
    }
    const [published] = await settled([toMove!.id]);
    expect(published).toMatchObject({ status: 'PUBLISHED' });
    expect(published!.publishedAt!.getTime()).toBeGreaterThanOrEqual(Date.parse(soon));
    for (const id of [toCancel!.id, toDelay!.id]) expect(await jobsLeftUnder(sql, `stale:${id}`)).toEqual([]);
    const [delayed] = await sql<{ status: string; lastAttempt: Date | null }[]>`SELECT status, last_attempt FROM schedules WHERE id = ${toDelay!.id}`;
    expect(delayed).toEqual({ status: 'SCHEDULED', lastAttempt: null });
    expect((await runAt(toDelay!.id))!.toISOString()).toBe(farther);
    expect(await textsOf(account, 'Moved, then published')).toHaveLength(1);
    expect(await textsOf(account, 'Cancelled before its time')).toEqual([]);
    expect(await textsOf(account, 'Moved later')).toEqual([]);
  });

  it('reschedule, cancel and delete while the job runs answer 409, and the publish completes once', async () => {
    const app = service.service.core.app;
    let reached!: () => void;
    const atPlatform = new Promise<void>((resolve) => (reached = resolve));
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    app.platformFetch = async (input, init) => {
      if (urlOf(input).includes('/xrpc/com.atproto.repo.createRecord')) {
        reached();
        await released;
      }
      return fetch(input, init);
    };
    try {
      const [schedule] = await createPost({ content: 'Published while a user tries to move it' }, [integrationId]);
      await atPlatform;
      const [{ postId }] = (await sql<{ postId: string }[]>`SELECT post_id FROM schedules WHERE id = ${schedule!.id}`) as unknown as [{ postId: string }];
      const moved = await rest(`/posts/schedules/${schedule!.id}/reschedule`, { method: 'POST', body: { scheduledAt: new Date(Date.now() + 3600_000).toISOString() } });
      expect(moved.status).toBe(409);
      expect(moved.json.code).toBe('INVALID_STATE');
      const cancelled = await rest(`/schedules/${schedule!.id}`, { method: 'DELETE' });
      expect(cancelled.status).toBe(409);
      expect((await rest(`/posts/${postId}`, { method: 'DELETE' })).status).toBe(409);
      expect((await sql`SELECT status FROM schedules WHERE id = ${schedule!.id}`)[0]).toEqual({ status: 'PUBLISHING' });
      release();
      expect((await settled([schedule!.id]))[0]).toMatchObject({ status: 'PUBLISHED', retryCount: 0 });
      expect(await textsOf(account, 'Published while a user tries to move it')).toHaveLength(1);
    } finally {
      release();
      app.platformFetch = undefined;
    }
  });

  it('content the platform refuses (400) fails at once, without a retry, with what the platform said', async () => {
    const app = service.service.core.app;
    app.platformFetch = async (input, init) =>
      urlOf(input).includes('/xrpc/com.atproto.repo.createRecord')
        ? json(400, { error: 'InvalidRequest', message: 'Invalid app.bsky.feed.post record: Record/text must not be longer than 300 graphemes' }, { 'x-trace-id': 'trace-123' })
        : fetch(input, init);
    try {
      const schedules = await createPost({ content: 'Refused by the platform', thread: [{ content: 'Not sent either' }] }, [integrationId]);
      const [first, part] = await settled(schedules.map((schedule) => schedule.id));
      expect(first).toMatchObject({
        status: 'FAILED',
        retryCount: 0,
        failureReason: 'Bluesky refused the post: Invalid app.bsky.feed.post record: Record/text must not be longer than 300 graphemes',
        failureDetail: { status: 400, platformCode: 'InvalidRequest', traceId: 'trace-123', platformMessage: expect.stringContaining('300 graphemes') },
      });
      expect(part).toMatchObject({ status: 'FAILED', failureReason: 'Not published: part 0 of the thread failed' });
      expect(await jobsLeftUnder(sql, `publish-schedule:${schedules[0]!.id}`)).toEqual([]);
      expect(await textsOf(account, 'Refused by the platform')).toEqual([]);
    } finally {
      app.platformFetch = undefined;
    }
  });

  it('a publish slower than PUBLISH_STALE_MS is not taken for abandoned while it runs: one call, one record', async () => {
    const app = service.service.core.app;
    let creates = 0;
    // Each create takes 1.5 stale periods here (3 s): only the attempt's heartbeat keeps the sweep away from it.
    app.platformFetch = async (input, init) => {
      if (urlOf(input).includes('/xrpc/com.atproto.repo.createRecord')) {
        creates++;
        await new Promise((resolve) => setTimeout(resolve, 4500));
      }
      return fetch(input, init);
    };
    try {
      const [schedule] = await createPost({ content: 'Slow, but alive' }, [integrationId]);
      const [state] = await settled([schedule!.id], 30_000);
      expect(state).toMatchObject({ status: 'PUBLISHED', retryCount: 0 });
      expect(creates).toBe(1);
      expect((await postsOf(account)).filter((post) => (post.value as any).text === 'Slow, but alive')).toHaveLength(1);
    } finally {
      app.platformFetch = undefined;
    }
  });

  it('a first comment refused for good after its post went out: PUBLISHED with a note, the thread going on', async () => {
    const app = service.service.core.app;
    app.platformFetch = async (input, init) => {
      // The client sends a Request, its body inside.
      const body = input instanceof Request ? await input.clone().text() : String(init?.body ?? '');
      if (urlOf(input).includes('/xrpc/com.atproto.repo.createRecord') && body.includes('A comment refused')) {
        return json(400, { error: 'InvalidRequest', message: 'Invalid app.bsky.feed.post record: something about the comment' });
      }
      return fetch(input, init);
    };
    try {
      const schedules = await createPost({ content: 'Out, its comment not', firstComment: 'A comment refused', thread: [{ content: 'And its thread goes on' }] }, [integrationId]);
      const [root, part] = await settled(schedules.map((s) => s.id));
      expect(root).toMatchObject({ status: 'PUBLISHED', platformPostId: expect.stringMatching(/^at:\/\//), failureDetail: { status: 400 } });
      expect(root!.failureReason).toBe(
        'Published; its first comment was not: Bluesky refused the post: Invalid app.bsky.feed.post record: something about the comment. Add it by hand if it is still wanted',
      );
      expect(part).toMatchObject({ status: 'PUBLISHED', failureReason: null });
      const texts = (await postsOf(account)).map((post) => (post.value as any).text);
      expect(texts).toEqual(expect.arrayContaining(['Out, its comment not', 'And its thread goes on']));
      expect(texts).not.toContain('A comment refused');
    } finally {
      app.platformFetch = undefined;
    }
  });

  it('a platform that never answers is abandoned after PLATFORM_TIMEOUT_MS: looked up, then retried, or found published', async () => {
    const app = service.service.core.app;
    const timeoutBefore = app.config.platformTimeoutMs;
    let fault: 'nothing sent' | 'sent, answer never comes' | undefined;
    app.platformFetch = async (input, init) => {
      if (urlOf(input).includes('/xrpc/com.atproto.repo.createRecord') && fault) {
        if (fault === 'sent, answer never comes') await fetch(input, { ...init, signal: undefined });
        return noAnswer(init);
      }
      return fetch(input, init);
    };
    // Short, but not so short that a busy PDS's real answers (the lookup, the retry) time out too.
    app.config.platformTimeoutMs = 3000;
    try {
      fault = 'nothing sent';
      const [unsent] = await createPost({ content: 'The platform never answered' }, [integrationId]);
      const [state] = await eventually(
        () => sql<ScheduleState[]>`SELECT id, status, retry_count, failure_detail FROM schedules WHERE id = ${unsent!.id}`,
        ([row]) => row!.retryCount === 1,
        // A safety bound only: the wait ends when the attempt is abandoned (3 s, then the lookup), later on a busy machine.
        45_000,
      );
      expect(state).toMatchObject({ status: 'SCHEDULED', retryCount: 1, failureDetail: { status: null, platformCode: null } });
      expect(await textsOf(account, 'The platform never answered')).toEqual([]);

      fault = 'sent, answer never comes';
      const [lost] = await createPost({ content: 'Accepted, then no answer' }, [integrationId]);
      let [found] = await settled([lost!.id]);
      if (found!.status === 'SCHEDULED') {
        // A machine so busy that the lookup itself outlasted the timeout: the schedule waits for its retry, which looks
        // the record up again before sending anything. That retry is run now rather than in 30 s.
        expect(found!.retryCount).toBe(1);
        fault = undefined;
        await sql`SELECT graphile_worker.add_job('publish-schedule', json_build_object('scheduleId', ${lost!.id}::uuid), job_key := ${`publish-schedule:${lost!.id}`})`;
        [found] = await settled([lost!.id]);
      }
      expect(found).toMatchObject({ status: 'PUBLISHED' });
      expect(await textsOf(account, 'Accepted, then no answer')).toHaveLength(1);

      fault = undefined;
      await sql`SELECT graphile_worker.add_job('publish-schedule', json_build_object('scheduleId', ${unsent!.id}::uuid), job_key := ${`publish-schedule:${unsent!.id}`})`;
      expect((await settled([unsent!.id]))[0]).toMatchObject({ status: 'PUBLISHED', retryCount: 1 });
      expect(await textsOf(account, 'The platform never answered')).toHaveLength(1);
    } finally {
      app.config.platformTimeoutMs = timeoutBefore;
      app.platformFetch = undefined;
    }
  });

  it('a session is reused, refreshed when it expired, and a login made only when the refresh token is refused', async () => {
    const app = service.service.core.app;
    const who = await createAccount();
    const id = await connectThroughForm(who);
    const secrets = secretsFrom(parseEncryptionKey(app.config.encryptionKey!));
    const storedSession = async () => {
      const [row] = await sql<{ credentials: Buffer }[]>`SELECT credentials FROM integrations WHERE id = ${id}`;
      return JSON.parse(secrets.open(row!.credentials).toString()).session as { accessJwt: string; refreshJwt: string };
    };
    const calls: string[] = [];
    let expire: 'access token' | 'refresh token too' | undefined;
    app.platformFetch = async (input, init) => {
      const method = new URL(urlOf(input)).pathname.replace('/xrpc/', '');
      calls.push(method);
      if (method === 'com.atproto.repo.createRecord' && expire) {
        const refuseRefresh = expire === 'refresh token too';
        expire = undefined;
        if (refuseRefresh) refusingRefresh = true;
        return json(400, { error: 'ExpiredToken', message: 'Token has expired' }); // as the PDS answers an expired access token
      }
      if (method === 'com.atproto.server.refreshSession' && refusingRefresh) {
        refusingRefresh = false;
        return json(400, { error: 'ExpiredToken', message: 'Token has expired' });
      }
      return fetch(input, init);
    };
    let refusingRefresh = false;
    try {
      const connected = await storedSession();
      const [first] = await createPost({ content: 'With the stored session' }, [id]);
      expect((await settled([first!.id]))[0]!.status).toBe('PUBLISHED');
      expect(calls).toEqual(['com.atproto.repo.createRecord']);
      expect(await storedSession()).toEqual(connected);

      calls.length = 0;
      expire = 'access token';
      const [second] = await createPost({ content: 'After a refresh' }, [id]);
      expect((await settled([second!.id]))[0]!.status).toBe('PUBLISHED');
      expect(calls).toContain('com.atproto.server.refreshSession');
      expect(calls).not.toContain('com.atproto.server.createSession');
      const refreshed = await storedSession();
      expect(refreshed.refreshJwt).not.toBe(connected.refreshJwt); // an access token made in the same second can be the same string

      calls.length = 0;
      expire = 'refresh token too';
      const [third] = await createPost({ content: 'After a new login' }, [id]);
      expect((await settled([third!.id]))[0]!.status).toBe('PUBLISHED');
      expect(calls.filter((call) => call === 'com.atproto.server.createSession')).toHaveLength(1);
      expect((await storedSession()).refreshJwt).not.toBe(refreshed.refreshJwt);
      expect((await postsOf(who)).map((post) => (post.value as any).text).sort()).toEqual(['After a new login', 'After a refresh', 'With the stored session']);
      const integration = (await rest('/integrations')).json.find((candidate: any) => candidate.id === id);
      expect(integration).toMatchObject({ tokenStatus: 'VALID', connectionErrorCode: null });

      // The database refuses the store of the next renewed session once (a sequence is not rolled back with it): the
      // publish that renewed it succeeds all the same, and so does the next one on the same account.
      await sql.unsafe(`
        CREATE SEQUENCE refuse_once;
        CREATE FUNCTION refuse_once() RETURNS trigger LANGUAGE plpgsql AS $$
          BEGIN IF nextval('refuse_once') = 1 THEN RAISE EXCEPTION 'the database is away for a moment'; END IF; RETURN NEW; END $$;
        CREATE TRIGGER refuse_once BEFORE UPDATE OF credentials ON integrations FOR EACH ROW WHEN (NEW.id = '${id}') EXECUTE FUNCTION refuse_once();`);
      try {
        expire = 'access token';
        const [fourth] = await createPost({ content: 'Renewed, the store refused' }, [id]);
        expect((await settled([fourth!.id]))[0]!.status).toBe('PUBLISHED');
        expect((await sql<{ isCalled: boolean }[]>`SELECT is_called FROM refuse_once`)[0]!.isCalled).toBe(true); // it did refuse
        const [fifth] = await createPost({ content: 'Then once more' }, [id]);
        expect((await settled([fifth!.id]))[0]!.status).toBe('PUBLISHED');
      } finally {
        await sql.unsafe('DROP TRIGGER refuse_once ON integrations; DROP FUNCTION refuse_once(); DROP SEQUENCE refuse_once;');
      }
    } finally {
      app.platformFetch = undefined;
    }
  });
});
