import { once } from 'node:events';
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import postgres from 'postgres';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../src/process/config.js';
import { connectThroughForm, createAccount, postsOf, type TestAccount } from './support/bluesky.js';
import { connectLinkedIn, startServiceWithLinkedIn } from './support/linkedin-browser.js';
import { startFakeLinkedIn, type FakeLinkedIn } from './support/linkedin.js';
import { connectMastodon, startFakeMastodon, type FakeMastodon } from './support/mastodon.js';
import { call, eventually, isSettled, type TestService, type Workspace } from './support/service.js';
import { followThreadsLinks, startFakeThreads, type FakeThreads, type ThreadsRequest } from './support/threads.js';

/**
 * The workflows across the four platforms, published by the worker: a Bluesky channel on the real PDS, a LinkedIn
 * channel on LinkedIn's contract fake, a Mastodon channel (issue 46) and a Threads channel (issue 47) on their strict
 * fakes. One post to all four at once with each channel's own text, each published exactly once; the approval
 * workflow with a Mastodon and a Threads channel (held, approved then published once, rejected); evergreen recycling
 * with each (a new Mastodon status under a new Idempotency-Key, a new Threads post from a new container); and the
 * events and signed webhook of a Mastodon publish. One service, one workspace and one set of fakes for the whole file.
 */

let mastodon: FakeMastodon;
let linkedin: FakeLinkedIn;
let threads: FakeThreads;
let receiver: Server;
const received: { headers: IncomingHttpHeaders; body: string }[] = [];
let service: TestService;
let ws: Workspace;
let sql: postgres.Sql;
let account: TestAccount;
const channels = { bluesky: '', linkedin: '', mastodon: '', threads: '' };

beforeAll(async () => {
  receiver = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      received.push({ headers: request.headers, body: Buffer.concat(chunks).toString() });
      response.writeHead(200, { 'content-type': 'text/plain' }).end('ok');
    });
  });
  receiver.listen(0, '127.0.0.1');
  [mastodon, linkedin, threads, account] = await Promise.all([
    startFakeMastodon({ autoConsent: 'ann' }),
    startFakeLinkedIn(),
    startFakeThreads({ autoConsent: 'threads_ann' }),
    createAccount(),
    once(receiver, 'listening'),
  ]).then(([m, l, t, a]) => [m, l, t, a] as const);
  service = await startServiceWithLinkedIn(linkedin, {
    mediaFetchAllowHosts: [mastodon.host, `127.0.0.1:${(receiver.address() as AddressInfo).port}`],
    webhookTimeoutMs: 2000,
    webhookRetryDelaysMs: [200, 200, 200],
    threads: { ...loadConfig({}).threads, appId: threads.app.appId, appSecret: threads.app.appSecret, authUrl: threads.url, apiUrl: threads.url, version: threads.version },
  });
  threads.app.redirectUris.push(`${service.base}/oauth/threads/callback`);
  ws = await service.workspace({ plan: 'business' });
  sql = postgres(service.databaseUrl, { max: 2, onnotice: () => {}, transform: postgres.camel });
  [channels.bluesky, channels.linkedin, channels.mastodon, channels.threads] = await Promise.all([
    connectThroughForm(service.api, ws.apiKey, account),
    connectLinkedIn(service, ws.apiKey, linkedin, linkedin.addMember('Ada Lovelace')),
    connectMastodon(service.api, ws.apiKey, mastodon),
    connectThreads(),
  ]);
});

afterAll(async () => {
  await sql?.end();
  await service?.stop();
  await Promise.all([mastodon?.close(), linkedin?.stop(), threads?.close()]);
  receiver?.closeAllConnections();
  receiver?.close();
});

const rest = (path: string, options: { method?: string; body?: unknown } = {}, key = ws.apiKey) => call(`${service.api}${path}`, { key, ...options });

/** `threads_ann` connected through the fake's Authorization Window (consenting at once) back to our callback. */
async function connectThreads(): Promise<string> {
  const link = await rest('/integrations/connect', { method: 'POST', body: { platform: 'THREADS' } });
  expect(link.status, link.text).toBe(200);
  const page = await followThreadsLinks(link.json.redirectUrl);
  expect(page.status, page.html).toBe(200);
  return /<code>([0-9a-f-]{36})<\/code>/.exec(page.html)![1]!;
}

interface ScheduleRow {
  id: string;
  integrationId: string;
  status: string;
  platformPostId: string | null;
  releaseUrl: string | null;
  failureReason: string | null;
  originRecycleEventId: string | null;
  scheduledAt: Date;
}

const schedulesOf = (postId: string) =>
  sql<ScheduleRow[]>`
    SELECT id, integration_id, status, platform_post_id, release_url, failure_reason, origin_recycle_event_id, scheduled_at
    FROM schedules WHERE post_id = ${postId} ORDER BY created_at, id`;
const scheduleById = async (id: string) => (await sql<ScheduleRow[]>`
    SELECT id, integration_id, status, platform_post_id, release_url, failure_reason, origin_recycle_event_id, scheduled_at
    FROM schedules WHERE id = ${id}`)[0]!;
const settled = (id: string) => eventually(() => scheduleById(id), isSettled, 30_000);

/** A post made over REST with `key`; answers its id and the API's answer. */
async function createPost(row: Record<string, unknown>, integrationIds: string[], { key = ws.apiKey, postAction = 'PUBLISH_NOW' } = {}) {
  const created = await rest('/posts', { method: 'POST', body: { rows: [row], shared: { selectedIntegrations: integrationIds }, postAction } }, key);
  expect(created.status, created.text).toBe(201);
  return created.json as { postId: string; message: string; approvalStatus?: string | null; canSchedule?: boolean };
}

/** The sends of a status with this text the instance received (whatever their outcome). */
const sendsOf = (text: string) =>
  mastodon.requests.filter((request) => request.method === 'POST' && request.path === '/api/v1/statuses' && (request.body as { status?: string } | undefined)?.status === text);
const statusesWith = (text: string) => mastodon.statusesOf('ann').filter((status) => status.text === text);

/** The container a threads_publish request named (sent as a form; the query string would do too). */
const creationIdOf = (request: ThreadsRequest) => String((request.body as { creation_id?: string } | undefined)?.creation_id ?? request.query.creation_id);
/** The threads_publish requests Meta received for a container with this text (whatever their outcome). */
const threadsPublishesOf = (text: string) =>
  threads.requests.filter((request) => request.method === 'POST' && request.path.endsWith('/threads_publish') && threads.containers.get(creationIdOf(request))?.text === text);
/** The account's Threads posts (replies and carousel items left out) with this text. */
const threadsPostsWith = (text: string) => threads.postsOf('threads_ann').filter((post) => post.text === text);
/** The container a schedule kept before publishing (`post_sent_ref`). */
const keptContainerOf = async (scheduleId: string) => (await sql<{ postSentRef: string | null }[]>`SELECT post_sent_ref FROM schedules WHERE id = ${scheduleId}`)[0]!.postSentRef;

/** A job for the schedule queued by hand, as any stray job would ask for it, and its end (the engine's claim decides). */
async function strayJobFor(scheduleId: string) {
  const key = `publish-schedule:${scheduleId}`;
  await sql`SELECT graphile_worker.add_job('publish-schedule', json_build_object('scheduleId', ${scheduleId}::uuid), job_key := ${key})`;
  const left = await eventually(() => sql`SELECT 1 FROM graphile_worker.jobs WHERE key = ${key}`, (rows) => rows.length === 0, 15_000);
  expect(left, 'the hand-queued job was never run').toHaveLength(0);
}

const jobsOf = (postId: string) =>
  sql`SELECT j.key FROM graphile_worker.jobs j JOIN schedules s ON j.key = 'publish-schedule:' || s.id WHERE s.post_id = ${postId}`;

describe('one post to Bluesky, LinkedIn, Mastodon and Threads', () => {
  it('publishes each channel\'s own text on all four at once, each exactly once, through the worker', async () => {
    const tag = randomUUID().slice(0, 8);
    const texts = {
      shared: `Said to nobody in these words ${tag}`,
      bluesky: `Short and light, for Bluesky ${tag}`,
      linkedin: `At more length, for the people on LinkedIn ${tag}`,
      mastodon: `Hello to the fediverse ${tag}`,
      threads: `A word for the people on Threads ${tag}`,
    };
    const threadsFrom = threads.requests.length;
    const { postId } = await createPost(
      {
        content: texts.shared,
        overrides: [
          { integrationId: channels.bluesky, content: texts.bluesky },
          { integrationId: channels.linkedin, content: texts.linkedin },
          { integrationId: channels.mastodon, content: texts.mastodon },
          { integrationId: channels.threads, content: texts.threads },
        ],
      },
      [channels.bluesky, channels.linkedin, channels.mastodon, channels.threads],
    );
    const schedules = await schedulesOf(postId);
    expect(schedules.map((schedule) => schedule.integrationId).sort()).toEqual(Object.values(channels).sort());
    const outcome = Object.fromEntries(
      await Promise.all(schedules.map(async (schedule) => [schedule.integrationId, await settled(schedule.id)] as const)),
    ) as Record<string, ScheduleRow>;
    for (const schedule of Object.values(outcome)) expect(schedule, JSON.stringify(schedule)).toMatchObject({ status: 'PUBLISHED', failureReason: null });

    // Bluesky: one record, its own text.
    const records = (await postsOf(account)).filter((record) => (record.value as { text: string }).text.includes(tag));
    expect(records.map((record) => (record.value as { text: string }).text)).toEqual([texts.bluesky]);
    expect(records[0]!.uri).toBe(outcome[channels.bluesky]!.platformPostId);

    // LinkedIn: one post, its own text.
    const posts = [...linkedin.posts.values()].filter((post) => post.text.includes(tag));
    expect(posts.map((post) => post.text)).toEqual([texts.linkedin]);
    expect(posts[0]!.urn).toBe(outcome[channels.linkedin]!.platformPostId);

    // Mastodon: one send, one status, its own text; the schedule names the status and its URL on the instance.
    const statuses = mastodon.statusesOf('ann').filter((status) => status.text.includes(tag));
    expect(statuses.map((status) => status.text)).toEqual([texts.mastodon]);
    expect(mastodon.requests.filter((request) => request.method === 'POST' && request.path === '/api/v1/statuses' && JSON.stringify(request.body).includes(tag))).toHaveLength(1);
    expect(outcome[channels.mastodon]).toMatchObject({ platformPostId: statuses[0]!.id, releaseUrl: `${mastodon.url}/@ann/${statuses[0]!.id}` });

    // Threads: one container published once, one post, its own text; the schedule names the post and its permalink.
    const made = threads.postsOf('threads_ann').filter((post) => post.text?.includes(tag));
    expect(made.map((post) => post.text)).toEqual([texts.threads]);
    const published = threads.requests.slice(threadsFrom).filter((request) => request.method === 'POST' && request.path.endsWith('/threads_publish'));
    expect(published.map(creationIdOf)).toEqual([made[0]!.containerId]);
    expect(outcome[channels.threads]).toMatchObject({ platformPostId: made[0]!.id, releaseUrl: made[0]!.permalink });
  });
});

describe('approval with a Mastodon and a Threads channel', () => {
  let agentKey: string;
  beforeAll(async () => {
    agentKey = (await ws.admin('createApiKey', { name: 'agent', postsNeedApproval: true })).key;
  });

  it('holds the post from Mastodon until it is approved, whatever job asks for it; approved, it publishes once', async () => {
    const text = `Written by an agent, read by a person first ${randomUUID().slice(0, 8)}`;
    const created = await createPost({ content: text }, [channels.mastodon], { key: agentKey });
    expect(created).toMatchObject({ approvalStatus: 'pending_review', canSchedule: false });
    const [schedule] = await schedulesOf(created.postId);
    expect(schedule).toMatchObject({ status: 'SCHEDULED' });
    // Due now, with the worker running: no job is queued for it, and one queued by hand is refused by the claim.
    expect(await jobsOf(created.postId)).toEqual([]);
    await strayJobFor(schedule!.id);
    expect(await scheduleById(schedule!.id)).toMatchObject({ status: 'SCHEDULED', platformPostId: null });
    expect(sendsOf(text)).toEqual([]);

    const approved = await ws.admin('approvePost', { id: created.postId, note: 'Fine for the fediverse' });
    expect(approved).toMatchObject({ approvalStatus: 'approved', canSchedule: true });
    const published = await settled(schedule!.id);
    expect(published, JSON.stringify(published)).toMatchObject({ status: 'PUBLISHED', failureReason: null });
    const statuses = statusesWith(text);
    expect(statuses).toHaveLength(1);
    expect(sendsOf(text)).toHaveLength(1);
    expect(published).toMatchObject({ platformPostId: statuses[0]!.id, releaseUrl: `${mastodon.url}/@ann/${statuses[0]!.id}` });
  });

  it('a rejected Mastodon post publishes nothing, whatever job asks for it', async () => {
    const text = `Not fit to publish, as a reviewer found ${randomUUID().slice(0, 8)}`;
    const created = await createPost({ content: text }, [channels.mastodon], { key: agentKey });
    expect(created).toMatchObject({ approvalStatus: 'pending_review' });
    const rejected = await ws.admin('rejectPost', { id: created.postId, note: 'Not this one' });
    expect(rejected).toMatchObject({ approvalStatus: 'rejected', canSchedule: false, approvalNote: 'Not this one' });
    const [schedule] = await schedulesOf(created.postId);
    expect(await jobsOf(created.postId)).toEqual([]);
    await strayJobFor(schedule!.id);
    expect(await scheduleById(schedule!.id)).toMatchObject({ status: 'SCHEDULED', platformPostId: null });
    expect(sendsOf(text)).toEqual([]);
    expect(statusesWith(text)).toEqual([]);
    expect(await sql`SELECT 1 FROM events WHERE post_id = ${created.postId} AND type IN ('schedule.publishing', 'schedule.published')`).toHaveLength(0);
  });

  it('holds the post from Threads until it is approved, whatever job asks for it; approved, it publishes once', async () => {
    const text = `Written by an agent for Threads, read by a person first ${randomUUID().slice(0, 8)}`;
    const created = await createPost({ content: text }, [channels.threads], { key: agentKey });
    expect(created).toMatchObject({ approvalStatus: 'pending_review', canSchedule: false });
    const [schedule] = await schedulesOf(created.postId);
    expect(schedule).toMatchObject({ integrationId: channels.threads, status: 'SCHEDULED' });
    // Due now, with the worker running: no job is queued for it, and one queued by hand is refused by the claim, before
    // any container is made.
    expect(await jobsOf(created.postId)).toEqual([]);
    await strayJobFor(schedule!.id);
    expect(await scheduleById(schedule!.id)).toMatchObject({ status: 'SCHEDULED', platformPostId: null });
    expect([...threads.containers.values()].filter((container) => container.text === text)).toEqual([]);
    expect(threadsPublishesOf(text)).toEqual([]);

    const approved = await ws.admin('approvePost', { id: created.postId, note: 'Fine for Threads' });
    expect(approved).toMatchObject({ approvalStatus: 'approved', canSchedule: true });
    const published = await settled(schedule!.id);
    expect(published, JSON.stringify(published)).toMatchObject({ status: 'PUBLISHED', failureReason: null });
    const posts = threadsPostsWith(text);
    expect(posts).toHaveLength(1);
    expect(threadsPublishesOf(text).map(creationIdOf)).toEqual([posts[0]!.containerId]);
    expect(published).toMatchObject({ platformPostId: posts[0]!.id, releaseUrl: posts[0]!.permalink });
    expect(await keptContainerOf(schedule!.id)).toBe(posts[0]!.containerId);
  });
});

describe('evergreen recycling with a Mastodon and a Threads channel', () => {
  /** Every hour of every day: a recycled schedule's slot is within the hour. */
  const EVERY_HOUR = [{ weekdays: [1, 2, 3, 4, 5, 6, 7], times: Array.from({ length: 24 }, (_, hour) => `${String(hour).padStart(2, '0')}:00`) }];

  it('schedules a published evergreen post on Mastodon again, and it goes out as a new status under another Idempotency-Key', async () => {
    const text = `Our guide to the fediverse, still true ${randomUUID().slice(0, 8)}`;
    const { postId } = await createPost({ content: text, isEvergreen: true }, [channels.mastodon]);
    const [original] = await schedulesOf(postId);
    expect((await settled(original!.id)).status).toBe('PUBLISHED');
    // Published 40 days ago, as far as the rule's interval (30 days) can tell.
    await sql`UPDATE schedules SET published_at = published_at - interval '40 days' WHERE post_id = ${postId}`;

    const rule = await ws.admin('createRecycleRule', { name: 'Fediverse best of', integrationIds: [channels.mastodon], postingWindows: EVERY_HOUR });
    // The first run is at once.
    const events = await eventually(async () => (await ws.admin('listRecycleEvents', { ruleId: rule.id })).items, (items) => items.length > 0, 20_000);
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({ postId, status: 'RECYCLED', skipped: [], linkedinVariation: null });
    expect(events[0].scheduleIds).toHaveLength(1);
    const copy = await scheduleById(events[0].scheduleIds[0]);
    expect(copy).toMatchObject({ integrationId: channels.mastodon, status: 'SCHEDULED', originRecycleEventId: events[0].id });
    expect(copy.scheduledAt.getTime() - Date.now()).toBeLessThanOrEqual(3_600_000);
    const [stored] = await sql<{ scheduledContent: string }[]>`SELECT scheduled_content FROM schedules WHERE id = ${copy.id}`;
    expect(stored!.scheduledContent).toBe(text);

    // An ordinary schedule: moved to now, it publishes.
    const moved = await rest(`/posts/schedules/${copy.id}/reschedule`, { method: 'POST', body: { scheduledAt: new Date(Date.now() + 1000).toISOString() } });
    expect(moved.status, moved.text).toBe(200);
    const republished = await settled(copy.id);
    expect(republished, JSON.stringify(republished)).toMatchObject({ status: 'PUBLISHED', failureReason: null });

    // Two statuses, the original and the copy, each sent once and under its own key: the instance did not answer the
    // copy's send with the original status as it answers a repeated key.
    const statuses = statusesWith(text);
    expect(statuses).toHaveLength(2);
    const [first, second] = statuses;
    expect(second!.id).not.toBe(first!.id);
    expect((await scheduleById(original!.id)).platformPostId).toBe(first!.id);
    expect(republished.platformPostId).toBe(second!.id);
    expect(republished.releaseUrl).toBe(`${mastodon.url}/@ann/${second!.id}`);
    expect(first!.idempotencyKey).toBeTruthy();
    expect(second!.idempotencyKey).toBeTruthy();
    expect(second!.idempotencyKey).not.toBe(first!.idempotencyKey);
    const keys = sendsOf(text).map((request) => request.headers['idempotency-key']);
    expect(keys).toEqual([first!.idempotencyKey, second!.idempotencyKey]);
    await ws.admin('deleteRecycleRule', { id: rule.id });
  });

  it('schedules a published evergreen post on Threads again, and it goes out as a new post from a new container', async () => {
    const text = `Our guide to Threads, still true ${randomUUID().slice(0, 8)}`;
    const { postId } = await createPost({ content: text, isEvergreen: true }, [channels.threads]);
    const [original] = await schedulesOf(postId);
    expect((await settled(original!.id)).status).toBe('PUBLISHED');
    await sql`UPDATE schedules SET published_at = published_at - interval '40 days' WHERE post_id = ${postId}`;

    const rule = await ws.admin('createRecycleRule', { name: 'Threads best of', integrationIds: [channels.threads], postingWindows: EVERY_HOUR });
    try {
      const events = await eventually(async () => (await ws.admin('listRecycleEvents', { ruleId: rule.id })).items, (items) => items.length > 0, 20_000);
      expect(events).toHaveLength(1);
      expect(events[0]).toMatchObject({ postId, status: 'RECYCLED', skipped: [], linkedinVariation: null });
      expect(events[0].scheduleIds).toHaveLength(1);
      const copy = await scheduleById(events[0].scheduleIds[0]);
      expect(copy).toMatchObject({ integrationId: channels.threads, status: 'SCHEDULED', originRecycleEventId: events[0].id, platformPostId: null });
      expect(copy.scheduledAt.getTime() - Date.now()).toBeLessThanOrEqual(3_600_000);
      // The copy keeps no container of the original's: it is a post still to make, not one to look up.
      expect(await keptContainerOf(copy.id)).toBeNull();

      const moved = await rest(`/posts/schedules/${copy.id}/reschedule`, { method: 'POST', body: { scheduledAt: new Date(Date.now() + 1000).toISOString() } });
      expect(moved.status, moved.text).toBe(200);
      const republished = await settled(copy.id);
      expect(republished, JSON.stringify(republished)).toMatchObject({ status: 'PUBLISHED', failureReason: null });

      // Two posts, the original and the copy, each from its own container published once.
      const posts = threadsPostsWith(text);
      expect(posts).toHaveLength(2);
      const [first, second] = posts;
      expect(second!.id).not.toBe(first!.id);
      expect(second!.containerId).not.toBe(first!.containerId);
      expect(threadsPublishesOf(text).map(creationIdOf)).toEqual([first!.containerId, second!.containerId]);
      expect(await scheduleById(original!.id)).toMatchObject({ platformPostId: first!.id, releaseUrl: first!.permalink });
      expect(republished).toMatchObject({ platformPostId: second!.id, releaseUrl: second!.permalink });
      expect(await keptContainerOf(original!.id)).toBe(first!.containerId);
      expect(await keptContainerOf(copy.id)).toBe(second!.containerId);
    } finally {
      await ws.admin('deleteRecycleRule', { id: rule.id });
    }
  });
});

describe('events and webhooks of a Mastodon publish', () => {
  it('the feed has schedule.publishing and schedule.published with the status URL, and a receiver gets schedule.published signed', async () => {
    const url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
    const endpoint = await ws.admin('createWebhook', { url, eventTypes: ['schedule.published'] });
    try {
      const text = `Events from a Mastodon publish ${randomUUID().slice(0, 8)}`;
      const { postId } = await createPost({ content: text }, [channels.mastodon]);
      const [schedule] = await schedulesOf(postId);
      const published = await settled(schedule!.id);
      expect(published.status, published.failureReason ?? '').toBe('PUBLISHED');
      const [status] = statusesWith(text);
      const releaseUrl = `${mastodon.url}/@ann/${status!.id}`;
      expect(published.releaseUrl).toBe(releaseUrl);

      // The feed serves an event once every older transaction has ended: soon, not at once.
      const feed = await eventually(
        () => rest(`/events?resourceId=${postId}&limit=100`),
        (answer) => answer.json?.items?.some((event: { type: string }) => event.type === 'schedule.published'),
        10_000,
      );
      expect(feed.status, feed.text).toBe(200);
      const ofSchedule = feed.json.items.filter((event: { type: string; data: { id: string } }) => event.type.startsWith('schedule.') && event.data.id === schedule!.id);
      expect(ofSchedule.map((event: { type: string }) => event.type)).toEqual(['schedule.scheduled', 'schedule.publishing', 'schedule.published']);
      const [, publishing, done] = ofSchedule;
      expect(publishing.data).toMatchObject({ id: schedule!.id, postId, integrationId: channels.mastodon, status: 'PUBLISHING', releaseUrl: null });
      expect(done.data).toMatchObject({ id: schedule!.id, postId, integrationId: channels.mastodon, status: 'PUBLISHED', platformPostId: status!.id, releaseUrl });
      // The same event as a type filter finds it.
      const byType = await rest(`/events?resourceId=${postId}&type=schedule.published`);
      expect(byType.json.items).toEqual([done]);

      // The webhook: only the type asked for, once, signed as Standard Webhooks says, the envelope the feed serves.
      await eventually(
        async () => (await ws.admin('listWebhookDeliveries', { id: endpoint.id, limit: 100 })).items,
        (items) => items.some((item: { eventId: string; status: string }) => item.eventId === done.id && item.status === 'delivered'),
        15_000,
      );
      const about = received.filter((request) => JSON.parse(request.body).data?.postId === postId);
      expect(about).toHaveLength(1);
      const [got] = about;
      const headers = got!.headers as Record<string, string>;
      expect(new Webhook(endpoint.secret).verify(got!.body, headers)).toEqual(done);
      expect(headers['webhook-id']).toBe(done.id);
      expect(Math.abs(Number(headers['webhook-timestamp']) - Date.now() / 1000)).toBeLessThan(60);
      expect(() => new Webhook(endpoint.secret).verify(got!.body.replace(status!.id, `${status!.id}0`), headers)).toThrow();
    } finally {
      await ws.admin('deleteWebhook', { id: endpoint.id });
    }
  });
});
