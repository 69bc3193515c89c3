import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { connect as connectTcp } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../src/process/free-port.js';
import { admin, alive, removeDataDir, run, stop, waitFor } from './support/processes.js';
import { call, eventually, freshDatabase, waitingOnLocks } from './support/service.js';

/** The commands of the README, run as a new user runs them: `npm start`, `npm run admin`, and SIGTERM. */

/** Whether `base`'s port accepts a TCP connection now (closed again at once, nothing sent): false once its server stops listening. */
const accepts = (base: string) =>
  new Promise<boolean>((resolve) => {
    const { hostname, port } = new URL(base);
    const socket = connectTcp(Number(port), hostname);
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });

describe('npm start with no configuration', () => {
  let dir: string;
  let env: Record<string, string>;
  let base: string;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'postwise-e2e-'));
    const port = await freePort();
    env = { DATA_DIR: join(dir, 'data'), PORT: String(port), HOST: '127.0.0.1', DATABASE_URL: '' };
    base = `http://127.0.0.1:${port}`;
  });
  afterAll(async () => {
    await removeDataDir(env.DATA_DIR!);
    await rm(dir, { recursive: true, force: true });
  });

  it('starts an embedded Postgres, prints a first key once, serves it, works with the admin command, and stops on a signal after its requests', async () => {
    const first = run(['start'], env);
    const [, apiKey] = await waitFor(first, /apiKey\s+(pw_\S+)/);
    expect(first.output()).toContain(`${base}/api/v1/openapi.json`);
    expect(first.output()).toContain(`${base}/mcp`);
    expect(first.output()).toContain(`  CLI        npx postwise login --base-url ${base}\n`);
    const me = await call(`${base}/api/v1/users/me`, { key: apiKey });
    expect(me.status).toBe(200);

    // The admin command joins the running server's embedded Postgres.
    const boot = await admin(['bootstrap', '--json', '--plan', 'pro', '--no-subscription'], env);
    expect(boot.code).toBe(0);
    expect(boot.json).toEqual({ workspaceId: expect.any(String), userId: expect.any(String), apiKey: expect.stringMatching(/^pw_/) });
    expect((await call(`${base}/api/v1/users/me`, { key: boot.json.apiKey })).json.id).toBe(boot.json.userId);

    const clusterDir = join(env.DATA_DIR!, 'postgres');
    const [pid, , , port] = (await readFile(join(clusterDir, 'postmaster.pid'), 'utf8')).split('\n');
    const credentials = JSON.parse(await readFile(join(env.DATA_DIR!, 'postgres-credentials.json'), 'utf8'));
    const db = postgres({ host: '127.0.0.1', port: Number(port), user: credentials.user, password: credentials.password, database: 'postgres', max: 1 });
    const [workspace] = await db`SELECT plan, subscription_status FROM organizations WHERE id = ${boot.json.workspaceId}`;
    await db.end();
    expect(workspace).toEqual({ plan: 'pro', subscription_status: 'none' });

    const key = await admin(['create-key', '--workspace', boot.json.workspaceId, '--name', 'ci'], env);
    expect(key.json.key).toMatch(/^pw_/);
    expect((await call(`${base}/api/v1/users/me`, { key: key.json.key })).status).toBe(200);
    expect((await admin(['revoke-key', '--workspace', boot.json.workspaceId, '--key', key.json.id], env)).json).toEqual({ success: true });
    expect((await call(`${base}/api/v1/users/me`, { key: key.json.key })).status).toBe(401);
    const tag = await admin(['create-tag', '--workspace', boot.json.workspaceId, '--name', 'From the shell'], env);
    expect((await call(`${base}/api/v1/tags/${tag.json.id}`, { key: boot.json.apiKey })).json.slug).toBe('from-the-shell');
    const refused = await admin(['remove-member', '--workspace', boot.json.workspaceId, '--user', boot.json.userId], env);
    expect(refused.code).toBe(1);
    expect(refused.json.code).toBe('CONFLICT');

    // `kill <npm's pid>`: the signal must reach the service, which stops its Postgres.
    expect(await stop(first, { group: false })).toBe(true);
    expect(first.output()).not.toContain('"level":"error"');
    expect(alive(Number(pid))).toBe(false);

    // A second start keeps the data and creates no second workspace.
    const second = run(['start'], env);
    await waitFor(second, /MCP\s+http/);
    expect(second.output()).not.toContain('apiKey');
    expect((await call(`${base}/api/v1/users/me`, { key: apiKey })).status).toBe(200);

    // Ctrl-C (SIGINT to the group) lets a request in flight finish: Postgres is not in the group and is
    // stopped by the service after its requests.
    // Each step waits for the state the next needs, not for a moment: the lock taken, the request waiting for it (seen
    // in pg_stat_activity), the signal taken (the service no longer accepts connections), and only then the lock let go.
    const [secondPid, , , secondPort] = (await readFile(join(clusterDir, 'postmaster.pid'), 'utf8')).split('\n');
    const connect = () => postgres({ host: '127.0.0.1', port: Number(secondPort), user: credentials.user, password: credentials.password, database: 'postgres', max: 1, onnotice: () => {} });
    const blocker = connect();
    const watcher = connect();
    let release!: () => void;
    let locked!: () => void;
    const lockTaken = new Promise<void>((resolve) => (locked = resolve));
    const holding = blocker.begin(async (tx) => {
      await tx`LOCK TABLE users IN ACCESS EXCLUSIVE MODE`;
      locked();
      await new Promise<void>((resolve) => (release = resolve));
    });
    await lockTaken;
    const inFlight = call(`${base}/api/v1/users/me`, { key: apiKey });
    expect(await waitingOnLocks(watcher, { timeoutMs: 20_000 })).toBeGreaterThan(0);
    await watcher.end();
    const stopped = stop(second, { signal: 'SIGINT' });
    expect(await eventually(() => accepts(base), (accepted) => !accepted, 20_000)).toBe(false);
    release();
    await holding;
    await blocker.end();
    expect((await inFlight).status).toBe(200);
    expect(await stopped).toBe(true);
    expect(second.output()).not.toContain('"level":"error"');
    expect(alive(Number(secondPid))).toBe(false);
    // Two starts and six admin commands, one after another: generous, as the machine may be busy (the suite
    // runs a PDS and other process-driven files beside it).
  }, 120_000);
});

describe('npm run api and npm run worker, apart, on DATABASE_URL', () => {
  it('serve and work on the same database, each stopping on SIGTERM', async () => {
    const databaseUrl = await freshDatabase();
    const port = await freePort();
    const env = { DATABASE_URL: databaseUrl, PORT: String(port), HOST: '127.0.0.1', DATA_DIR: '/nonexistent-on-purpose' };
    const worker = run(['run', 'worker'], env);
    const api = run(['run', 'api'], env);
    await waitFor(worker, /worker running/);
    const [, apiKey] = await waitFor(api, /apiKey\s+(pw_\S+)/);
    expect(api.output()).not.toContain('worker');
    expect((await call(`http://127.0.0.1:${port}/api/v1/users/me`, { key: apiKey })).status).toBe(200);

    const db = postgres(databaseUrl, { max: 1 });
    const [schema] = await db`SELECT count(*)::int AS n FROM information_schema.schemata WHERE schema_name = 'graphile_worker'`;
    const [migrations] = await db`SELECT count(*)::int AS n FROM schema_migrations`;
    await db.end();
    expect(schema!.n).toBe(1);
    expect(migrations!.n).toBeGreaterThanOrEqual(1);

    expect(await stop(api)).toBe(true);
    expect(api.output()).not.toContain('"level":"error"');
    expect(await stop(worker)).toBe(true);
    expect(worker.output()).not.toContain('"level":"error"');
  });
});
