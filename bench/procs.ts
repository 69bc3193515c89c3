/** Process plumbing for the bench: ports, /proc lookups, waiting for and stopping children. Linux only. */
import type { ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';

export { freePort } from '../src/net.js';

/** Resident memory of a process in MiB, from /proc/<pid>/status; undefined once it is gone. */
export function rssMb(pid: number): number | undefined {
  try {
    const match = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return match ? Number(match[1]) / 1024 : undefined;
  } catch {
    return undefined;
  }
}

/** `root` and every process below it, found by scanning the parent ids in /proc/<pid>/stat. */
export function descendantsOf(root: number): number[] {
  const children = new Map<number, number[]>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
    } catch {
      continue; // exited while we looked
    }
    // The command name in parentheses may hold spaces; the parent id is the second field after it.
    const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
    children.set(ppid, [...(children.get(ppid) ?? []), Number(entry)]);
  }
  const found: number[] = [];
  for (let queue = [root]; queue.length > 0; ) {
    const pid = queue.shift()!;
    found.push(pid);
    queue = queue.concat(children.get(pid) ?? []);
  }
  return found;
}

/**
 * The process under `root` that holds the socket listening on `port`. `npm start` runs tsx, which runs the
 * real node process as its child, so the pid we spawned is not the one whose memory matters.
 */
export function listenerOf(root: number, port: number): number | undefined {
  const inodes = listeningInodes(port);
  if (inodes.size === 0) return undefined;
  for (const pid of descendantsOf(root)) {
    let fds: string[];
    try {
      fds = readdirSync(`/proc/${pid}/fd`);
    } catch {
      continue;
    }
    for (const fd of fds) {
      try {
        const inode = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`))?.[1];
        if (inode && inodes.has(inode)) return pid;
      } catch {
        // a descriptor closed while we looked
      }
    }
  }
  return undefined;
}

function listeningInodes(port: number): Set<string> {
  const inodes = new Set<string>();
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let lines: string[];
    try {
      lines = readFileSync(table, 'utf8').trim().split('\n').slice(1);
    } catch {
      continue;
    }
    for (const line of lines) {
      const fields = line.trim().split(/\s+/);
      const localPort = Number.parseInt(fields[1]?.split(':')[1] ?? '', 16);
      if (localPort === port && fields[3] === '0A' && fields[9]) inodes.add(fields[9]); // 0A: LISTEN
    }
  }
  return inodes;
}

export function hasExited(child: ChildProcess): boolean {
  return child.exitCode !== null || child.signalCode !== null;
}

/** Resolves true once the child has exited, false if it is still running after `ms`. */
export async function waitForExit(child: ChildProcess, ms: number): Promise<boolean> {
  if (hasExited(child)) return true;
  const exited = new Promise<true>((resolve) => child.once('exit', () => resolve(true)));
  return Promise.race([exited, sleep(ms, false, { ref: false })]);
}

/** Whether any process is left in a process group (signal 0 only checks). */
export function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Polls `check` until it is true, or throws after `ms` (or at once when `abort` says so). */
export async function waitUntil(what: string, ms: number, check: () => Promise<boolean>, abort?: () => string | undefined): Promise<void> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    const reason = abort?.();
    if (reason) throw new Error(`${what}: ${reason}`);
    if (await check().catch(() => false)) return;
    await sleep(200);
  }
  throw new Error(`${what}: not ready after ${ms / 1000} s`);
}
