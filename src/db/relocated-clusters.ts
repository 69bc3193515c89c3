/**
 * Run as root, a cluster whose DATA_DIR the postgres user cannot reach lives in CLUSTERS_DIR (default
 * /var/lib/postwise), one directory per cluster (`<name>-<random>/postgres`), linked from DATA_DIR/postgres
 * (src/db/embedded-root.ts). Deleting DATA_DIR leaves that directory behind, so every start records in it the
 * DATA_DIR that uses it (`owners/`), and `npm run admin -- prune-clusters` removes the clusters whose every
 * recorded DATA_DIR is provably gone. Nothing is removed on a doubt: a cluster in use, without a record, with
 * an unreadable one, or whose DATA_DIR might be on a disk not mounted is kept.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { lstat, mkdir, readdir, readFile, readlink, rename, rm, stat, writeFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { describeFsError } from '../process/startup.js';
import { heldByLiveProcess } from './file-lock.js';

/** Root's usual place for service data. */
const DEFAULT_CLUSTERS_DIR = '/var/lib/postwise';

/** The directory of a cluster's home holding one record per DATA_DIR that uses the cluster. */
const OWNERS = 'owners';

/** CLUSTERS_DIR (tests point it at a temporary directory), or /var/lib/postwise. */
export function clustersDir(env: NodeJS.ProcessEnv = process.env): string {
  return resolve(env.CLUSTERS_DIR || DEFAULT_CLUSTERS_DIR);
}

interface OwnerRecord {
  dataDir: string;
  /**
   * The filesystems DATA_DIR and its parent were on. Found on another one later, the path is most likely a
   * mount point whose disk is not mounted: that DATA_DIR is not gone, only out of sight.
   */
  dataDirDevice: number;
  parentDevice: number;
  recordedAt: string;
}

/**
 * Records `dataDir` as a user of the cluster home `home` (one file per DATA_DIR, so a DATA_DIR moved or copied
 * elsewhere is recorded as well once it starts); true when it was not recorded as it is now.
 */
export async function recordOwner(home: string, dataDir: string): Promise<boolean> {
  const [dataDirFound, parentFound] = await Promise.all([stat(dataDir), stat(dirname(dataDir))]);
  const record: OwnerRecord = { dataDir, dataDirDevice: dataDirFound.dev, parentDevice: parentFound.dev, recordedAt: new Date().toISOString() };
  const file = join(home, OWNERS, `${createHash('sha256').update(dataDir).digest('hex').slice(0, 16)}.json`);
  const existing = await readFile(file, 'utf8').then(parseRecord, () => undefined);
  if (existing?.dataDir === dataDir && existing.dataDirDevice === record.dataDirDevice && existing.parentDevice === record.parentDevice) return false;
  await mkdir(join(home, OWNERS), { recursive: true, mode: 0o755 });
  // Written aside and renamed: prune-clusters reads a record whole or not at all.
  const draft = `${file}.${process.pid}.draft`;
  await writeFile(draft, JSON.stringify(record), { mode: 0o644 });
  await rename(draft, file);
  return true;
}

function parseRecord(text: string): OwnerRecord | undefined {
  try {
    const record = JSON.parse(text) as Partial<OwnerRecord>;
    const valid =
      typeof record.dataDir === 'string' &&
      record.dataDir.startsWith('/') &&
      Number.isFinite(record.dataDirDevice) &&
      Number.isFinite(record.parentDevice);
    return valid ? (record as OwnerRecord) : undefined;
  } catch {
    return undefined;
  }
}

export type KeptStatus = 'IN_USE' | 'OWNER_ALIVE' | 'OWNER_UNKNOWN' | 'OWNER_NOT_PROVEN_GONE';

interface Listed {
  /** The cluster's home in CLUSTERS_DIR (the cluster itself is `postgres` in it). */
  path: string;
  /** The DATA_DIRs recorded as its users. */
  dataDirs: string[];
  reason: string;
  /** Its size on disk, null when it could not be read. */
  bytes: number | null;
  size: string | null;
}

export interface PruneReport {
  clustersDir: string;
  /** Clusters every recorded DATA_DIR of which is provably gone; removed when asked to. */
  orphaned: (Listed & { removed: boolean; error?: string })[];
  kept: (Listed & { status: KeptStatus })[];
  orphanedBytes: number;
}

type Verdict = { orphaned: true; dataDirs: string[]; reason: string } | { orphaned: false; status: KeptStatus; dataDirs: string[]; reason: string };

/** Lists the clusters in CLUSTERS_DIR, orphaned or kept (and why), and removes the orphaned ones when `remove`. */
export async function pruneClusters(dir: string, { remove }: { remove: boolean }): Promise<PruneReport> {
  const report: PruneReport = { clustersDir: dir, orphaned: [], kept: [], orphanedBytes: 0 };
  let entries;
  try {
    entries = await readdir(dir, { withFileTypes: true });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return report; // no cluster was ever placed there
    throw new ClustersDirUnreadable(`${dir} cannot be read (${describeFsError(error)})`);
  }
  for (const entry of entries.filter((found) => found.isDirectory()).sort((a, b) => a.name.localeCompare(b.name))) {
    const path = join(dir, entry.name);
    const verdict = await judge(path);
    const bytes = await diskUsage(path).catch(() => null);
    const listed = { path, dataDirs: verdict.dataDirs, reason: verdict.reason, bytes, size: bytes === null ? null : humanSize(bytes) };
    if (!verdict.orphaned) {
      report.kept.push({ ...listed, status: verdict.status });
      continue;
    }
    report.orphanedBytes += bytes ?? 0;
    if (!remove) {
      report.orphaned.push({ ...listed, removed: false });
      continue;
    }
    try {
      await removeHome(path);
      report.orphaned.push({ ...listed, removed: true });
    } catch (error) {
      report.orphaned.push({ ...listed, removed: false, error: describeFsError(error) });
    }
  }
  return report;
}

export class ClustersDirUnreadable extends Error {}

/**
 * Whether a cluster's home is orphaned. The order matters: a process that starts on a DATA_DIR holds its
 * postgres.lock from before it makes a home until its link is in place, so the lock is looked at before the
 * link; and once no link leads to a home, no start takes it up again.
 */
async function judge(home: string): Promise<Verdict> {
  const kept = (status: KeptStatus, reason: string, dataDirs: string[] = []): Verdict => ({ orphaned: false, status, dataDirs, reason });
  const found = await lstat(home).catch(() => undefined);
  if (!found) return kept('OWNER_NOT_PROVEN_GONE', 'it went away while being examined');
  if (found.uid !== process.getuid?.()) return kept('OWNER_UNKNOWN', `it belongs to uid ${found.uid}, not to the user running this command`);
  if (found.mode & 0o022) return kept('OWNER_NOT_PROVEN_GONE', 'it is writable by others, so its records prove nothing');

  let names: string[];
  try {
    names = (await readdir(join(home, OWNERS))).filter((name) => name.endsWith('.json'));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return kept('OWNER_UNKNOWN', 'no DATA_DIR is recorded in it (made before Postwise recorded them)');
    return kept('OWNER_NOT_PROVEN_GONE', `its records cannot be read (${describeFsError(error)})`);
  }
  const records: OwnerRecord[] = [];
  for (const name of names) {
    const record = await readFile(join(home, OWNERS, name), 'utf8').then(parseRecord, () => undefined);
    if (!record) return kept('OWNER_NOT_PROVEN_GONE', `its record ${join(home, OWNERS, name)} cannot be read`);
    records.push(record);
  }
  if (!records.length) return kept('OWNER_NOT_PROVEN_GONE', `${join(home, OWNERS)} holds no record`);
  const dataDirs = records.map((record) => record.dataDir);

  const running = await postmasterIn(join(home, 'postgres'));
  if (running) return kept(running.status, running.reason, dataDirs);
  for (const { dataDir } of records) {
    const lock = join(dataDir, 'postgres.lock');
    if (await heldByLiveProcess(lock)) return kept('IN_USE', `${lock} is held by a live process`, dataDirs);
  }
  const reasons: string[] = [];
  for (const record of records) {
    const owner = await ownerOf(record, home);
    if (!owner.gone) return kept(owner.status, owner.reason, dataDirs);
    reasons.push(owner.reason);
  }
  return { orphaned: true, dataDirs, reason: reasons.join('; ') };
}

/** A postmaster that runs the cluster: its postmaster.pid names a live postgres process. */
async function postmasterIn(clusterDir: string): Promise<{ status: KeptStatus; reason: string } | undefined> {
  const pidFile = join(clusterDir, 'postmaster.pid');
  let text: string;
  try {
    text = await readFile(pidFile, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return undefined;
    return { status: 'OWNER_NOT_PROVEN_GONE', reason: `${pidFile} cannot be read (${describeFsError(error)})` };
  }
  const pid = Number(text.split('\n')[0]);
  if (!Number.isInteger(pid) || pid <= 0) return undefined;
  if (runsPostgres(pid)) return { status: 'IN_USE', reason: `its Postgres runs (pid ${pid})` };
  return undefined;
}

/**
 * Whether `pid` is a live postgres process (any: its command line may name the cluster by a link that is gone).
 * Without /proc (macOS), any live process is taken for one.
 */
function runsPostgres(pid: number): boolean {
  try {
    return readFileSync(`/proc/${pid}/comm`, 'utf8').trim() === 'postgres';
  } catch {
    try {
      process.kill(pid, 0);
      return true;
    } catch (error) {
      return (error as NodeJS.ErrnoException).code === 'EPERM';
    }
  }
}

type Owner = { gone: true; reason: string } | { gone: false; status: KeptStatus; reason: string };

/**
 * Whether a recorded DATA_DIR is provably gone: its parent directory is there, on the filesystem recorded,
 * and DATA_DIR is not, or DATA_DIR is there, on the filesystem recorded, and its `postgres` does not link to
 * this home. A parent that is missing, or on another filesystem, may be a disk not mounted: not a proof.
 */
async function ownerOf(record: OwnerRecord, home: string): Promise<Owner> {
  const { dataDir } = record;
  const unproven = (reason: string): Owner => ({ gone: false, status: 'OWNER_NOT_PROVEN_GONE', reason });
  const gone = (reason: string): Owner => ({ gone: true, reason });
  const otherDevice = 'is on another filesystem than when it was recorded (a disk not mounted?)';

  const entry = await lstat(dataDir).catch((error: NodeJS.ErrnoException) => error);
  if (entry instanceof Error) {
    if (entry.code !== 'ENOENT') return unproven(`${dataDir} cannot be examined (${describeFsError(entry)})`);
    const parent = dirname(dataDir);
    const parentFound = await stat(parent).catch(() => undefined);
    if (!parentFound?.isDirectory()) return unproven(`neither ${dataDir} nor its parent directory exists (a disk not mounted?)`);
    if (parentFound.dev !== record.parentDevice) return unproven(`${parent} ${otherDevice}`);
    return gone(`${dataDir} no longer exists`);
  }
  // DATA_DIR may itself be a link, to a disk not mounted too.
  const found = await stat(dataDir).catch(() => undefined);
  if (!found) return unproven(`${dataDir} links to nothing (a disk not mounted?)`);
  if (!found.isDirectory()) return gone(`${dataDir} is no longer a directory`);
  if (found.dev !== record.dataDirDevice) return unproven(`${dataDir} ${otherDevice}`);

  const link = join(dataDir, 'postgres');
  const linkFound = await lstat(link).catch((error: NodeJS.ErrnoException) => error);
  if (linkFound instanceof Error) {
    if (linkFound.code === 'ENOENT') return gone(`${link} no longer exists`);
    return unproven(`${link} cannot be examined (${describeFsError(linkFound)})`);
  }
  if (!linkFound.isSymbolicLink()) return gone(`${link} is a cluster of its own, not a link to this one`);
  const target = resolve(dataDir, await readlink(link));
  if (await sameDirectory(dirname(target), home)) return { gone: false, status: 'OWNER_ALIVE', reason: `${link} links to it` };
  return gone(`${link} links to ${target} instead`);
}

/** Whether two paths name one directory, however spelled; when that cannot be told, yes. */
async function sameDirectory(a: string, b: string): Promise<boolean> {
  if (a === b) return true;
  try {
    const [first, second] = await Promise.all([stat(a), stat(b)]);
    return first.dev === second.dev && first.ino === second.ino;
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    return code !== 'ENOENT' && code !== 'ENOTDIR';
  }
}

/** The records go last: a removal cut short leaves a home that the next run finds orphaned again. */
async function removeHome(home: string) {
  for (const name of await readdir(home)) if (name !== OWNERS) await rm(join(home, name), { recursive: true, force: true });
  await rm(home, { recursive: true, force: true });
}

/** The disk space a directory tree takes, as `du` counts it (a file hard-linked twice counts once). */
async function diskUsage(path: string, seen = new Set<string>()): Promise<number> {
  const found = await lstat(path).catch(() => undefined);
  if (!found) return 0; // removed while counted: a running cluster's files come and go
  const id = `${found.dev}:${found.ino}`;
  if (seen.has(id)) return 0;
  seen.add(id);
  let total = found.blocks * 512;
  if (!found.isDirectory()) return total;
  const names = await readdir(path).catch((error: NodeJS.ErrnoException) => {
    if (error.code === 'ENOENT') return [];
    throw error;
  });
  for (const name of names) total += await diskUsage(join(path, name), seen);
  return total;
}

function humanSize(bytes: number): string {
  const units = ['B', 'kB', 'MB', 'GB', 'TB'];
  let unit = 0;
  for (let value = bytes; value >= 1000 && unit < units.length - 1; value /= 1000) unit++;
  return unit ? `${(bytes / 1000 ** unit).toFixed(1)} ${units[unit]}` : `${bytes} B`;
}
