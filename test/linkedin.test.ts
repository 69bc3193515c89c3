import { randomUUID } from 'node:crypto';
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FakeLinkedIn, FakeMember } from './support/linkedin.js';
import { channelIdOf, connectLinkedIn, consent, readPicker as readPickerOf, startLinkedInFixture, stopLinkedInFixture, submit } from './support/linkedin-browser.js';
import { admin } from './support/processes.js';
import { call, eventually, isSettled, jobsLeftUnder, type TestService, type Workspace } from './support/service.js';

/**
 * LinkedIn end to end, as a browser and an API client drive it, against the contract fake of LinkedIn on loopback
 * (test/support/linkedin.ts): OAuth connect with the account picker, publishing through the worker, delete, the
 * failures LinkedIn answers, and token health (expiry, refresh, revocation).
 */

let fake: FakeLinkedIn;
let service: TestService;
let ws: Workspace;
let sql: postgres.Sql;

beforeAll(async () => ({ fake, service, ws, sql } = await startLinkedInFixture({ publishStaleMs: 3000, publishRecoveryIntervalMs: 200 })));
afterAll(() => stopLinkedInFixture({ fake, service, sql }));

const rest = (path: string, options: { method?: string; body?: unknown } = {}) => call(`${service.api}${path}`, { key: ws.apiKey, ...options });
const integrations = async () => (await rest('/integrations')).json.filter((i: any) => i.platform === 'LINKEDIN');

async function connectLink() {
  const answer = await rest('/integrations/connect', { method: 'POST', body: { platform: 'LINKEDIN' } });
  expect(answer.status, answer.text).toBe(200);
  return answer.json.redirectUrl as string;
}

const readPicker = (html: string) => readPickerOf(service, html);
const connect = (member: FakeMember, page?: string) => connectLinkedIn(service, ws.apiKey, fake, member, page);

async function createPost(row: Record<string, unknown>, integrationIds: string[]) {
  const created = await rest('/posts', { method: 'POST', body: { rows: [row], shared: { selectedIntegrations: integrationIds }, postAction: 'PUBLISH_NOW' } });
  expect(created.status, created.text).toBe(201);
  const [schedule] = await sql<{ id: string }[]>`SELECT id FROM schedules WHERE post_id = ${created.json.postId}`;
  return schedule!.id;
}

interface ScheduleState {
  status: string;
  platformPostId: string | null;
  releaseUrl: string | null;
  failureReason: string | null;
  failureDetail: any;
  retryCount: number;
  platformDeletedAt: Date | null;
}

async function scheduleState(id: string) {
  const [row] = await sql<ScheduleState[]>`
    SELECT status, platform_post_id, release_url, failure_reason, failure_detail, retry_count, platform_deleted_at FROM schedules WHERE id = ${id}`;
  return row!;
}

const until = <T>(read: () => Promise<T>, check: (value: T) => boolean) => eventually(read, check, 20_000);
const settled = (id: string) => until(() => scheduleState(id), isSettled);

/** Runs the schedule's queued retry now, rather than after its backoff. */
const retryNow = (id: string) => sql`UPDATE graphile_worker._private_jobs SET run_at = now() WHERE key = ${`publish-schedule:${id}`}`;

const postsBy = (author: string) => [...fake.posts.values()].filter((post) => post.author === author);

describe('connecting LinkedIn', () => {
  it('answers LinkedIn\'s consent page with the client, the scopes, the callback and a signed state', async () => {
    const url = new URL(await connectLink());
    expect(`${url.origin}${url.pathname}`).toBe(`${fake.url}/oauth/v2/authorization`);
    expect(Object.fromEntries(url.searchParams)).toEqual({
      response_type: 'code',
      client_id: fake.clientId,
      redirect_uri: `${service.base}/oauth/linkedin/callback`,
      scope: 'openid profile w_member_social r_organization_admin w_organization_social',
      state: expect.stringMatching(/^[\w-]+\.[\w-]+$/),
    });
  });

  it('a member without pages is connected ACTIVE at once, the token sealed and its refresh queued', async () => {
    const member = fake.addMember('Ada Lovelace');
    const id = await connect(member);
    const [channel] = (await integrations()).filter((i: any) => i.id === id);
    expect(channel).toMatchObject({ name: 'Ada Lovelace', tokenStatus: 'VALID', connectStatus: 'ACTIVE', autoRefreshUnavailable: false, connectionErrorCode: null });
    expect(Date.parse(channel.expiresAt) - Date.now()).toBeGreaterThan(59 * 86_400_000);
    const [stored] = await sql<{ accountId: string; credentials: Buffer }[]>`SELECT account_id, credentials FROM integrations WHERE id = ${id}`;
    expect(stored!.accountId).toBe(`urn:li:person:${member.sub}`);
    expect(stored!.credentials.toString('latin1')).not.toMatch(/AQ[\w-]{20}/); // LinkedIn's tokens start AQ
    const [job] = await sql<{ runAt: Date }[]>`SELECT run_at FROM graphile_worker.jobs WHERE key = ${`refresh-credentials:${id}`}`;
    expect(job!.runAt.getTime() - Date.parse(channel.expiresAt)).toBeCloseTo(-7 * 86_400_000, -4); // a week before expiry
  });

  it('a page administrator picks a page on the picker: PENDING_SELECTION, then ACTIVE; the picker works once', async () => {
    const member = fake.addMember('Grace Hopper', [{ id: 51_000 + Math.floor(Math.random() * 1000), name: 'Compilers Inc' }]);
    const pageUrn = `urn:li:organization:${member.pages[0]!.id}`;
    fake.signInAs(member);
    const { status, html } = await consent(await connectLink());
    expect(status).toBe(200);
    const picker = readPicker(html);
    // The member and the one page it administers: not the revoked role nor the analyst role LinkedIn also holds.
    expect(picker.accounts).toEqual([`urn:li:person:${member.sub}`, pageUrn]);
    expect(html).toContain('Compilers Inc');
    const pendingId = channelIdOf(html);
    expect((await integrations()).find((i: any) => i.id === pendingId)).toMatchObject({ connectStatus: 'PENDING_SELECTION', name: 'Grace Hopper' });

    const forged = await submit(picker.action, { selection: `${picker.selection}x`, account: pageUrn });
    expect(forged.status).toBe(400);
    const foreign = await submit(picker.action, { selection: picker.selection, account: 'urn:li:organization:2' });
    expect(foreign.status).toBe(400);
    expect(await foreign.text()).toContain('is not one of');

    const done = await submit(picker.action, { selection: picker.selection, account: pageUrn });
    expect(done.status).toBe(200);
    expect(channelIdOf(await done.text())).toBe(pendingId);
    expect((await integrations()).find((i: any) => i.id === pendingId)).toMatchObject({ connectStatus: 'ACTIVE', name: 'Compilers Inc', tokenStatus: 'VALID' });
    const again = await submit(picker.action, { selection: picker.selection, account: pageUrn });
    expect(again.status).toBe(400);
    expect(await again.text()).toContain('chosen already');
  });

  it('a member administering more pages than LinkedIn lists at once is offered every one of them', async () => {
    const pages = Array.from({ length: 12 }, (_, index) => ({ id: 81_000 + index * 10 + Math.floor(Math.random() * 10), name: `Page ${index + 1}` }));
    const member = fake.addMember('Mary Somerville', pages);
    fake.signInAs(member);
    const { html } = await consent(await connectLink());
    expect(readPicker(html).accounts).toEqual([`urn:li:person:${member.sub}`, ...pages.map((page) => `urn:li:organization:${page.id}`)]);
  });

  it('from a shell: npm run admin -- select-account picks the page of a pending channel', async () => {
    const member = fake.addMember('Alan Turing', [{ id: 61_000 + Math.floor(Math.random() * 1000), name: 'Bletchley Ltd' }]);
    fake.signInAs(member);
    const { html } = await consent(await connectLink());
    const pendingId = channelIdOf(html);
    const env = { DATABASE_URL: service.databaseUrl, ENCRYPTION_KEY: service.service.core.app.config.encryptionKey! };
    const page = `urn:li:organization:${member.pages[0]!.id}`;
    const wrong = await admin(['select-account', '--workspace', ws.workspaceId, '--integration', pendingId, '--account', 'urn:li:organization:1'], env);
    expect(wrong).toMatchObject({ code: 1, json: { code: 'VALIDATION_ERROR' } });
    const done = await admin(['select-account', '--workspace', ws.workspaceId, '--integration', pendingId, '--account', page], env);
    expect(done).toMatchObject({ code: 0, json: { id: pendingId, connectStatus: 'ACTIVE', name: 'Bletchley Ltd' } });
  }, 60_000);

  it('a denied consent, a forged, replayed or expired state and a failed exchange show a clear page and create nothing', async () => {
    const member = fake.addMember('Katherine Johnson');
    fake.signInAs(member);
    const before = (await integrations()).length;

    fake.consent = 'deny';
    const denied = await consent(await connectLink());
    fake.consent = 'allow';
    expect(denied.status).toBe(400);
    expect(denied.html).toContain('consent was cancelled');
    // The state was used up by that callback: the same link cannot be tried again, with a code or not.
    const deniedAgain = await fetch(denied.callback.replace(/error=[^&]+/, 'code=abc'));
    expect(deniedAgain.status).toBe(400);
    expect(await deniedAgain.text()).toContain('used already');

    const url = new URL(await connectLink());
    const state = url.searchParams.get('state')!;
    const [payload] = state.split('.');
    const forged = await fetch(`${service.base}/oauth/linkedin/callback?code=abc&state=${encodeURIComponent(`${payload}.AAAA`)}`);
    expect(forged.status).toBe(400);
    expect(await forged.text()).toContain('not valid');

    // Expired: a state this service signed, 16 minutes ago.
    const nonce = randomUUID();
    await sql`INSERT INTO connect_states (nonce, organization_id, user_id, platform, expires_at) VALUES (${nonce}, ${ws.workspaceId}, ${ws.userId}, 'LINKEDIN', now() - interval '1 minute')`;
    const old = Buffer.from(JSON.stringify({ k: 'state', n: nonce, w: ws.workspaceId, u: ws.userId, p: 'LINKEDIN', e: Date.now() - 60_000 })).toString('base64url');
    const expired = await fetch(`${service.base}/oauth/linkedin/callback?code=abc&state=${encodeURIComponent(`${old}.${service.service.core.app.secrets.sign(old)}`)}`);
    expect(expired.status).toBe(400);
    expect(await expired.text()).toContain('expired');

    const secret = fake.clientSecret;
    fake.clientSecret = 'rotated-at-linkedin';
    const failed = await consent(await connectLink());
    fake.clientSecret = secret;
    expect(failed.status).toBe(400);
    expect(failed.html).toContain('could not be connected');
    expect((await integrations()).length).toBe(before);

    const done = await consent(url.toString());
    expect(done.status).toBe(200);
    const replayed = await fetch(done.callback);
    expect(replayed.status).toBe(400);
    expect(await replayed.text()).toContain('used already');
    expect((await integrations()).length).toBe(before + 1);
  });

  it('a link asked for by a user no longer a member of the workspace connects nothing', async () => {
    const elsewhere = await service.workspace();
    const answer = await call(`${service.api}/integrations/connect`, { method: 'POST', key: elsewhere.apiKey, body: { platform: 'LINKEDIN' } });
    fake.signInAs(fake.addMember('Removed Member'));
    await sql`DELETE FROM memberships WHERE organization_id = ${elsewhere.workspaceId} AND user_id = ${elsewhere.userId}`;
    const page = await consent(answer.json.redirectUrl);
    expect(page.status).toBe(400);
    expect(page.html).toContain('no longer a member of the workspace');
    expect(await sql`SELECT 1 FROM integrations WHERE organization_id = ${elsewhere.workspaceId}`).toHaveLength(0);
  });

  it('without LINKEDIN_CLIENT_ID connect answers a clear 400; an unknown platform names the ones that can be connected', async () => {
    const { linkedin } = service.service.core.app.config;
    const clientId = linkedin.clientId;
    linkedin.clientId = undefined;
    try {
      const answer = await rest('/integrations/connect', { method: 'POST', body: { platform: 'LINKEDIN' } });
      expect(answer.status).toBe(400);
      expect(answer.json.message).toContain('set LINKEDIN_CLIENT_ID and LINKEDIN_CLIENT_SECRET');
    } finally {
      linkedin.clientId = clientId;
    }
    const unknown = await rest('/integrations/connect', { method: 'POST', body: { platform: 'MYSPACE' } });
    expect(unknown.json).toEqual({ code: 'VALIDATION_ERROR', message: 'platform: unknown platform "MYSPACE"; supported: BLUESKY, LINKEDIN, MASTODON' });
  });
});

describe('publishing to LinkedIn', () => {
  let member: FakeMember;
  let pageChannel: string;
  let pageUrn: string;

  beforeAll(async () => {
    member = fake.addMember('Hedy Lamarr', [{ id: 71_000 + Math.floor(Math.random() * 1000), name: 'Frequency Hopping' }]);
    pageUrn = `urn:li:organization:${member.pages[0]!.id}`;
    pageChannel = await connect(member, pageUrn);
  });

  it('publishes text with reserved characters as the page, its first comment, and deletes it', async () => {
    const content = 'Launch (v2) [beta]: 50% off *today* only_ @team #LaunchDay <3 ~ a\\b {x} | y #';
    const id = await createPost({ content, firstComment: 'Details: https://example.com/(docs)' }, [pageChannel]);
    const published = await settled(id);
    expect(published).toMatchObject({ status: 'PUBLISHED', failureReason: null });
    const post = fake.posts.get(published.platformPostId!)!;
    expect(post).toMatchObject({ author: pageUrn, visibility: 'PUBLIC', text: content });
    // The hashtag stays a hashtag; every other reserved character is escaped.
    expect(post.commentary).toContain('{hashtag|#|LaunchDay}');
    expect(post.commentary).toContain('\\(v2\\)');
    expect(published.releaseUrl).toBe(`https://www.linkedin.com/feed/update/${published.platformPostId}/`);
    expect(post.comments).toEqual([{ urn: expect.stringMatching(/^urn:li:comment:/), actor: pageUrn, text: 'Details: https://example.com/(docs)' }]);

    const deleted = await rest(`/schedules/${id}`, { method: 'DELETE' });
    expect(deleted.status, deleted.text).toBe(200);
    expect(fake.posts.has(published.platformPostId!)).toBe(false);
    expect((await scheduleState(id)).platformDeletedAt).toBeInstanceOf(Date);
  });

  it('LinkedIn\'s 422 duplicate is a permanent failure with a clear reason', async () => {
    const first = await settled(await createPost({ content: 'Said once' }, [pageChannel]));
    expect(first.status).toBe('PUBLISHED');
    const second = await settled(await createPost({ content: 'Said once' }, [pageChannel]));
    expect(second).toMatchObject({ status: 'FAILED', retryCount: 0, failureDetail: { status: 422, platformCode: 'DUPLICATE_POST' } });
    expect(second.failureReason).toContain('duplicate of a post already on this account');
    expect(postsBy(pageUrn).filter((post) => post.text === 'Said once')).toHaveLength(1);
  });

  it('a 429 is retried after its backoff, then published once', async () => {
    fake.failNext('posts', { status: 429, retryAfter: 60 });
    const id = await createPost({ content: 'After the rate limit' }, [pageChannel]);
    const waiting = await until(() => scheduleState(id), (s) => s.retryCount === 1);
    expect(waiting).toMatchObject({ status: 'SCHEDULED', retryCount: 1, failureDetail: { status: 429, platformCode: 'TOO_MANY_REQUESTS' } });
    const [job] = await sql<{ runAt: Date }[]>`SELECT run_at FROM graphile_worker.jobs WHERE key = ${`publish-schedule:${id}`}`;
    expect(job!.runAt.getTime() - Date.now()).toBeGreaterThan(50_000); // Retry-After 60 s, beyond the first backoff's 30 s
    await retryNow(id);
    expect(await settled(id)).toMatchObject({ status: 'PUBLISHED', retryCount: 1 });
    expect(postsBy(pageUrn).filter((post) => post.text === 'After the rate limit')).toHaveLength(1);
  });

  it('an answer lost after LinkedIn made the post is retried once; the duplicate answer fails it as probably live, never a second post', async () => {
    fake.failNext('posts', 'drop');
    const id = await createPost({ content: 'Made, answer lost' }, [pageChannel]);
    const waiting = await until(() => scheduleState(id), (s) => s.retryCount === 1);
    expect(waiting).toMatchObject({ status: 'SCHEDULED', retryCount: 1 });
    // While that retry waits, its text stays: a new one would not be refused as a duplicate, and would be a second post.
    const [{ postId }] = [...(await sql<{ postId: string }[]>`SELECT post_id FROM schedules WHERE id = ${id}`)] as [{ postId: string }];
    const edited = await rest(`/posts/${postId}`, { method: 'PATCH', body: { content: 'Made, answer lost, then edited' } });
    expect(edited.status, edited.text).toBe(200);
    expect(edited.json.message).toContain('1 schedule was not altered');
    const named = await rest(`/posts/${postId}`, { method: 'PATCH', body: { schedules: [{ id, content: 'Edited directly' }] } });
    expect(named.status).toBe(409);
    expect(named.json).toEqual({ code: 'INVALID_STATE', message: expect.stringContaining('is waiting to retry a send that got no answer (the post may be live)') });
    await retryNow(id);
    const failed = await settled(id);
    expect(failed).toMatchObject({ status: 'FAILED', failureDetail: { status: 422, platformCode: 'DUPLICATE_POST' } });
    expect(failed.failureReason).toContain('probably published it');
    expect(postsBy(pageUrn).filter((post) => post.text === 'Made, answer lost')).toHaveLength(1);
    expect(postsBy(pageUrn).filter((post) => post.text !== 'Made, answer lost' && post.text.startsWith('Made, answer lost'))).toHaveLength(0);
  });

  it('a 429 then a lost answer: the lost answer is still retried once, and the duplicate answer then says probably published', async () => {
    fake.failNext('posts', { status: 429 });
    fake.failNext('posts', 'drop');
    const id = await createPost({ content: 'Limited, then lost' }, [pageChannel]);
    await until(() => scheduleState(id), (s) => s.retryCount === 1);
    await retryNow(id);
    const waiting = await until(() => scheduleState(id), (s) => s.retryCount === 2);
    expect(waiting).toMatchObject({ status: 'SCHEDULED', retryCount: 2 });
    await retryNow(id);
    const failed = await settled(id);
    expect(failed).toMatchObject({ status: 'FAILED', failureDetail: { status: 422, platformCode: 'DUPLICATE_POST' } });
    expect(failed.failureReason).toContain('probably published it');
    expect(postsBy(pageUrn).filter((post) => post.text === 'Limited, then lost')).toHaveLength(1);
  });

  it('a 429 then LinkedIn\'s duplicate answer: a real duplicate (nothing was sent before), said as such', async () => {
    expect((await settled(await createPost({ content: 'Said before' }, [pageChannel]))).status).toBe('PUBLISHED');
    fake.failNext('posts', { status: 429 });
    const id = await createPost({ content: 'Said before' }, [pageChannel]);
    await until(() => scheduleState(id), (s) => s.retryCount === 1);
    await retryNow(id);
    const failed = await settled(id);
    expect(failed).toMatchObject({ status: 'FAILED', failureDetail: { status: 422 } });
    expect(failed.failureReason).toContain('change the text to post it again');
  });

  it('a schedule left PUBLISHING by a worker killed after LinkedIn made the post is recovered without a second post', async () => {
    const scheduledAt = new Date(Date.now() + 3_600_000).toISOString();
    const created = await rest('/posts', {
      method: 'POST',
      body: { rows: [{ content: 'Made, then the worker died', scheduledAt }], shared: { selectedIntegrations: [pageChannel] }, postAction: 'SCHEDULED_TIME' },
    });
    const [schedule] = await sql<{ id: string }[]>`SELECT id FROM schedules WHERE post_id = ${created.json.postId}`;
    const id = schedule!.id;
    // As a worker killed between LinkedIn's 201 and writing the status leaves it: the post on LinkedIn, the schedule PUBLISHING.
    fake.posts.set('urn:li:share:1', { urn: 'urn:li:share:1', author: pageUrn, commentary: 'Made, then the worker died', text: 'Made, then the worker died', visibility: 'PUBLIC', comments: [] });
    await sql`SELECT graphile_worker.remove_job(${`publish-schedule:${id}`})`;
    // It was due when the worker took it (a claim only takes a due schedule), and its post was sent.
    await sql`UPDATE schedules SET status = 'PUBLISHING', scheduled_at = now() - interval '2 minutes', post_sent_at = now(), last_attempt = now() - interval '1 minute' WHERE id = ${id}`;
    const recovered = await settled(id);
    expect(recovered).toMatchObject({ status: 'FAILED', platformPostId: null });
    expect(recovered.failureReason).toContain('probably published it');
    expect(postsBy(pageUrn).filter((post) => post.text === 'Made, then the worker died')).toHaveLength(1);
  });

  it('a first comment whose answer was lost is never sent again: PUBLISHED, with a reason saying it may or may not be there', async () => {
    fake.failNext('comments', 'drop');
    const id = await createPost({ content: 'Post with a comment whose answer is lost', firstComment: 'Said once' }, [pageChannel]);
    const published = await settled(id);
    expect(published).toMatchObject({ status: 'PUBLISHED', retryCount: 0, failureDetail: { status: null, platformMessage: expect.any(String), raw: expect.any(String) } });
    expect(published.failureReason).toMatch(/^Published; its first comment may or may not be there: it was sent and no answer settled it \(LinkedIn did not answer\), and LinkedIn cannot be asked/);
    // What the user reads: the schedule is published, with the note.
    const [row] = await sql<{ postId: string }[]>`SELECT post_id FROM schedules WHERE id = ${id}`;
    const seen = await rest(`/posts/${row!.postId}`);
    expect(seen.json.schedules).toMatchObject([{ id, status: 'PUBLISHED', failureReason: published.failureReason }]);
    const [post] = postsBy(pageUrn).filter((p) => p.text === 'Post with a comment whose answer is lost');
    expect(post!.comments.map((comment) => comment.text)).toEqual(['Said once']);
    // Nothing queued to send it again.
    expect(await jobsLeftUnder(sql, `publish-schedule:${id}`)).toEqual([]);
  });

  it('a first comment LinkedIn refused with 429 is sent on the retry, under the same post', async () => {
    fake.failNext('comments', { status: 429 });
    const id = await createPost({ content: 'Post whose comment was rate limited', firstComment: 'After the wait' }, [pageChannel]);
    const waiting = await until(() => scheduleState(id), (s) => s.retryCount === 1);
    expect(waiting).toMatchObject({ status: 'SCHEDULED', platformPostId: expect.stringMatching(/^urn:li:share:/) });
    await retryNow(id);
    expect(await settled(id)).toMatchObject({ status: 'PUBLISHED', failureReason: null, failureDetail: null });
    const posts = postsBy(pageUrn).filter((p) => p.text === 'Post whose comment was rate limited');
    expect(posts).toHaveLength(1);
    expect(posts[0]!.comments.map((comment) => comment.text)).toEqual(['After the wait']);
  });

  it('a worker killed after sending the first comment: recovered as PUBLISHED with the note, the comment not sent again', async () => {
    const scheduledAt = new Date(Date.now() + 3_600_000).toISOString();
    const created = await rest('/posts', {
      method: 'POST',
      body: { rows: [{ content: 'Commented, then the worker died', firstComment: 'Maybe there', scheduledAt }], shared: { selectedIntegrations: [pageChannel] }, postAction: 'SCHEDULED_TIME' },
    });
    const [schedule] = await sql<{ id: string }[]>`SELECT id FROM schedules WHERE post_id = ${created.json.postId}`;
    const id = schedule!.id;
    // As a worker killed between sending the comment and LinkedIn's answer leaves it: post confirmed, comment sent.
    const urn = 'urn:li:share:2';
    fake.posts.set(urn, { urn, author: pageUrn, commentary: 'Commented, then the worker died', text: 'Commented, then the worker died', visibility: 'PUBLIC', comments: [] });
    await sql`SELECT graphile_worker.remove_job(${`publish-schedule:${id}`})`;
    // It was due when the worker took it (a claim only takes a due schedule).
    await sql`UPDATE schedules SET status = 'PUBLISHING', platform_post_id = ${urn}, release_url = 'x', first_comment_sent_at = now(),
      scheduled_at = now() - interval '2 minutes', last_attempt = now() - interval '1 minute' WHERE id = ${id}`;
    const recovered = await settled(id);
    expect(recovered).toMatchObject({ status: 'PUBLISHED', platformPostId: urn });
    expect(recovered.failureReason).toContain('an earlier attempt sent it and its answer was lost');
    expect(fake.posts.get(urn)!.comments).toEqual([]);
    expect(fake.requests.filter((request) => request.includes(encodeURIComponent(urn)))).toEqual([]);
  });

  it('a LinkedIn-Version LinkedIn no longer serves fails the schedule saying to set LINKEDIN_VERSION, nothing posted', async () => {
    const { linkedin } = service.service.core.app.config;
    const version = linkedin.version;
    linkedin.version = '202301';
    let failed: ScheduleState;
    try {
      failed = await settled(await createPost({ content: 'With an old API version' }, [pageChannel]));
    } finally {
      linkedin.version = version;
    }
    expect(failed).toMatchObject({ status: 'FAILED', retryCount: 0, failureDetail: { status: 426, platformCode: 'NONEXISTENT_VERSION' } });
    expect(failed.failureReason).toMatch(/^LinkedIn does not serve API version 202301 \(LINKEDIN_VERSION\): the operator must set a recent one/);
    expect(postsBy(pageUrn).filter((post) => post.text === 'With an old API version')).toHaveLength(0);
  });

  it('settings.visibility CONNECTIONS keeps a member\'s post to its connections', async () => {
    const member = fake.addMember('Joan Clarke');
    const channel = await connect(member);
    const id = await createPost({ content: 'For my connections', overrides: [{ integrationId: channel, settings: { visibility: 'CONNECTIONS' } }] }, [channel]);
    expect(await settled(id)).toMatchObject({ status: 'PUBLISHED' });
    expect(postsBy(`urn:li:person:${member.sub}`)).toMatchObject([{ text: 'For my connections', visibility: 'CONNECTIONS' }]);
  });

  it('an outcome unknown twice is not retried a second time', async () => {
    fake.failNext('posts', 'drop');
    const id = await createPost({ content: 'Lost twice' }, [pageChannel]);
    await until(() => scheduleState(id), (s) => s.retryCount === 1);
    fake.failNext('posts', { status: 503 });
    await retryNow(id);
    const failed = await settled(id);
    expect(failed.status).toBe('FAILED');
    expect(failed.failureReason).toContain('cannot be asked');
    expect(postsBy(pageUrn).filter((post) => post.text === 'Lost twice')).toHaveLength(1);
  });
});

describe('LinkedIn token health', () => {
  it('the worker refreshes a token before it expires; publishing then uses the new one', async () => {
    fake.accessTokenTtlSeconds = 4;
    const member = fake.addMember('Barbara Liskov');
    let id: string;
    try {
      id = await connect(member);
    } finally {
      fake.accessTokenTtlSeconds = 60 * 24 * 3600;
    }
    const [connected] = (await integrations()).filter((i: any) => i.id === id);
    const refreshes = fake.refreshes;
    // Refreshed half-way through the 4 s the token lives; the new token lives 60 days.
    const refreshed = await until(integrations, (list) => list.some((i: any) => i.id === id && Date.parse(i.expiresAt) > Date.parse(connected.expiresAt) + 86_400_000));
    expect(fake.refreshes).toBe(refreshes + 1);
    expect(refreshed.find((i: any) => i.id === id)).toMatchObject({ tokenStatus: 'VALID', connectionErrorCode: null });
    const schedule = await settled(await createPost({ content: 'With a refreshed token' }, [id]));
    expect(schedule.status, JSON.stringify(schedule.failureDetail)).toBe('PUBLISHED');
    expect(postsBy(`urn:li:person:${member.sub}`).map((post) => post.text)).toEqual(['With a refreshed token']);
  });

  it('a token LinkedIn says has expired before its time is refreshed and the post sent once', async () => {
    const member = fake.addMember('Sophie Wilson');
    const id = await connect(member);
    const refreshes = fake.refreshes;
    fake.expireAccessTokens(member);
    const published = await settled(await createPost({ content: 'Sent with a token refreshed on the spot' }, [id]));
    expect(published.status, JSON.stringify(published.failureDetail)).toBe('PUBLISHED');
    expect(fake.refreshes).toBe(refreshes + 1);
    expect(postsBy(`urn:li:person:${member.sub}`)).toHaveLength(1);
    expect((await integrations()).find((i: any) => i.id === id)).toMatchObject({ tokenStatus: 'VALID', connectionErrorCode: null });
  });

  it('without a refresh token: autoRefreshUnavailable, EXPIRING before expiry, and an expired token fails due schedules saying to reconnect', async () => {
    fake.issueRefreshTokens = false;
    fake.accessTokenTtlSeconds = 3 * 86_400;
    const member = fake.addMember('Frances Allen');
    let id: string;
    try {
      id = await connect(member);
    } finally {
      fake.issueRefreshTokens = true;
      fake.accessTokenTtlSeconds = 60 * 24 * 3600;
    }
    expect((await integrations()).find((i: any) => i.id === id)).toMatchObject({ autoRefreshUnavailable: true, tokenStatus: 'EXPIRING' });
    expect((await sql`SELECT 1 FROM graphile_worker.jobs WHERE key = ${`refresh-credentials:${id}`}`).length).toBe(0);

    const checked = await ws.admin('refreshIntegration', { id });
    expect(checked).toMatchObject({ tokenStatus: 'EXPIRING', lastValidatedAt: expect.any(String) });

    fake.expireAccessTokens(member);
    const failed = await settled(await createPost({ content: 'After expiry' }, [id]));
    expect(failed.status).toBe('FAILED');
    expect(failed.failureReason).toContain('reconnect the channel');
    expect((await integrations()).find((i: any) => i.id === id)).toMatchObject({
      tokenStatus: 'EXPIRED',
      connectionErrorCode: 'ACCESS_TOKEN_EXPIRED',
      connectionError: expect.stringContaining('expired'),
      hasFailedSchedules: true,
    });
    // Reconnecting the same member mends the same channel.
    expect(await connect(member)).toBe(id);
    expect((await integrations()).find((i: any) => i.id === id)).toMatchObject({ tokenStatus: 'VALID', connectionErrorCode: null });
  });

  it('a revoked grant: refresh-now marks REFRESH_TOKEN_REVOKED, keeps lastValidatedAt, and due schedules fail saying to reconnect', async () => {
    const member = fake.addMember('Radia Perlman');
    const id = await connect(member);
    const validated = (await integrations()).find((i: any) => i.id === id).lastValidatedAt;
    fake.revoke(member);
    const refreshed = await ws.admin('refreshIntegration', { id });
    expect(refreshed).toMatchObject({ tokenStatus: 'REVOKED', connectionErrorCode: 'REFRESH_TOKEN_REVOKED', lastValidatedAt: validated });
    expect(refreshed.connectionError).toContain('reconnect');
    const failed = await settled(await createPost({ content: 'After revocation' }, [id]));
    expect(failed).toMatchObject({ status: 'FAILED' });
    expect(failed.failureReason).toContain('reconnect the channel');
    expect(postsBy(`urn:li:person:${member.sub}`)).toHaveLength(0);
  });

  it('credentials this ENCRYPTION_KEY cannot read: due schedules fail saying so, the channel says CREDENTIALS_UNREADABLE', async () => {
    const member = fake.addMember('Adele Goldberg');
    const id = await connect(member);
    await sql`UPDATE integrations SET credentials = ${Buffer.from('sealed under another key')} WHERE id = ${id}`;
    const failed = await settled(await createPost({ content: 'Under another key' }, [id]));
    expect(failed).toMatchObject({ status: 'FAILED' });
    expect(failed.failureReason).toContain('cannot be read with this ENCRYPTION_KEY');
    expect((await integrations()).find((i: any) => i.id === id)).toMatchObject({ tokenStatus: 'REVOKED', connectionErrorCode: 'CREDENTIALS_UNREADABLE' });
    // The next due schedule fails as the channel says, and leaves the channel's own error as it was.
    const next = await settled(await createPost({ content: 'Under another key, again' }, [id]));
    expect(next.failureReason).toContain('reconnect the channel');
    const channel = (await integrations()).find((i: any) => i.id === id);
    expect(channel).toMatchObject({ tokenStatus: 'REVOKED', connectionErrorCode: 'CREDENTIALS_UNREADABLE' });
    expect(channel.connectionError).toContain('cannot be read with this ENCRYPTION_KEY');
    expect(postsBy(`urn:li:person:${member.sub}`)).toHaveLength(0);
  });

  it('disconnect forgets the credentials and keeps the channel; refresh-now of a healthy channel refreshes it', async () => {
    const member = fake.addMember('Shafi Goldwasser');
    const id = await connect(member);
    const refreshes = fake.refreshes;
    expect(await ws.admin('refreshIntegration', { id })).toMatchObject({ tokenStatus: 'VALID' });
    expect(fake.refreshes).toBe(refreshes + 1);
    const disconnected = await ws.admin('disconnectIntegration', { id });
    expect(disconnected).toMatchObject({ id, tokenStatus: 'MISSING', connectionErrorCode: 'DISCONNECTED', expiresAt: null });
    expect((await sql`SELECT credentials FROM integrations WHERE id = ${id}`)[0]!.credentials).toBeNull();
    expect((await sql`SELECT 1 FROM graphile_worker.jobs WHERE key = ${`refresh-credentials:${id}`}`).length).toBe(0);
    const failed = await settled(await createPost({ content: 'While disconnected' }, [id]));
    expect(failed.failureReason).toContain('not connected');
    // The key reaches neither operation.
    expect((await rest(`/integrations/${id}/disconnect`, { method: 'POST' })).status).toBe(404);
    expect((await rest(`/integrations/${id}/refresh`, { method: 'POST' })).status).toBe(404);
  });
});

describe('MCP', () => {
  it('connectIntegration and listIntegrations answer for LinkedIn as for Bluesky', async () => {
    const mcp = new Client({ name: 'test', version: '1.0.0' });
    await mcp.connect(new StreamableHTTPClientTransport(new URL(`${service.base}/mcp`), { requestInit: { headers: { 'x-api-key': ws.apiKey } } }));
    try {
      const connected = await mcp.callTool({ name: 'connectIntegration', arguments: { platform: 'LINKEDIN' } });
      expect(connected.isError).toBeFalsy();
      const { redirectUrl } = connected.structuredContent as { redirectUrl: string };
      expect(redirectUrl).toMatch(new RegExp(`^${fake.url}/oauth/v2/authorization\\?`));
      fake.signInAs(fake.addMember('Margaret Hamilton'));
      const id = channelIdOf((await consent(redirectUrl)).html);
      const listed = await mcp.callTool({ name: 'listIntegrations', arguments: {} });
      expect((listed.structuredContent as any).items).toEqual((await rest('/integrations')).json);
      expect((listed.structuredContent as any).items.find((i: any) => i.id === id)).toMatchObject({ platform: 'LINKEDIN', name: 'Margaret Hamilton' });
      const { tools } = await mcp.listTools();
      expect(tools.map((tool) => tool.name)).not.toContain('selectIntegrationAccount'); // internal: not for keys
    } finally {
      await mcp.close();
    }
  });
});
