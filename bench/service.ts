/** The service under test, started the way `npm start` starts it, in a process group of its own. */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { freePort, groupAlive, hasExited, listenerOf, waitForExit, waitUntil } from './procs.js';

export const projectRoot = fileURLToPath(new URL('..', import.meta.url));

export interface RunningService {
  /** Without a trailing slash, e.g. http://127.0.0.1:40123 */
  url: string;
  /** The node process that serves HTTP, for its memory. */
  serverPid: number;
  /** What the admin command needs to reach the same database. */
  env: NodeJS.ProcessEnv;
  /** The end of the service's stderr, for error reports. */
  stderrTail(): string;
  /** SIGTERM to the service, wait for it to drain and exit; SIGKILL what is left of its group after a grace period. */
  stop(): Promise<{ clean: boolean }>;
}

const START_TIMEOUT_MS = 120_000;
/** The service drains for up to 10 s (src/service/start.ts) and then stops its Postgres. */
const STOP_TIMEOUT_MS = 30_000;
const TAIL_LINES = 40;

export async function startService(): Promise<RunningService> {
  const port = await freePort();
  // An external database is used as given; otherwise a fresh embedded cluster, removed at the end.
  const dataDir = process.env.DATABASE_URL ? undefined : mkdtempSync(join(tmpdir(), 'postwise-bench-'));
  // 127.0.0.1 trusted: the webhooks scenario's receiver listens there (bench/webhooks.ts).
  const env: NodeJS.ProcessEnv = { ...process.env, LOG_LEVEL: 'warn', MEDIA_FETCH_ALLOW_HOSTS: '127.0.0.1', ...(dataDir && { DATA_DIR: dataDir }) };
  // BENCH_CPU_PROF=DIR: the service writes a V8 CPU profile there when it stops (summarise it with bench/profile-top.ts).
  const profile = process.env.BENCH_CPU_PROF ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_CPU_PROF}`] : [];
  const child = spawn(process.execPath, [...profile, ...(process.env.BENCH_SERVICE_FLAGS ?? '').split(' ').filter(Boolean), '--import', 'tsx', 'src/main.ts'], {
    cwd: projectRoot,
    env: { ...env, PORT: String(port), HOST: '127.0.0.1' },
    // A group of its own, so one signal reaches tsx, node and Postgres, and Ctrl-C on the bench does not.
    detached: true,
    // stdout carries the first-start banner with an API key; it is of no use here and is not shown.
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  const tail: string[] = [];
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => {
    tail.push(...chunk.split('\n').filter(Boolean));
    tail.splice(0, Math.max(0, tail.length - TAIL_LINES));
  });
  const pgid = child.pid!;
  let stopped = false;

  // Last resort if the bench dies without running its cleanup: nothing may outlive it.
  const onExit = () => {
    if (groupAlive(pgid)) process.kill(-pgid, 'SIGKILL');
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  };
  process.on('exit', onExit);

  let serverPid: number | undefined;
  const stop = async () => {
    if (stopped) return { clean: true };
    stopped = true;
    let clean = true;
    if (groupAlive(pgid)) {
      // One signal to the node process that serves, as a supervisor sends it; it stops its own Postgres.
      // Before the server is found (a failed start), the group gets it.
      process.kill(serverPid ?? -pgid, 'SIGTERM');
      clean = (await waitForExit(child, STOP_TIMEOUT_MS)) && child.exitCode === 0;
      // The service stops its Postgres (in the same group) before it exits, so normally nothing is left.
      for (let i = 0; i < 25 && groupAlive(pgid); i++) await sleep(200);
      if (groupAlive(pgid)) {
        clean = false;
        process.kill(-pgid, 'SIGKILL');
        await waitForExit(child, 5_000);
      }
    }
    if (dataDir) rmSync(dataDir, { recursive: true, force: true, maxRetries: 5 });
    process.removeListener('exit', onExit);
    return { clean };
  };

  const url = `http://127.0.0.1:${port}`;
  try {
    const exited = () => (hasExited(child) ? `the service exited (code ${child.exitCode}, signal ${child.signalCode})` : undefined);
    await waitUntil('service start', START_TIMEOUT_MS, async () => (await fetch(`${url}/api/v1/openapi.json`)).ok, exited);
    serverPid = listenerOf(pgid, port);
    if (serverPid === undefined) throw new Error(`no process under ${pgid} listens on port ${port}`);
    return { url, serverPid, env, stderrTail: () => tail.join('\n'), stop };
  } catch (error) {
    await stop();
    throw new Error(`${(error as Error).message}\n--- service stderr ---\n${tail.join('\n')}`, { cause: error });
  }
}
