/** Process plumbing for the bench: ports, /proc lookups, waiting for and stopping children. Linux only. */
import type { ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';

export { freePort } from '../src/process/free-port.js';

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
    const ppid = statOf(Number(entry))?.ppid;
    if (ppid === undefined) continue; // exited while we looked
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

/** CPU time so far, in seconds: of one process, of every Postgres process on the machine, and of the whole machine. */
export interface CpuSample {
  process: number;
  postgres: number;
  machineBusy: number;
  machineTotal: number;
}

/** What a request (or call) cost between two samples, in ms of CPU: the process's, Postgres's, the rest of the machine's, and idle. */
export interface CpuPerRequest {
  process: number;
  postgres: number;
  /** Everything else that ran: the load generator, the bench itself. */
  other: number;
  idle: number;
}

/** Linux's USER_HZ, the unit of /proc's CPU times (100 on every architecture Node runs on). */
const TICKS_PER_SECOND = 100;

export function sampleCpu(pid: number): CpuSample {
  let postgres = 0;
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const stat = statOf(Number(entry));
    if (stat?.command.startsWith('postgres')) postgres += stat.cpuSeconds;
  }
  // The first line of /proc/stat: user nice system idle iowait irq softirq steal, in ticks.
  const times = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1, 9).map(Number);
  const total = times.reduce((sum, ticks) => sum + ticks, 0) / TICKS_PER_SECOND;
  const idle = (times[3]! + times[4]!) / TICKS_PER_SECOND;
  return { process: statOf(pid)?.cpuSeconds ?? 0, postgres, machineBusy: total - idle, machineTotal: total };
}

export function cpuPerRequest(before: CpuSample, after: CpuSample, requests: number): CpuPerRequest {
  const ms = (seconds: number) => (1000 * seconds) / Math.max(1, requests);
  const process = after.process - before.process;
  const postgres = after.postgres - before.postgres;
  const busy = after.machineBusy - before.machineBusy;
  return { process: ms(process), postgres: ms(postgres), other: ms(busy - process - postgres), idle: ms(after.machineTotal - before.machineTotal - busy) };
}

/** A process's command name, parent and CPU time (user and system), from /proc/<pid>/stat; undefined once it is gone. */
function statOf(pid: number): { command: string; ppid: number; cpuSeconds: number } | undefined {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return undefined;
  }
  // The command name in parentheses may hold spaces; after it come the state, the parent id, ... utime and stime (the
  // 12th and 13th fields after it).
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return {
    command: stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')')),
    ppid: Number(fields[1]),
    cpuSeconds: (Number(fields[11]) + Number(fields[12])) / TICKS_PER_SECOND,
  };
}
