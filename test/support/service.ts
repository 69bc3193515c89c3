import { createHash, randomBytes } from 'node:crypto';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import postgres from 'postgres';
import { inject } from 'vitest';
import { bootstrapWorkspace, type BootstrapOptions } from '../../src/admin/first-workspace.js';
import { loadConfig, type Config } from '../../src/process/config.js';
import { createLogger } from '../../src/process/logger.js';
import { startService, type Service } from '../../src/service/start.js';
import { removeDataDir } from './processes.js';

export interface TestService {
  service: Service;
  /** http://127.0.0.1:PORT */
  base: string;
  /** base + /api/v1 */
  api: string;
  databaseUrl: string;
  workspace(options?: BootstrapOptions): Promise<Workspace>;
  stop(): Promise<void>;
}

export interface Workspace {
  workspaceId: string;
  userId: string;
  apiKey: string;
  /** Runs an operation as the admin command does (internal ones included), for setting up a test. */
  admin(operationId: string, args?: Record<string, unknown>): Promise<any>;
}

/**
 * The service as `npm run api` runs it (or `npm start`, with the worker role), on a fresh database of its own
 * (unless `overrides.databaseUrl` names one), on a free port, with an encryption key of its own.
 */
export async function startTestService(overrides: Partial<Config> = {}, roles = { api: true, worker: false }): Promise<TestService> {
  const databaseUrl = overrides.databaseUrl ?? (await freshDatabase());
  // The embedded S3 store keeps its objects here (the database is elsewhere).
  const dataDir = await mkdtemp(join(tmpdir(), 'postwise-service-'));
  const config: Config = {
    ...loadConfig({}),
    dataDir,
    databaseUrl,
    port: 0,
    usageFlushMs: 20,
    logLevel: 'silent',
    encryptionKey: randomBytes(32).toString('base64'),
    ...overrides,
  };
  const service = await startService(config, createLogger(config.logLevel), roles);
  const base = service.url!;
  return {
    service,
    base,
    api: `${base}/api/v1`,
    databaseUrl,
    async workspace(options) {
      const created = await bootstrapWorkspace(service.core.db, options);
      return {
        ...created,
        async admin(operationId, args = {}) {
          const outcome = await service.core.runAs(created, operationId, args);
          if (!outcome.ok) throw new Error(`${operationId}: ${JSON.stringify(outcome.body)}`);
          return outcome.body;
        },
      };
    },
    async stop() {
      await service.stop();
      if (!overrides.dataDir) await removeDataDir(dataDir);
    },
  };
}

export async function freshDatabase(): Promise<string> {
  const serverUrl = inject('postgresUrl');
  const name = `test_${randomBytes(6).toString('hex')}`;
  const admin = postgres(serverUrl, { max: 1, onnotice: () => {} });
  await admin.unsafe(`CREATE DATABASE ${name}`);
  await admin.end();
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  return url.toString();
}

export interface Answer {
  status: number;
  text: string;
  json: any;
  headers: Headers;
}

/** A REST call as any HTTP client makes it. */
export async function call(
  url: string,
  {
    method = 'GET',
    key,
    body,
    raw,
    headers = {},
    signal,
  }: { method?: string; key?: string; body?: unknown; raw?: string; headers?: Record<string, string>; signal?: AbortSignal } = {},
): Promise<Answer> {
  const sent: Record<string, string> = { ...headers };
  if (key !== undefined) sent['x-api-key'] = key;
  if ((body !== undefined || raw !== undefined) && !sent['content-type']) sent['content-type'] = 'application/json';
  const response = await fetch(url, { method, headers: sent, body: raw ?? (body === undefined ? undefined : JSON.stringify(body)), signal });
  const text = await response.text();
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: response.status, text, json, headers: response.headers };
}

/** Usage is written in batches; wait until `check` holds (or give up after a few seconds and let it fail). */
/** Whether the worker is done with a schedule: published, or given up on. */
export const isSettled = (schedule: { status: string }) => schedule.status === 'PUBLISHED' || schedule.status === 'FAILED';

/** The one schedule of a post, once the worker has settled it (PUBLISHED or FAILED), or as it is after `timeoutMs`. */
export function settledScheduleOf(sql: postgres.Sql, postId: string, timeoutMs = 30_000) {
  return eventually(
    async () => (await sql<{ status: string; platformPostId: string | null; failureReason: string | null }[]>`
      SELECT status, platform_post_id, failure_reason FROM schedules WHERE post_id = ${postId}`)[0]!,
    isSettled,
    timeoutMs,
  );
}

export async function eventually<T>(read: () => Promise<T>, check: (value: T) => boolean, timeoutMs = 5000): Promise<T> {
  const started = Date.now();
  for (;;) {
    const value = await read();
    if (check(value) || Date.now() - started > timeoutMs) return value;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

/**
 * How many statements in this test's database wait for a lock, their text LIKE `query`: once one does, `until()` says
 * to stop waiting, or `timeoutMs` passed. `sql` must be outside any transaction: inside one, pg_stat_activity is a
 * snapshot taken at its first read.
 */
export const waitingOnLocks = (sql: postgres.Sql, { query = '%', until = (): boolean => false, timeoutMs = 10_000 } = {}) =>
  eventually(
    async () => (await sql<{ n: number }[]>`
      SELECT count(*)::int AS n FROM pg_stat_activity
      WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE ${query}`)[0]!.n,
    (waiting) => waiting > 0 || until(),
    timeoutMs,
  );

/**
 * graphile-worker's rows under `key`, once none is left or `timeoutMs` passed. A job is deleted
 * only after its task returns, a moment after the schedule's row says the outcome.
 */
export const jobsLeftUnder = (sql: postgres.Sql, key: string, timeoutMs = 15_000) =>
  eventually(() => sql`SELECT 1 FROM graphile_worker.jobs WHERE key = ${key}`, (rows) => rows.length === 0, timeoutMs);

export interface ChannelsFixture {
  service: TestService;
  /** On the `business` plan, whose quotas the tests' schedules do not reach. */
  ws: Workspace;
  /** Another workspace, for the 404 rule. */
  other: Workspace;
  /** Straight to the test database, to look at rows and jobs and to put schedules where a test needs them. */
  sql: postgres.Sql;
  /** The ids of ws's Bluesky channel "Sky" and LinkedIn channel "In". */
  bluesky: string;
  linkedin: string;
  stop(): Promise<void>;
}

/** A service with a workspace that has one channel per platform, another workspace, and SQL access. */
export async function startWithChannels(): Promise<ChannelsFixture> {
  const service = await startTestService();
  const ws = await service.workspace({ plan: 'business' });
  const other = await service.workspace();
  const sql = postgres(service.databaseUrl, { max: 2, onnotice: () => {} });
  const bluesky = (await ws.admin('createIntegration', { platform: 'BLUESKY', name: 'Sky' })).id;
  const linkedin = (await ws.admin('createIntegration', { platform: 'LINKEDIN', name: 'In' })).id;
  return {
    service,
    ws,
    other,
    sql,
    bluesky,
    linkedin,
    async stop() {
      await sql.end();
      await service.stop();
    },
  };
}

/** A post due in `seconds` on `channel`, made over REST with `key`: its one schedule's id. */
export async function scheduleDueIn(api: string, key: string, channel: string, content: string, seconds: number): Promise<string> {
  const created = await call(`${api}/posts`, {
    method: 'POST',
    key,
    body: { rows: [{ content, scheduledAt: new Date(Date.now() + seconds * 1000).toISOString() }], shared: { selectedIntegrations: [channel] }, postAction: 'SCHEDULED_TIME' },
  });
  if (created.status !== 201) throw new Error(`POST /posts answered ${created.status}: ${created.text}`);
  return (await call(`${api}/posts/${created.json.postId}`, { key })).json.schedules[0].id;
}

/**
 * An image uploaded through the uploads API as a client does (initiate, the signed PUT, complete), its variants made by
 * the worker: answers completeUpload's answer once they are ready (`mediaId`, `publicUrl`, `variants`).
 */
export async function uploadImage(api: string, apiKey: string, bytes: Buffer, fileType: string): Promise<{ mediaId: string; publicUrl: string; variants: Record<string, { url: string; width: number; height: number }> }> {
  const checksum = createHash('sha256').update(bytes).digest('hex');
  const started = await call(`${api}/uploads/initiate`, { key: apiKey, method: 'POST', body: { scenarioId: 'post_attachments', fileName: 'image', fileType, fileSize: bytes.length, checksum } });
  if (started.status !== 200) throw new Error(`initiate: ${started.status} ${started.text}`);
  const put = await fetch(started.json.signedUrl, { method: 'PUT', body: new Uint8Array(bytes), headers: started.json.requiredHeaders });
  if (put.status !== 200) throw new Error(`PUT: ${put.status}`);
  const complete = () => call(`${api}/uploads/complete`, { key: apiKey, method: 'POST', body: { uploadId: started.json.uploadId, checksum } });
  const done = await eventually(complete, (answer) => answer.json.variantsStatus !== 'pending', 20_000);
  if (done.json.variantsStatus !== 'ready') throw new Error(`variants: ${done.text}`);
  return done.json;
}
