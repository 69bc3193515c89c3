import { once } from 'node:events';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectThroughForm, createAccount, postsOf, type TestAccount } from './support/bluesky.js';
import { alive, checkout, run, stop, waitFor, type Running } from './support/processes.js';
import { call, eventually, isSettled, startTestService, type TestService, type Workspace } from './support/service.js';

/**
 * The publishing engine in a real `npm run worker` process, stopped the two ways a host stops it: SIGKILL (a crash,
 * an OOM kill) after the PDS accepted a record but before the status was written, and SIGTERM (a deploy) in the
 * middle of a publish. The fault sits in the worker's global fetch (test/support/platform-faults.mjs), where the
 * Bluesky client's requests really go. The API runs in this process without a worker, so the child takes the job;
 * the recovery is a worker started here afterwards. The worker runs from a checkout under a path with a space.
 */

let service: TestService;
let ws: Workspace;
let sql: postgres.Sql;
let account: TestAccount;
let integrationId: string;
const started: Running[] = [];
let parent: string;
let project: string;
/** Short, so the recovery of a killed worker's schedule need not wait minutes (no publish on loopback takes 3 s). */
const RECOVERY = { publishStaleMs: 3000, publishRecoveryIntervalMs: 200 };

beforeAll(async () => {
  parent = await mkdtemp(join(tmpdir(), 'postwise-processes-'));
  project = join(parent, 'my project');
  await checkout(project);
  service = await startTestService({}, { api: true, worker: false });
  ws = await service.workspace({ plan: 'business' });
  sql = postgres(service.databaseUrl, { max: 2, onnotice: () => {}, transform: postgres.camel });
  account = await createAccount();
  integrationId = await connectThroughForm(service.api, ws.apiKey, account);
});
afterAll(async () => {
  for (const running of started) if (alive(-running.child.pid!)) process.kill(-running.child.pid!, 'SIGKILL');
  await sql?.end();
  await service?.stop();
  if (parent) await rm(parent, { recursive: true, force: true });
});

/** `npm run worker` on the test's database, with `fault` in its fetch. */
async function worker(fault: string, env: NodeJS.ProcessEnv = {}): Promise<Running> {
  // NODE_OPTIONS splits at spaces, so the module goes in as a file URL (a space is %20 there), not as a path.
  const faults = pathToFileURL(join(project, 'test', 'support', 'platform-faults.mjs')).href;
  const running = run(['run', 'worker'], {
    DATABASE_URL: service.databaseUrl,
    ENCRYPTION_KEY: service.service.core.app.config.encryptionKey!,
    NODE_OPTIONS: `--import ${faults}`,
    POSTWISE_TEST_FAULT: fault,
    LOG_LEVEL: 'info',
    ...env,
  }, { cwd: project });
  started.push(running);
  await waitFor(running, /Postwise worker running/);
  return running;
}

async function publishNow(content: string): Promise<string> {
  const created = await call(`${service.api}/posts`, {
    method: 'POST',
    key: ws.apiKey,
    body: { rows: [{ content }], shared: { selectedIntegrations: [integrationId] }, postAction: 'PUBLISH_NOW' },
  });
  expect(created.status, created.text).toBe(201);
  const [schedule] = await sql<{ id: string }[]>`SELECT id FROM schedules WHERE post_id = ${created.json.postId}`;
  return schedule!.id;
}

const stateOf = async (id: string) =>
  (await sql<{ status: string; retryCount: number; platformPostId: string | null; failureReason: string | null }[]>`
    SELECT status, retry_count, platform_post_id, failure_reason FROM schedules WHERE id = ${id}`)[0]!;

/** The schedule once it is PUBLISHED or FAILED (30 s only a safety bound). */
const settled = (id: string) => eventually(() => stateOf(id), isSettled, 30_000);

const recordsOf = async (text: string) => (await postsOf(account)).filter((post) => (post.value as { text: string }).text === text);

/** A worker in this process, as another host's would be, to take over what the stopped one left. */
async function withRecoveringWorker<T>(body: () => Promise<T>): Promise<T> {
  const other = await startTestService({ databaseUrl: service.databaseUrl, encryptionKey: service.service.core.app.config.encryptionKey, ...RECOVERY }, { api: false, worker: true });
  try {
    return await body();
  } finally {
    await other.stop();
  }
}

describe('a worker process stopped mid-publish', () => {
  it('SIGKILL after the PDS accepted, before the status was written: recovery finds the record and publishes nothing twice', async () => {
    const child = await worker('accept-then-hang');
    const id = await publishNow('Accepted, then the worker was killed');
    await waitFor(child, /FAULT createRecord accepted/);
    process.kill(-child.child.pid!, 'SIGKILL');
    await child.exited;

    expect(await stateOf(id)).toMatchObject({ status: 'PUBLISHING', platformPostId: null });
    const [record] = await recordsOf('Accepted, then the worker was killed');
    expect(record).toBeDefined();

    const state = await withRecoveringWorker(() => settled(id));
    expect(state).toMatchObject({ status: 'PUBLISHED', platformPostId: record!.uri, retryCount: 0 });
    expect(await recordsOf('Accepted, then the worker was killed')).toHaveLength(1);
  }, 90_000);

  it('SIGKILL with jobs waiting in its local queue: they are released to another worker and each published once', async () => {
    // Three due before the worker starts, one publish at a time: its local queue (size 2) fetches two, the first hangs,
    // the second waits in the queue, the third stays in the database. Both fetched jobs stay locked by the dead process
    // (graphile-worker's own lock lasts 4 hours).
    const texts = ['Queued first', 'Queued second', 'Queued third'];
    const ids: string[] = [];
    for (const text of texts) ids.push(await publishNow(text));
    // Its local queue gives a job back after PUBLISH_STALE_MS: a minute, so that the second job is still held when the
    // kill comes however slowly this machine starts the first publish (the recovering worker has its own, short one).
    const child = await worker('never-answer', { WORKER_CONCURRENCY: '1', PUBLISH_STALE_MS: '60000' });
    await waitFor(child, /FAULT createRecord held/);
    const locked = async () =>
      (await sql<{ key: string }[]>`SELECT key FROM graphile_worker.jobs WHERE key = ANY(${ids.map((id) => `publish-schedule:${id}`)}) AND locked_at IS NOT NULL`).length;
    process.kill(-child.child.pid!, 'SIGKILL');
    await child.exited;
    expect(await locked()).toBe(2);
    expect((await Promise.all(ids.map(stateOf))).map((state) => state.status).sort()).toEqual(['PUBLISHING', 'SCHEDULED', 'SCHEDULED']);

    const states = await withRecoveringWorker(() => Promise.all(ids.map(settled)));
    expect(states.map((state) => state.status)).toEqual(['PUBLISHED', 'PUBLISHED', 'PUBLISHED']);
    for (const text of texts) expect(await recordsOf(text)).toHaveLength(1);
    expect(await locked()).toBe(0);
  }, 90_000);

  it('SIGTERM while the platform does not answer: the call is aborted, the schedule goes back to SCHEDULED due now, and is published once', async () => {
    const child = await worker('never-answer');
    const id = await publishNow('Interrupted by a deploy');
    await waitFor(child, /FAULT createRecord held/);
    expect(await stop(child)).toBe(true);
    expect(await child.exited, child.output()).toBe(0);
    expect(child.output()).toContain('publish interrupted by the worker stopping');
    expect(child.output()).not.toContain('"level":"error"');

    // The truth: not published, not failed, no retry spent, and due again at once.
    expect(await stateOf(id)).toMatchObject({ status: 'SCHEDULED', retryCount: 0, platformPostId: null, failureReason: null });
    const [job] = await sql<{ runAt: Date }[]>`SELECT run_at FROM graphile_worker.jobs WHERE key = ${`publish-schedule:${id}`}`;
    expect(job!.runAt.getTime()).toBeLessThanOrEqual(Date.now());
    expect(await recordsOf('Interrupted by a deploy')).toEqual([]);

    const state = await withRecoveringWorker(() => settled(id));
    expect(state).toMatchObject({ status: 'PUBLISHED', retryCount: 0 });
    expect(await recordsOf('Interrupted by a deploy')).toHaveLength(1);
  }, 90_000);

  it('SIGTERM while the platform is slow but answering: the running publish finishes before the process exits', async () => {
    const child = await worker('slow');
    const id = await publishNow('Finished during a deploy');
    await waitFor(child, /FAULT createRecord held/);
    expect(await stop(child)).toBe(true);
    expect(await child.exited, child.output()).toBe(0);
    expect(child.output()).not.toContain('"level":"error"');
    expect(await stateOf(id)).toMatchObject({ status: 'PUBLISHED', retryCount: 0 });
    expect(await recordsOf('Finished during a deploy')).toHaveLength(1);
  }, 90_000);
});

describe('a worker process killed mid-delivery of a webhook', () => {
  it('SIGKILL while the receiver has the request: the delivery is released to another worker and sent again, under the same webhook-id', async () => {
    // The first request is held unanswered; later ones are answered 200.
    const received: { id: string; answered: boolean }[] = [];
    const receiver = createServer((request, response) => {
      const first = received.length === 0;
      received.push({ id: String(request.headers['webhook-id']), answered: !first });
      request.resume();
      if (!first) response.end('ok');
    });
    receiver.listen(0, '127.0.0.1');
    await once(receiver, 'listening');
    const allowHosts = `127.0.0.1:${(receiver.address() as AddressInfo).port}`;
    try {
      // The API of this test trusts the receiver too, as MEDIA_FETCH_ALLOW_HOSTS would make it.
      service.service.core.app.config.mediaFetchAllowHosts.push(allowHosts);
      const endpoint = await ws.admin('createWebhook', { url: `http://${allowHosts}/hook`, eventTypes: ['post.created'] });
      const child = await worker('', { MEDIA_FETCH_ALLOW_HOSTS: allowHosts, WEBHOOK_TIMEOUT_MS: '60000', PUBLISH_STALE_MS: String(RECOVERY.publishStaleMs) });
      const created = await call(`${service.api}/posts`, {
        method: 'POST',
        key: ws.apiKey,
        body: { rows: [{ content: 'Delivered despite a crash' }], shared: { selectedIntegrations: [integrationId] }, postAction: 'DRAFT' },
      });
      expect(created.status, created.text).toBe(201);
      await eventually(async () => received.length, (count) => count > 0, 20_000);
      expect(received).toHaveLength(1);
      process.kill(-child.child.pid!, 'SIGKILL');
      await child.exited;

      const delivery = async () =>
        (await sql<{ status: string; attempts: number }[]>`SELECT status, attempts FROM webhook_deliveries WHERE endpoint_id = ${endpoint.id}`)[0]!;
      expect(await delivery()).toMatchObject({ status: 'pending', attempts: 0 });
      const other = await startTestService(
        { databaseUrl: service.databaseUrl, encryptionKey: service.service.core.app.config.encryptionKey, mediaFetchAllowHosts: [allowHosts], ...RECOVERY },
        { api: false, worker: true },
      );
      try {
        await eventually(delivery, (row) => row.status === 'delivered', 30_000);
      } finally {
        await other.stop();
      }
      expect(await delivery()).toMatchObject({ status: 'delivered', attempts: 1 });
      expect(received.map((request) => request.answered)).toEqual([false, true]);
      expect(received[1]!.id).toBe(received[0]!.id);
    } finally {
      receiver.closeAllConnections();
      receiver.close();
    }
  }, 90_000);
});
