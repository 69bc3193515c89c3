import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { link, readFile, rename, unlink, writeFile } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import { StartupError } from '../process/startup.js';

/** How long to wait for another process's short critical section (starting a cluster includes initdb). */
const WAIT_MS = 120_000;

/**
 * Runs `critical` while holding the lock file at `path`, between the processes that share one DATA_DIR. The
 * file names its holder by pid and process start time, so a holder that died (SIGKILL, power loss) is seen
 * as gone even when its pid was reused, and its lock is taken over.
 */
export async function withFileLock<T>(path: string, critical: () => Promise<T>): Promise<T> {
  await acquire(path);
  try {
    return await critical();
  } finally {
    await unlink(path).catch(() => {});
  }
}

async function acquire(path: string) {
  const me = holderId(process.pid);
  // The content is written before the lock exists: link() makes it appear whole, or fails if it exists.
  const draft = `${path}.${process.pid}.${randomBytes(4).toString('hex')}`;
  await writeFile(draft, me);
  try {
    for (const started = Date.now(); ; ) {
      try {
        await link(draft, path);
        return;
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      }
      const holder = await readFile(path, 'utf8').catch(() => undefined);
      if (holder !== undefined && !holderAlive(holder)) await takeOver(path, holder);
      else if (Date.now() - started > WAIT_MS) {
        throw new StartupError(`${path} has been held by process ${holder?.split(' ')[0]} for over ${WAIT_MS / 1000} s; stop that process or remove the file`);
      } else await sleep(50);
    }
  } finally {
    await unlink(draft).catch(() => {});
  }
}

/** Whether the lock file at `path` is held by a live process (not by one that died holding it); unreadable, it may be. */
export async function heldByLiveProcess(path: string): Promise<boolean> {
  try {
    return holderAlive(await readFile(path, 'utf8'));
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    return code !== 'ENOENT' && code !== 'ENOTDIR';
  }
}

/** Removes the lock of a dead holder, unless another process replaced it in the meantime. */
async function takeOver(path: string, deadHolder: string) {
  const aside = `${path}.stale.${process.pid}.${randomBytes(4).toString('hex')}`;
  try {
    await rename(path, aside);
  } catch {
    return; // someone else took it over first
  }
  if ((await readFile(aside, 'utf8')) !== deadHolder) await link(aside, path).catch(() => {});
  await unlink(aside);
}

/** "pid starttime": the start time (Linux, /proc) tells a live holder from a new process that got its pid. */
function holderId(pid: number): string {
  return `${pid} ${startTime(pid) ?? ''}`;
}

function holderAlive(holder: string): boolean {
  const pid = Number(holder.split(' ')[0]);
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ESRCH') return false;
  }
  return holderId(pid) === holder;
}

/** Field 22 of /proc/PID/stat, counted after the command name (which may hold spaces and parentheses). */
export function startTime(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19];
  } catch {
    return undefined;
  }
}
