import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startTime, withFileLock } from '../src/db/file-lock.js';

/** The lock under DATA_DIR that serialises starting, joining and leaving an embedded cluster. */

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'postwise-lock-'));
});
afterAll(() => rm(dir, { recursive: true, force: true }));

it('lets one holder in at a time, and names the holder by pid and start time', async () => {
  const lock = join(dir, 'one-at-a-time.lock');
  const order: string[] = [];
  const hold = (name: string) =>
    withFileLock(lock, async () => {
      order.push(`${name} in`);
      expect(await readFile(lock, 'utf8')).toBe(`${process.pid} ${startTime(process.pid) ?? ''}`);
      await sleep(100);
      order.push(`${name} out`);
    });
  await Promise.all([hold('a'), hold('b')]);
  // Either may get it first (a busy machine decides); what the lock promises is that the second waits for the first.
  const [first, second] = order[0] === 'a in' ? ['a', 'b'] : ['b', 'a'];
  expect(order).toEqual([`${first} in`, `${first} out`, `${second} in`, `${second} out`]);
});

it('takes over the lock of a holder that died, and of one whose pid now belongs to another process', async () => {
  const lock = join(dir, 'stale.lock');
  await writeFile(lock, '2147483646 12345'); // no such process
  const started = Date.now();
  await withFileLock(lock, async () => {});
  // This process's pid, but another start time: the holder died and its pid was reused.
  await writeFile(lock, `${process.pid} 1`);
  await withFileLock(lock, async () => {});
  // Far below the wait for a live holder (two minutes): neither was waited for.
  expect(Date.now() - started).toBeLessThan(10_000);
});
