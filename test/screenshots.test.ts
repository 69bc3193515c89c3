import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, expect, inject, it } from 'vitest';

/**
 * The README's screenshots are made by a script of the repository (tools/screenshots.ts, `npm run screenshots`), run
 * here as a command into a temporary directory, so it cannot rot: the real service, a workspace with a Bluesky channel
 * on the run's PDS and its posts, the real pages in Chromium, each PNG at 1280 × 800.
 */
const out = await mkdtemp(join(tmpdir(), 'postwise-screenshots-out-'));
afterAll(() => rm(out, { recursive: true, force: true }));

/** A PNG's width and height, from its IHDR chunk (the first, right after the 8-byte signature). */
function pngSize(bytes: Buffer): { width: number; height: number } {
  expect(bytes.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]))).toBe(true);
  expect(bytes.toString('latin1', 12, 16)).toBe('IHDR');
  return { width: bytes.readUInt32BE(16), height: bytes.readUInt32BE(20) };
}

it('tools/screenshots.ts writes the calendar, the composer and the posts list at 1280 x 800', async () => {
  const run = await promisify(execFile)(
    process.execPath,
    [
      '--import',
      'tsx',
      'tools/screenshots.ts',
      '--out',
      out,
      // The run's own Postgres server, PDS and Chromium, rather than starting a second of each.
      '--postgres-url',
      inject('postgresUrl'),
      '--pds-url',
      inject('pdsUrl'),
      '--chromium-dir',
      inject('chromiumDir'),
    ],
    { timeout: 150_000 },
  ).catch((error: { stdout?: string; stderr?: string; message: string }) => {
    throw new Error(`tools/screenshots.ts failed: ${error.message}\n${error.stdout ?? ''}\n${error.stderr ?? ''}`);
  });
  expect(run.stdout.trim()).toBe(`wrote ${['calendar', 'composer', 'posts'].map((name) => join(out, `${name}.png`)).join(', ')}`);
  for (const name of ['calendar', 'composer', 'posts']) {
    const bytes = await readFile(join(out, `${name}.png`));
    expect(pngSize(bytes), name).toEqual({ width: 1280, height: 800 });
    // A page, not a blank frame: a blank 1280 x 800 PNG compresses to a few kilobytes.
    expect(bytes.length, name).toBeGreaterThan(30_000);
  }
}, 180_000);
