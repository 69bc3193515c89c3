import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { copyFile, mkdir, readFile, readlink, rm } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';

/** The README's commands as child processes: `npm start`, `npm run api`, `npm run admin`... */

export interface Running {
  child: ChildProcess;
  output: () => string;
  exited: Promise<number | null>;
}

export interface RunOptions {
  cwd?: string;
  /** Run as another user (the test runs as root). */
  user?: { name: string; uid: number; gid: number; home: string };
  /** Piped to standard input (closed at once); otherwise standard input is empty. */
  input?: string;
}

/**
 * Runs npm with `args`, in a process group of its own, as from a fresh shell: without the npm_* and VITEST* variables the
 * npm and vitest running the tests set (its cache and user config among them). LOG_LEVEL is warn unless `env` says.
 */
export function run(args: string[], env: Record<string, string>, { cwd, user, input }: RunOptions = {}): Running {
  let output = '';
  const inherited = Object.fromEntries(Object.entries(process.env).filter(([name]) => !/^(npm_|vitest)/i.test(name)));
  const child = spawn('npm', args, {
    cwd,
    env: { ...inherited, LOG_LEVEL: 'warn', ...(user && { HOME: user.home, USER: user.name }), ...env },
    detached: true,
    stdio: [input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
    ...(user && { uid: user.uid, gid: user.gid }),
  });
  if (input !== undefined) child.stdin!.end(input);
  child.stdout!.on('data', (chunk) => (output += chunk));
  child.stderr!.on('data', (chunk) => (output += chunk));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return { child, output: () => output, exited };
}

/**
 * A checkout of this project at `target`, as `git clone` and `npm install` leave one: the files of the work
 * tree (tracked, and new ones not ignored) and node_modules, hard-linked (fast, and physically under
 * `target`, so every permission on the way applies), without vitest's cache, which a test run rewrites.
 * The tests give it a path with a space (a directory named `my project`), where a path passed on unquoted splits.
 */
export async function checkout(target: string) {
  const exec = promisify(execFile);
  const { stdout } = await exec('git', ['ls-files', '--cached', '--others', '--exclude-standard', '-z']);
  for (const file of stdout.split('\0').filter(Boolean)) {
    await mkdir(join(target, dirname(file)), { recursive: true });
    await copyFile(file, join(target, file)).catch((error) => {
      if (error.code !== 'ENOENT') throw error; // deleted in the work tree, not yet in git
    });
  }
  await exec('cp', ['-al', 'node_modules', join(target, 'node_modules')]);
  await rm(join(target, 'node_modules', '.vite'), { recursive: true, force: true });
}

export async function waitFor(running: Running, pattern: RegExp, timeoutMs = 60_000): Promise<RegExpMatchArray> {
  const started = Date.now();
  for (;;) {
    const match = running.output().match(pattern);
    if (match) return match;
    if (Date.now() - started > timeoutMs || running.child.exitCode !== null) throw new Error(`no ${pattern} in:\n${running.output()}`);
    await sleep(100);
  }
}

export async function admin(args: string[], env: Record<string, string>, options?: RunOptions) {
  const done = run(['run', '--silent', 'admin', '--', ...args], env, options);
  const code = await done.exited;
  const lines = done.output().trim().split('\n');
  return { code, json: JSON.parse(lines.at(-1)!) };
}

/**
 * Sends `signal` to the whole process group (as a terminal's Ctrl-C or a supervisor does) or to the top
 * process alone (as `kill PID` or a container runtime does); true once every process of the group is gone.
 */
export async function stop(running: Running, { signal = 'SIGTERM', group = true }: { signal?: NodeJS.Signals; group?: boolean } = {}) {
  process.kill(group ? -running.child.pid! : running.child.pid!, signal);
  await running.exited;
  for (let waited = 0; waited < 15_000; waited += 100) {
    if (!alive(-running.child.pid!)) return true;
    await sleep(100);
  }
  return false;
}

export function alive(pid: number) {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** The embedded cluster of a DATA_DIR: its postmaster's pid and port, while one runs. */
export async function postmasterOf(dataDir: string): Promise<{ pid: number; port: number } | undefined> {
  const lines = (await readFile(join(dataDir, 'postgres', 'postmaster.pid'), 'utf8').catch(() => '')).split('\n');
  return lines[0] ? { pid: Number(lines[0]), port: Number(lines[3]) } : undefined;
}

/** True once `pid` has gone, within a few seconds. */
export async function gone(pid: number, timeoutMs = 10_000) {
  for (const since = Date.now(); Date.now() - since < timeoutMs; await sleep(50)) if (!alive(pid)) return true;
  return false;
}

/** Removes a DATA_DIR, and the cluster it links to when root placed it elsewhere (src/db/embedded-root.ts). */
export async function removeDataDir(dataDir: string) {
  const linked = await readlink(join(dataDir, 'postgres')).catch(() => undefined);
  if (linked) await rm(dirname(linked), { recursive: true, force: true, maxRetries: 3 });
  await rm(dataDir, { recursive: true, force: true, maxRetries: 3 });
}

/**
 * Ends whatever a test started that still runs (its processes, and the Postgres of its DATA_DIR, at once),
 * then removes the DATA_DIR: a test that failed half-way leaves nothing behind, and its own error shows.
 */
export async function cleanUp(started: Running[], dataDir: string) {
  for (const running of started) if (alive(-running.child.pid!)) process.kill(-running.child.pid!, 'SIGKILL');
  const postmaster = await postmasterOf(dataDir);
  if (postmaster && alive(postmaster.pid)) {
    process.kill(postmaster.pid, 'SIGQUIT');
    await gone(postmaster.pid);
  }
  await removeDataDir(dataDir).catch(() => {});
}
