/**
 * Running as root. Postgres refuses to run as root, so it runs as the `postgres` system user, who must reach
 * its binaries and its cluster: every directory above them must let that user through. A clone under root's
 * home (mode 0700) lets nobody through, and no permission of a directory the user did not hand over is
 * changed here. Instead the binaries are copied where that user reaches them, and the cluster lives in
 * DATA_DIR (handed over: it may be given the traverse bit) or, when DATA_DIR itself is out of reach, in
 * CLUSTERS_DIR (/var/lib/postwise), linked from DATA_DIR and recording that DATA_DIR (src/db/relocated-clusters.ts).
 * Every change is logged once, naming its path.
 */
import { execFile } from 'node:child_process';
import { chmod, cp, lstat, mkdir, mkdtemp, readlink, rename, rm, stat, symlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, dirname, join, parse, resolve } from 'node:path';
import { promisify } from 'node:util';
import type { Logger } from '../process/logger.js';
import { describeFsError, StartupError } from '../process/startup.js';
import { clustersDir, recordOwner } from './relocated-clusters.js';

const run = promisify(execFile);

export interface PostgresUser {
  uid: number;
  gid: number;
}

export async function postgresUser(logger: Logger): Promise<PostgresUser> {
  const existing = await lookUp('postgres');
  if (existing) return existing;
  try {
    await run('useradd', ['--system', '--user-group', '--no-create-home', '--shell', '/usr/sbin/nologin', 'postgres']).catch(() =>
      run('useradd', ['--system', '--gid', 'postgres', '--no-create-home', '--shell', '/usr/sbin/nologin', 'postgres']),
    );
  } catch (error) {
    const reason = (error as { stderr?: string }).stderr?.trim() || (error as Error).message;
    throw new StartupError(`could not create the system user postgres (${reason}); create it, run as an ordinary user, or set DATABASE_URL`);
  }
  logger.info('created the system user postgres to run the embedded Postgres (Postgres refuses to run as root)');
  return (await lookUp('postgres'))!;
}

async function lookUp(name: string): Promise<PostgresUser | undefined> {
  try {
    const [uid, gid] = await Promise.all([run('id', ['-u', name]), run('id', ['-g', name])]);
    return { uid: Number(uid.stdout), gid: Number(gid.stdout) };
  } catch {
    return undefined;
  }
}

/**
 * The shipped binaries where `user` can run them: in place when it reaches them, else a copy (made once per
 * version, root's own and not writable by others) under the temporary directory.
 */
export async function binariesReachableBy(user: PostgresUser, shipped: { dir: string; version: string }, logger: Logger): Promise<string> {
  const postgres = join(shipped.dir, 'bin', 'postgres');
  if (!(await blockedAt(postgres, user)) && allow(await stat(postgres), user, 0o5)) return shipped.dir;
  const copy = join(tmpdir(), `postwise-postgres-${shipped.version}`);
  if (await isOwnCopy(copy)) return copy;
  const blocked = await blockedAt(tmpdir(), user);
  if (blocked) {
    throw new StartupError(`the postgres user cannot reach ${shipped.dir} nor the temporary directory ${tmpdir()} (${blocked} is closed to it); set TMPDIR to a directory every user can reach, such as /tmp`);
  }
  const draft = await mkdtemp(`${copy}.`);
  await cp(shipped.dir, draft, { recursive: true, verbatimSymlinks: true });
  await chmod(draft, 0o755);
  try {
    await rename(draft, copy);
  } catch {
    await rm(draft, { recursive: true, force: true }); // another process made the copy first
  }
  if (!(await isOwnCopy(copy))) throw new StartupError(`${copy} exists but is not root's own; remove it`);
  logger.info('copied the Postgres binaries where the postgres user can reach them', { from: shipped.dir, to: copy });
  return copy;
}

/** A copy this user made: owned by it, writable by nobody else (the temporary directory is everyone's). */
async function isOwnCopy(dir: string): Promise<boolean> {
  const found = await lstat(dir).catch(() => undefined);
  if (!found?.isDirectory() || found.uid !== process.getuid!() || found.mode & 0o022) return false;
  return lstat(join(dir, 'bin', 'postgres')).then(
    (file) => file.isFile(),
    () => false,
  );
}

/** The cluster directory for DATA_DIR, reachable by `user`. */
export async function clusterDirReachableBy(user: PostgresUser, dataDir: string, logger: Logger): Promise<string> {
  const inDataDir = join(dataDir, 'postgres');
  // Placed elsewhere on an earlier start (below): DATA_DIR/postgres links to it.
  const linked = await readlink(inDataDir).catch(() => undefined);
  if (linked) {
    const clusterDir = resolve(dataDir, linked);
    await recordOwnerOfLinked(clusterDir, dataDir, logger);
    return clusterDir;
  }

  const blocked = await blockedAt(dirname(dataDir), user);
  if (!blocked) {
    const found = await stat(dataDir);
    const mode = found.mode & 0o7777;
    if (!allow(found, user, 0o1)) {
      await chmod(dataDir, mode | 0o001);
      logger.info('gave DATA_DIR the traverse bit for others (o+x) so that the postgres user reaches the cluster in it', {
        path: dataDir,
        mode: octal(mode | 0o001),
      });
    }
    return inDataDir;
  }
  const closed = `${blocked} is mode ${octal((await stat(blocked)).mode & 0o7777)}`;
  if (await exists(inDataDir)) {
    throw new StartupError(`the postgres user cannot reach the cluster in ${inDataDir} (${closed}); set DATA_DIR to a directory it can reach, or move this one there`);
  }
  const clusters = clustersDir();
  let home: string;
  try {
    await mkdir(clusters, { recursive: true, mode: 0o755 });
    home = await mkdtemp(join(clusters, `${basename(dirname(dataDir)) || 'postwise'}-`));
    await chmod(home, 0o755);
    // Before the link: whatever becomes of DATA_DIR, the cluster says whose it is (npm run admin -- prune-clusters).
    await recordOwner(home, dataDir);
  } catch (error) {
    throw new StartupError(`the postgres user cannot reach DATA_DIR ${dataDir} (${closed}) and ${clusters} cannot be made (${describeFsError(error)}); set DATA_DIR to a directory it can reach`);
  }
  if (await blockedAt(home, user)) throw new StartupError(`the postgres user cannot reach DATA_DIR ${dataDir} (${closed}) nor ${home}; set DATA_DIR to a directory it can reach`);
  const clusterDir = join(home, 'postgres');
  await symlink(clusterDir, inDataDir);
  logger.info('the postgres user cannot reach DATA_DIR, so the cluster lives where it can, linked from DATA_DIR', {
    dataDir,
    reason: closed,
    cluster: clusterDir,
    link: inDataDir,
  });
  return clusterDir;
}

/**
 * Records DATA_DIR in the home of the cluster it links to, when that home is one of CLUSTERS_DIR's: a cluster
 * placed before homes held records, or one a DATA_DIR moved or copied elsewhere shares, then counts this
 * DATA_DIR as its user too. A home elsewhere was not handed over, and is left as it is.
 */
async function recordOwnerOfLinked(clusterDir: string, dataDir: string, logger: Logger) {
  const home = dirname(clusterDir);
  if (basename(clusterDir) !== 'postgres' || dirname(home) !== clustersDir()) return;
  const found = await lstat(home).catch(() => undefined);
  if (!found?.isDirectory() || found.uid !== process.getuid!()) return;
  try {
    if (await recordOwner(home, dataDir)) logger.info('recorded DATA_DIR in the home of the cluster it links to', { dataDir, home });
  } catch (error) {
    logger.warn('could not record DATA_DIR in the home of the cluster it links to: until it is, prune-clusters counts only the DATA_DIRs recorded before', {
      dataDir,
      home,
      error: describeFsError(error),
    });
  }
}

/** The first directory from / down to `path` (itself included, when a directory) that `user` may not traverse. */
async function blockedAt(path: string, user: PostgresUser): Promise<string | undefined> {
  const { root } = parse(path);
  const dirs = [root];
  for (const part of path.slice(root.length).split('/').filter(Boolean)) dirs.push(join(dirs.at(-1)!, part));
  for (const dir of dirs) {
    const found = await stat(dir).catch(() => undefined);
    if (!found) return undefined; // not made yet: it will be made reachable, or the caller fails clearly
    if (found.isDirectory() && !allow(found, user, 0o1)) return dir;
  }
  return undefined;
}

/** Whether `user` has the permission `bits` (r=4, w=2, x=1) on a file of this owner and mode. */
function allow(file: { uid: number; gid: number; mode: number }, user: PostgresUser, bits: number): boolean {
  const shift = file.uid === user.uid ? 6 : file.gid === user.gid ? 3 : 0;
  return ((file.mode >> shift) & bits) === bits;
}

const octal = (mode: number) => `0${mode.toString(8)}`;

function exists(path: string) {
  return lstat(path).then(
    () => true,
    () => false,
  );
}
