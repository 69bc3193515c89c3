/**
 * The publishing engine (issue 14): how late past `scheduledAt` a schedule reaches the platform, and how many
 * schedules the service's worker publishes a second, beside graphile-worker's own rate for empty jobs measured in
 * the same run, on the same database, with the same concurrency and polling interval. The engine runs as `npm start`
 * runs it (the bench's service process); the platform is first a minimal loopback endpoint in XRPC's shapes
 * (bench/loopback-platform.ts: the platform's own speed is not the engine's), then a real PDS (@atproto/pds, as the
 * tests start it), for a second figure, then Mastodon: the strict fake instance of the tests (test/support/mastodon.ts),
 * connected as a member connects (POST /integrations/connect, the instance's consent), published to through the real
 * adapter and `masto`, each status checked to have been made exactly once.
 *
 * Each target gets two sets of schedules (after 20 published to warm up), created through REST (POST /posts, 50 rows a request, far ahead), then
 * made due with SQL the way a reschedule does it (scheduled_at and the job's run_at in one statement):
 * - delay: `schedules` due evenly within `spreadSeconds`, from 2 s on; the delay of each is the record's `createdAt`
 *   (set by the adapter right before it sends the record) minus its `scheduledAt`;
 * - throughput: as many due at once; schedules / (the last `publishedAt` − the commit that made them due).
 */
import { fork } from 'node:child_process';
import events from 'node:events';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { AtpAgent } from '@atproto/api';
import { Logger, run as runWorker } from 'graphile-worker';
import postgres from 'postgres';
import { loadConfig, type Config } from '../src/process/config.js';
import { runnerSettings } from '../src/worker/index.js';
import { startFakeMastodon, type FakeMastodon } from '../test/support/mastodon.js';
import { startPds } from '../test/support/pds.js';
import { bootstrap, connectBluesky, defineGenerousPlan } from './admin.js';
import type { Database } from './calendar.js';
import { ALLOWANCE, PLAN } from './fixture.js';
import { startLoopbackPlatform } from './loopback-platform.js';

export interface PublishingOptions {
  /** Schedules of each set against the loopback endpoint. */
  schedules: number;
  /** Schedules of each set against the real PDS. */
  pdsSchedules: number;
  /** Schedules of each set against the fake Mastodon instance. */
  mastodonSchedules: number;
  /** The delay set is due evenly within this many seconds. */
  spreadSeconds: number;
  /** How long the slow loopback platform takes to answer each record (a real platform's 100–500 ms). */
  platformLatencyMs: number;
}

export interface TargetFigures {
  id: 'loopback' | 'loopback-slow' | 'pds' | 'mastodon';
  title: string;
  /** The platform the target's channel is on. */
  platform: 'BLUESKY' | 'MASTODON';
  delay: { schedules: number; spreadSeconds: number; p50Ms: number; p99Ms: number; maxMs: number };
  /** The set due at one instant: how fast it all went, and each schedule's delay past that instant until it was sent. */
  throughput: { schedules: number; seconds: number; perSecond: number; p50DelayMs: number; p99DelayMs: number };
  /** Mastodon's: what the instance saw of the target's schedules (checkedOnce). */
  once?: MastodonOnce;
}

/**
 * What the fake instance saw of a Mastodon target's schedules, all of its sets and its warm-up: each must be one status
 * (its own text, its own Idempotency-Key, the id the schedule recorded). `sends` counts the POST /api/v1/statuses that
 * reached the instance, `resends` those beyond one a key (a retry under the same key, which the instance answers with
 * the status already made), and `answers` every answer of the instance during the target by method, path and status.
 */
export interface MastodonOnce {
  schedules: number;
  statuses: number;
  sends: number;
  resends: number;
  answers: Record<string, number>;
}

export interface JobRate {
  jobs: number;
  seconds: number;
  perSecond: number;
}

export interface PublishingFigures {
  workerConcurrency: number;
  pollIntervalMs: number;
  emptyJobs: JobRate;
  /**
   * The least any engine on this queue does per schedule, as jobs of a bare task: the claim (a compare-and-set on a
   * row of a table without the schedules' indexes), one POST of a record to the same loopback endpoint with Node's
   * fetch, and the record of the outcome. No engine that claims, calls and records can publish faster than this.
   */
  floorJobs: JobRate;
  /** What the service asks of its database while nothing is due (the worker's polling, sweeps and crontab). */
  idle: { seconds: number; transactionsPerSecond: number };
  targets: TargetFigures[];
}

const ROWS_PER_REQUEST = 50;
/** Far enough ahead that no job of a created schedule runs before the bench makes it due. */
const CREATE_AHEAD_MS = 60 * 24 * 3600_000;
const LEAD_MS = 2000;
const WARMUP = 20;

type Progress = (message: string) => void;

export async function measurePublishing(
  options: PublishingOptions,
  service: { url: string; env: NodeJS.ProcessEnv },
  database: Database,
  progress: Progress,
): Promise<PublishingFigures> {
  // The service runs with the configuration of the bench's environment; its defaults are read the same way.
  const config = loadConfig(service.env);
  const targets: TargetFigures[] = [];
  // Defined again (it may be the first thing the run does): quotas no run can spend.
  await defineGenerousPlan(service.env, PLAN, ALLOWANCE);
  progress(`publishing: the database's transactions a second while nothing is due, for ${IDLE_SECONDS} s`);
  const idle = { seconds: IDLE_SECONDS, transactionsPerSecond: await idleTransactionRate(database.sql, IDLE_SECONDS) };

  const loopback = await startLoopbackPlatform();
  try {
    progress(`publishing: loopback endpoint at ${loopback.url}`);
    const target = await connectTarget(service, loopback.url, loopback.handle, loopback.appPassword);
    targets.push(
      await measureTarget('loopback', 'Engine → minimal loopback endpoint', target, options.schedules, options.spreadSeconds, database.sql, progress, async () => loopback.sentAt),
    );
  } finally {
    await loopback.stop();
  }
  // A platform at a real one's speed: what a burst due at 09:00 costs with the worker's concurrency.
  const slow = await startLoopbackPlatform({ latencyMs: options.platformLatencyMs });
  try {
    const target = await connectTarget(service, slow.url, slow.handle, slow.appPassword);
    targets.push(
      await measureTarget('loopback-slow', `Engine → loopback endpoint answering in ${options.platformLatencyMs} ms`, target, options.schedules, options.spreadSeconds, database.sql, progress, async () => slow.sentAt),
    );
  } finally {
    await slow.stop();
  }
  progress(`publishing: graphile-worker running ${options.schedules} floor jobs (claim, one call to a loopback endpoint, record)`);
  const floorJobs = await floorJobRate(database, options.schedules, config);

  progress(`publishing: graphile-worker running ${options.schedules} empty jobs`);
  const emptyJobs = await emptyJobRate(database, options.schedules, config);

  progress('publishing: starting a PDS on loopback');
  const pds = await startPds();
  try {
    const account = await createPdsAccount(pds.url);
    const target = await connectTarget(service, pds.url, account.handle, account.appPassword);
    targets.push(
      await measureTarget('pds', 'Engine → real PDS (@atproto/pds on loopback)', target, options.pdsSchedules, options.spreadSeconds, database.sql, progress, () =>
        sentAtOnPds(account.agent, account.did),
      ),
    );
  } finally {
    await pds.stop();
  }

  progress('publishing: starting a fake Mastodon instance on loopback');
  // Mastodon's documented limits (300 requests per 5 minutes, 300 statuses per 3 hours an account) would stop a set of
  // more than 300 schedules at 429 until the window ends (up to 3 hours): raised here, as the engine is measured, not them.
  const unlimited = { limit: 1_000_000_000, periodMs: 3600_000 };
  const instance = await startFakeMastodon({ autoConsent: 'ann', rateLimits: { api: unlimited, statuses: unlimited, media: unlimited, deletes: unlimited } });
  try {
    const target = await connectMastodon(service, instance);
    const requestsBefore = instance.requests.length;
    const figures = await measureTarget(
      'mastodon',
      'Engine → Mastodon (the strict fake instance on loopback, `masto`)',
      target,
      options.mastodonSchedules,
      options.spreadSeconds,
      database.sql,
      progress,
      async () => sentAtOnInstance(instance),
    );
    targets.push({ ...figures, once: await checkedOnce(database.sql, target.integrationId, instance, requestsBefore) });
  } finally {
    await instance.close();
  }
  return { workerConcurrency: config.workerConcurrency, pollIntervalMs: config.workerPollIntervalMs, emptyJobs, floorJobs, idle, targets };
}

const IDLE_SECONDS = 10;

/**
 * Transactions a second committed or rolled back in the service's database over `seconds` (pg_stat_database; each
 * autocommit query is one), less the two of this measurement. Backends report them about once a second, so the
 * figure is good to about a tenth over 10 s.
 */
async function idleTransactionRate(sql: postgres.Sql, seconds: number): Promise<number> {
  const transactions = async () =>
    Number((await sql<{ n: string }[]>`SELECT xact_commit + xact_rollback AS n FROM pg_stat_database WHERE datname = current_database()`)[0]!.n);
  // Whatever ran just before (the admin command above) has reported by then.
  await sleep(2000);
  const before = await transactions();
  await sleep(seconds * 1000);
  return (await transactions() - before - 1) / seconds;
}

interface Target {
  platform: TargetFigures['platform'];
  serviceUrl: string;
  apiKey: string;
  integrationId: string;
}

/**
 * A workspace of its own, with one Mastodon channel connected as a member connects it: POST /integrations/connect
 * naming the instance (read and registered through the fetch guard: the bench's service allows 127.0.0.1 by
 * MEDIA_FETCH_ALLOW_HOSTS), the instance's consent (given at once by the fake, as ann), and the service's callback page,
 * which names the channel.
 */
async function connectMastodon(service: { url: string; env: NodeJS.ProcessEnv }, instance: FakeMastodon): Promise<Target> {
  const workspace = await bootstrap(service.env, PLAN);
  const response = await fetch(`${service.url}/api/v1/integrations/connect`, {
    method: 'POST',
    headers: { 'x-api-key': workspace.apiKey, 'content-type': 'application/json' },
    body: JSON.stringify({ platform: 'MASTODON', instance: instance.host }),
  });
  if (response.status !== 200) throw new Error(`POST /integrations/connect (Mastodon): status ${response.status}: ${await response.text()}`);
  let next = ((await response.json()) as { redirectUrl: string }).redirectUrl;
  for (let hop = 0; hop < 6; hop++) {
    const answer = await fetch(next, { redirect: 'manual' });
    const location = answer.headers.get('location');
    if (answer.status >= 300 && answer.status < 400 && location) {
      next = new URL(location, next).href;
      continue;
    }
    const page = await answer.text();
    const integrationId = /<code>([0-9a-f-]{36})<\/code>/.exec(page)?.[1];
    if (answer.status !== 200 || !integrationId) throw new Error(`connecting Mastodon: the callback answered ${answer.status}: ${page.slice(0, 300)}`);
    return { platform: 'MASTODON', serviceUrl: service.url, apiKey: workspace.apiKey, integrationId };
  }
  throw new Error('connecting Mastodon: more than 6 redirects');
}

/** A workspace of its own, with one Bluesky channel connected (admin connect-bluesky) to the account at `serviceUrl`. */
async function connectTarget(service: { url: string; env: NodeJS.ProcessEnv }, serviceUrl: string, handle: string, appPassword: string): Promise<Target> {
  const workspace = await bootstrap(service.env, PLAN);
  const integrationId = await connectBluesky(service.env, workspace.workspaceId, handle, appPassword, serviceUrl);
  return { platform: 'BLUESKY', serviceUrl: service.url, apiKey: workspace.apiKey, integrationId };
}

async function measureTarget(
  id: TargetFigures['id'],
  title: string,
  target: Target,
  schedules: number,
  spreadSeconds: number,
  sql: postgres.Sql,
  progress: Progress,
  sentAt: () => Promise<Map<string, number>>,
): Promise<TargetFigures> {
  progress(`publishing (${id}): creating 2 × ${schedules} schedules through REST`);
  const delayPosts = await createPosts(target, schedules, 0);
  const throughputPosts = await createPosts(target, schedules, schedules);
  // A few first, as the HTTP scenarios warm up: the service loads the platform's client on first use.
  await allPublished(sql, await makeDue(sql, await createPosts(target, WARMUP, 2 * schedules), sql`now()`), 120_000);

  progress(`publishing (${id}): ${schedules} schedules due within ${spreadSeconds} s`);
  const stepMs = (spreadSeconds * 1000) / schedules;
  const delayIds = await makeDue(sql, delayPosts, sql`now() + ${LEAD_MS} * interval '1 millisecond' + (n - 1) * ${stepMs}::float8 * interval '1 millisecond'`);
  await allPublished(sql, delayIds, LEAD_MS + spreadSeconds * 1000 + 120_000);
  const delays = await delaysOf(sql, delayIds, await sentAt(), id);

  progress(`publishing (${id}): ${schedules} schedules due at once`);
  const throughputIds = await makeDue(sql, throughputPosts, sql`now()`);
  // From the commit on, as for the empty jobs: no worker sees a job before it (the same host's clock on both sides).
  const dueAt = Date.now();
  await allPublished(sql, throughputIds, 600_000);
  const [{ last }] = await sql<[{ last: Date }]>`SELECT max(published_at) AS last FROM schedules WHERE id = ANY(${throughputIds}::uuid[])`;
  const seconds = (last.getTime() - dueAt) / 1000;
  const burst = await delaysOf(sql, throughputIds, await sentAt(), id);

  return {
    id,
    title,
    platform: target.platform,
    delay: { schedules, spreadSeconds, p50Ms: percentile(delays, 50), p99Ms: percentile(delays, 99), maxMs: delays.at(-1)! },
    throughput: { schedules, seconds, perSecond: schedules / seconds, p50DelayMs: percentile(burst, 50), p99DelayMs: percentile(burst, 99) },
  };
}

/** Each schedule's delay past its `scheduledAt` until its record was sent (the record's `createdAt`), sorted. */
async function delaysOf(sql: postgres.Sql, ids: string[], sent: Map<string, number>, id: string): Promise<number[]> {
  const rows = await sql<{ platformPostId: string; scheduledAt: Date }[]>`
    SELECT platform_post_id AS "platformPostId", scheduled_at AS "scheduledAt" FROM schedules WHERE id = ANY(${ids}::uuid[])`;
  const delays = rows.map((row) => {
    const at = sent.get(row.platformPostId.split('/').at(-1)!);
    if (at === undefined) throw new Error(`publishing (${id}): no record found for ${row.platformPostId}`);
    return at - row.scheduledAt.getTime();
  });
  return delays.sort((a, b) => a - b);
}

/** `count` one-channel posts scheduled far ahead, a minute apart (one slot each); their ids. */
async function createPosts(target: Target, count: number, offset: number): Promise<string[]> {
  const first = Date.now() + CREATE_AHEAD_MS + offset * 60_000;
  const postIds: string[] = [];
  for (let start = 0; start < count; start += ROWS_PER_REQUEST) {
    const rows = Array.from({ length: Math.min(ROWS_PER_REQUEST, count - start) }, (_, i) => ({
      content: `Benchmark post ${offset + start + i + 1}: published by the engine at its time, once. #postwise https://example.com/bench`,
      scheduledAt: new Date(first + (start + i) * 60_000).toISOString(),
    }));
    const response = await fetch(`${target.serviceUrl}/api/v1/posts`, {
      method: 'POST',
      headers: { 'x-api-key': target.apiKey, 'content-type': 'application/json' },
      body: JSON.stringify({ rows, shared: { selectedIntegrations: [target.integrationId] }, postAction: 'SCHEDULED_TIME' }),
    });
    if (response.status !== 201) throw new Error(`POST /posts: status ${response.status}: ${await response.text()}`);
    postIds.push(...((await response.json()) as { postIds: string[] }).postIds);
  }
  return postIds;
}

/**
 * Moves the schedules of `postIds` to `when` (n: 1, 2… in id order) and their jobs with them, in one statement, as
 * a reschedule does; answers the schedule ids.
 */
async function makeDue(sql: postgres.Sql, postIds: string[], when: postgres.PendingQuery<postgres.Row[]>): Promise<string[]> {
  const moved = await sql<{ id: string }[]>`
    WITH numbered AS (
      SELECT id, row_number() OVER (ORDER BY id) AS n FROM schedules WHERE post_id = ANY(${postIds}::uuid[])),
    moved AS (
      UPDATE schedules s SET scheduled_at = ${when}, updated_at = now() FROM numbered WHERE s.id = numbered.id
      RETURNING s.id, s.scheduled_at)
    SELECT id, graphile_worker.add_job('publish-schedule', json_build_object('scheduleId', id), run_at := scheduled_at,
      job_key := 'publish-schedule:' || id) AS job
    FROM moved`;
  if (moved.length !== postIds.length) throw new Error(`${moved.length} schedules moved instead of ${postIds.length}`);
  return moved.map((row) => row.id);
}

/**
 * Waits for every schedule of `ids` to be PUBLISHED (throwing at the first FAILED). Asked every half second: the figures
 * come from the rows' times, not from when this sees them, and asking about 1,000 ids ten times a second took about a
 * twentieth of the machine's CPU from the engine it measures.
 */
async function allPublished(sql: postgres.Sql, ids: string[], timeoutMs: number): Promise<void> {
  for (const started = Date.now(); ; await sleep(500)) {
    const [counts] = await sql<[{ published: number; failed: number; reason: string | null }]>`
      SELECT count(*) FILTER (WHERE status = 'PUBLISHED')::int AS published, count(*) FILTER (WHERE status = 'FAILED')::int AS failed,
        min(failure_reason) AS reason
      FROM schedules WHERE id = ANY(${ids}::uuid[])`;
    if (counts.failed > 0) throw new Error(`${counts.failed} schedules FAILED: ${counts.reason}`);
    if (counts.published === ids.length) return;
    if (Date.now() - started > timeoutMs) throw new Error(`${counts.published} of ${ids.length} schedules published after ${timeoutMs / 1000} s`);
  }
}

/**
 * graphile-worker's own rate on this database: `jobs` jobs of a task that does nothing, added at once, run by a
 * runner with the service's settings (runnerSettings: concurrency, polling, local queue), after a warm-up batch.
 */
function emptyJobRate(database: Database, jobs: number, config: Config): Promise<JobRate> {
  return jobRate(database, jobs, config, async () => {});
}

/**
 * The floor (PublishingFigures.floorJobs), on a table of its own that is dropped afterwards. The endpoint runs in a
 * process of its own, as it does for the engine (the service's process calls the bench's).
 */
async function floorJobRate(database: Database, jobs: number, config: Config): Promise<JobRate> {
  const endpoint = fork(fileURLToPath(new URL('./loopback-child.ts', import.meta.url)), { execArgv: ['--import', 'tsx'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  // As many connections as the service's own pool (DATABASE_POOL_SIZE), which its publish jobs share, whatever the concurrency.
  const sql = postgres(database.url, { max: config.databasePoolSize, onnotice: () => {}, connection: { application_name: 'postwise bench floor' } });
  try {
    const [platformUrl] = (await events.once(endpoint, 'message')) as [string];
    await sql`CREATE TABLE bench_floor (n int PRIMARY KEY, status text NOT NULL, last_attempt timestamptz, published_at timestamptz, uri text)`;
    await sql`INSERT INTO bench_floor (n, status) SELECT n, 'SCHEDULED' FROM generate_series(1, ${jobs + WARMUP_JOBS}::int) n`;
    return await jobRate(database, jobs, config, async (n) => {
      const [claimed] = await sql`
        UPDATE bench_floor SET status = 'PUBLISHING', last_attempt = now() WHERE n = ${n} AND status = 'SCHEDULED' RETURNING n`;
      if (!claimed) throw new Error(`floor job ${n} found its row claimed`);
      const response = await fetch(`${platformUrl}/xrpc/com.atproto.repo.createRecord`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: 'Bearer floor' },
        body: JSON.stringify({
          repo: 'bench.test',
          collection: 'app.bsky.feed.post',
          rkey: `floor${n}`,
          record: { $type: 'app.bsky.feed.post', text: `Floor job ${n}`, createdAt: new Date().toISOString() },
        }),
      });
      const { uri } = (await response.json()) as { uri: string };
      await sql`UPDATE bench_floor SET status = 'PUBLISHED', published_at = now(), uri = ${uri} WHERE n = ${n}`;
    });
  } finally {
    endpoint.disconnect();
    await sql`DROP TABLE IF EXISTS bench_floor`;
    await sql.end({ timeout: 5 });
  }
}

const WARMUP_JOBS = 100;

/** `jobs` jobs of `task` (given 1, 2, … in turn), added at once and run as emptyJobRate runs them, after a warm-up batch. */
async function jobRate(database: Database, jobs: number, config: Config, task: (n: number) => Promise<void>): Promise<JobRate> {
  let done = 0;
  let lastDone = 0;
  let next = 0;
  let failed: unknown;
  const runner = await runWorker({
    connectionString: database.url,
    ...runnerSettings(config),
    noHandleSignals: true,
    logger: new Logger(() => () => {}),
    taskList: {
      'bench-job': async () => {
        try {
          await task(++next);
        } catch (error) {
          failed ??= error;
        }
        done++;
        lastDone = performance.now();
      },
    },
  });
  try {
    const batch = async (count: number) => {
      done = 0;
      await database.sql`SELECT graphile_worker.add_job('bench-job', '{}'::json) FROM generate_series(1, ${count}::int)`;
      const started = performance.now();
      for (const since = Date.now(); done < count; await sleep(5)) {
        if (Date.now() - since > 300_000) throw new Error(`${done} of ${count} bench jobs done after 300 s`);
      }
      if (failed) throw failed;
      return (lastDone - started) / 1000;
    };
    await batch(Math.min(WARMUP_JOBS, jobs));
    const seconds = await batch(jobs);
    return { jobs, seconds, perSecond: jobs / seconds };
  } finally {
    await runner.stop();
  }
}

/** An account with an app password on the PDS, as a user makes them. */
async function createPdsAccount(pdsUrl: string) {
  const handle = `bench${Date.now().toString(36)}.test`;
  const password = `bench-${Math.random().toString(36).slice(2)}`;
  const agent = new AtpAgent({ service: pdsUrl });
  const created = await agent.com.atproto.server.createAccount({ handle, password, email: `${handle}@example.com` });
  await agent.login({ identifier: handle, password });
  const appPassword = (await agent.com.atproto.server.createAppPassword({ name: 'postwise-bench' })).data.password;
  return { agent, did: created.data.did, handle, appPassword };
}

/** The records' `createdAt` by record key, read back from the PDS. */
async function sentAtOnPds(agent: AtpAgent, did: string): Promise<Map<string, number>> {
  const sentAt = new Map<string, number>();
  let cursor: string | undefined;
  do {
    const { data } = await agent.com.atproto.repo.listRecords({ repo: did, collection: 'app.bsky.feed.post', limit: 100, cursor });
    for (const record of data.records) sentAt.set(record.uri.split('/').at(-1)!, Date.parse((record.value as { createdAt: string }).createdAt));
    cursor = data.records.length === 100 ? data.cursor : undefined;
  } while (cursor);
  return sentAt;
}

/**
 * When each status reached the instance, by status id: the first POST /api/v1/statuses that carried its Idempotency-Key
 * (the fake notes a request when its headers are read, in this process, on the same clock as `scheduledAt`).
 */
function sentAtOnInstance(instance: FakeMastodon): Map<string, number> {
  const firstSend = new Map<string, number>();
  for (const request of instance.requests) {
    const key = request.headers['idempotency-key'];
    if (request.method !== 'POST' || request.path !== '/api/v1/statuses' || !key || firstSend.has(key)) continue;
    firstSend.set(key, request.at.getTime());
  }
  const sentAt = new Map<string, number>();
  for (const status of instance.statuses.values()) {
    const at = status.idempotencyKey ? firstSend.get(status.idempotencyKey) : undefined;
    if (at !== undefined) sentAt.set(status.id, at);
  }
  return sentAt;
}

/**
 * Every schedule of the channel published exactly once: PUBLISHED with the id of a status of the account that no other
 * schedule has, as many statuses as schedules, each text (which numbers its post) once, each Idempotency-Key on one
 * status. Throws what is wrong; answers what the instance saw since request `from`.
 */
async function checkedOnce(sql: postgres.Sql, integrationId: string, instance: FakeMastodon, from: number): Promise<MastodonOnce> {
  const schedules = await sql<{ id: string; status: string; platformPostId: string | null }[]>`
    SELECT id, status, platform_post_id AS "platformPostId" FROM schedules WHERE integration_id = ${integrationId}`;
  const statuses = instance.statusesOf('ann');
  const problems: string[] = [];
  const notPublished = schedules.filter((schedule) => schedule.status !== 'PUBLISHED');
  if (notPublished.length) problems.push(`${notPublished.length} schedules not PUBLISHED (${notPublished[0]!.status})`);
  if (statuses.length !== schedules.length) problems.push(`${statuses.length} statuses for ${schedules.length} schedules`);
  const byId = new Set(statuses.map((status) => status.id));
  const recorded = new Set(schedules.map((schedule) => schedule.platformPostId));
  if (recorded.size !== schedules.length) problems.push(`${schedules.length - recorded.size} schedules share a status id with another`);
  const missing = schedules.filter((schedule) => !schedule.platformPostId || !byId.has(schedule.platformPostId));
  if (missing.length) problems.push(`${missing.length} schedules recorded a status the instance does not have`);
  const twice = (values: (string | null)[]) => values.length - new Set(values).size;
  const sameText = twice(statuses.map((status) => status.text));
  if (sameText) problems.push(`${sameText} statuses repeat another's text (a post sent twice)`);
  const keys = statuses.map((status) => status.idempotencyKey);
  if (keys.includes(null)) problems.push('a status was made without an Idempotency-Key');
  if (twice(keys)) problems.push(`${twice(keys)} statuses repeat another's Idempotency-Key`);
  if (problems.length) throw new Error(`publishing (mastodon): not exactly once: ${problems.join('; ')}`);

  const answers: Record<string, number> = {};
  const sendsByKey = new Map<string, number>();
  for (const request of instance.requests.slice(from)) {
    const path = request.path.replace(/\/\d+(?=\/|$)/g, '/:id');
    const answer = `${request.method} ${path} ${request.status ?? 'unanswered'}`;
    answers[answer] = (answers[answer] ?? 0) + 1;
    if (request.method === 'POST' && request.path === '/api/v1/statuses') {
      const key = request.headers['idempotency-key'] ?? '';
      sendsByKey.set(key, (sendsByKey.get(key) ?? 0) + 1);
    }
  }
  const sends = [...sendsByKey.values()].reduce((sum, count) => sum + count, 0);
  return { schedules: schedules.length, statuses: statuses.length, sends, resends: sends - sendsByKey.size, answers };
}

/** The value at or below which `p` % of the sorted values lie. */
function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}
