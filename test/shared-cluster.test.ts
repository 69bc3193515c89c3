import { spawn } from 'node:child_process';
import { chmod, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { admin, alive, cleanUp, gone, postmasterOf, run, stop, waitFor, type Running } from './support/processes.js';
import { call } from './support/service.js';

/**
 * Processes that share one embedded cluster (one DATA_DIR) keep it running while any of them runs: it stops
 * with the last one, whichever started it; and a cluster whose processes were all killed is taken over.
 */

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'postwise-shared-'));
  await chmod(dir, 0o755);
});
afterAll(() => rm(dir, { recursive: true, force: true }));

/**
 * Each process listens on a port of the system's choosing (PORT=0), read from what it prints: a port chosen here and
 * bound by the child seconds later (once its cluster is up) could be taken meanwhile by another test's process.
 */
async function environment(name: string) {
  return { DATA_DIR: join(dir, name), PORT: '0', HOST: '127.0.0.1', DATABASE_URL: '', LOG_LEVEL: 'info' };
}

/** Where a started service listens, once it says it runs. */
const baseOf = async (running: Running) => (await waitFor(running, /MCP\s+(http:\/\/\S+)\/mcp/))[1]!;

/** Each test starts several processes one after another: generous, as the machine may be busy. */
const TIMEOUT_MS = 120_000;

const count = (text: string, part: string) => text.split(part).length - 1;
const noErrors = (running: Running) => expect(running.output()).not.toContain('"level":"error"');

/** A query on the cluster of a DATA_DIR, as any client makes it. */
async function clusterAnswers(dataDir: string) {
  const postmaster = await postmasterOf(dataDir);
  const credentials = JSON.parse(await readFile(join(dataDir, 'postgres-credentials.json'), 'utf8'));
  const db = postgres({ host: '127.0.0.1', port: postmaster!.port, user: credentials.user, password: credentials.password, database: 'postgres', max: 1 });
  try {
    const [row] = await db`SELECT count(*)::int AS n FROM organizations`;
    return row!.n as number;
  } finally {
    await db.end();
  }
}

describe.concurrent('one embedded cluster, several processes', () => {
  it('npm run api and npm run worker started at once: one starts the cluster, the other joins; it stops with the last of them', async () => {
    const env = await environment('race');
    const started: Running[] = [];
    try {
      const api = run(['run', 'api'], env);
      const worker = run(['run', 'worker'], env);
      started.push(api, worker);
      const [, apiKey] = await waitFor(api, /apiKey\s+(pw_\S+)/);
      await waitFor(worker, /worker running/);
      const outputs = api.output() + worker.output();
      expect(count(outputs, 'initialising the embedded Postgres cluster')).toBe(1);
      expect(count(outputs, '"embedded Postgres started"')).toBe(1);
      expect(count(outputs, 'joined the embedded Postgres another process runs')).toBe(1);
      const { pid } = (await postmasterOf(env.DATA_DIR))!;

      // The admin command joins and leaves: the cluster stays up for the two.
      const boot = await admin(['bootstrap'], env);
      expect(boot.code).toBe(0);
      expect(alive(pid)).toBe(true);

      // The one that started the cluster stops first: the cluster stays up for the other.
      const [first, second] = api.output().includes('"embedded Postgres started"') ? [api, worker] : [worker, api];
      expect(await stop(first)).toBe(true);
      noErrors(first);
      expect(first.output()).not.toContain('embedded Postgres stopped');
      expect(alive(pid)).toBe(true);
      expect(await clusterAnswers(env.DATA_DIR)).toBe(2);
      if (second === api) expect((await call(`${await baseOf(api)}/api/v1/users/me`, { key: apiKey })).status).toBe(200);

      expect(await stop(second)).toBe(true);
      noErrors(second);
      expect(second.output()).toContain('embedded Postgres stopped');
      expect(await gone(pid)).toBe(true);
    } finally {
      await cleanUp(started, env.DATA_DIR);
    }
  }, TIMEOUT_MS);

  it('npm start stops first, npm run api on another port goes on serving on the cluster npm start began', async () => {
    const env = await environment('start-then-api');
    const started: Running[] = [];
    try {
      const server = run(['start'], env);
      started.push(server);
      const [, apiKey] = await waitFor(server, /apiKey\s+(pw_\S+)/);
      const api = run(['run', 'api'], env);
      started.push(api);
      await waitFor(api, /API and MCP running/);
      expect(api.output()).toContain('joined the embedded Postgres another process runs');
      const { pid } = (await postmasterOf(env.DATA_DIR))!;

      expect(await stop(server)).toBe(true);
      noErrors(server);
      expect(alive(pid)).toBe(true);
      expect((await call(`${await baseOf(api)}/api/v1/users/me`, { key: apiKey })).status).toBe(200);

      expect(await stop(api)).toBe(true);
      noErrors(api);
      expect(await gone(pid)).toBe(true);
    } finally {
      await cleanUp(started, env.DATA_DIR);
    }
  }, TIMEOUT_MS);

  it('takes over a cluster whose service was killed outright, and one whose postmaster.pid names a live stranger after a power loss', async () => {
    const env = await environment('killed');
    let stranger: ReturnType<typeof spawn> | undefined;
    const started: Running[] = [];
    const start = () => {
      const running = run(['start'], env);
      started.push(running);
      return running;
    };
    try {
      const killed = start();
      const [, apiKey] = await waitFor(killed, /apiKey\s+(pw_\S+)/);
      const { pid } = (await postmasterOf(env.DATA_DIR))!;
      await stop(killed, { signal: 'SIGKILL' });
      expect(alive(pid)).toBe(true);

      const next = start();
      const nextBase = await baseOf(next);
      expect(next.output()).toContain('took over the embedded Postgres that a process which is gone left running');
      expect((await call(`${nextBase}/api/v1/users/me`, { key: apiKey })).status).toBe(200);
      expect(await stop(next)).toBe(true);
      noErrors(next);
      expect(await gone(pid)).toBe(true);

      // Power loss: the service and its Postgres die at once, and the pid in postmaster.pid is then another
      // process's, which Postgres alone would take for a running postmaster.
      const lost = start();
      await waitFor(lost, /MCP\s+http/);
      const before = (await postmasterOf(env.DATA_DIR))!;
      await stop(lost, { signal: 'SIGKILL' });
      process.kill(before.pid, 'SIGKILL');
      expect(await gone(before.pid)).toBe(true);
      stranger = spawn('sleep', ['60'], { stdio: 'ignore' });
      const pidFile = join(env.DATA_DIR, 'postgres', 'postmaster.pid');
      const lines = (await readFile(pidFile, 'utf8')).split('\n');
      await writeFile(pidFile, [String(stranger.pid), ...lines.slice(1)].join('\n'));

      const after = start();
      const afterBase = await baseOf(after);
      expect(after.output()).toContain('a stale postmaster.pid was left by a Postgres that is gone');
      expect((await call(`${afterBase}/api/v1/users/me`, { key: apiKey })).status).toBe(200);
      const { pid: newPid } = (await postmasterOf(env.DATA_DIR))!;
      expect(await stop(after)).toBe(true);
      noErrors(after);
      expect(await gone(newPid)).toBe(true);
      expect(alive(stranger.pid!)).toBe(true);
    } finally {
      await cleanUp(started, env.DATA_DIR);
      stranger?.kill();
    }
  }, TIMEOUT_MS);
});
