import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { TestProject } from 'vitest/node';

declare module 'vitest' {
  export interface ProvidedContext {
    /** Where this run's Chromium is unpacked, by the first test file that needs it (`chromiumExecutable`). */
    chromiumDir: string;
  }
}

/**
 * The Chromium inside `@sparticuz/chromium`, unpacked at most once per run, into a directory of this run's own
 * (`$TMPDIR/postwise-chromium-XXXXXX`: about 200 MB and 3 s), removed when the run ends.
 *
 * This globalSetup only makes the directory; the first test file that launches a browser unpacks into it (so a run
 * without browser tests pays nothing), while any other waits for it to be done (`ready`, or `failed` with the reason).
 *
 * Why not the package's own place: it always unpacks into `os.tmpdir()` (`/tmp/chromium`, `/tmp/fonts`, the
 * SwiftShader libraries beside them) and answers `/tmp/chromium` whenever that file exists, even while another process
 * is still writing it: two runs sharing /tmp could launch a half-written binary, and one left there by another user
 * (mode 0700) cannot be run. Its `executablePath()` reads `os.tmpdir()` (so TMPDIR) only before its first `await`, so
 * it is called with TMPDIR naming this run's directory, and TMPDIR is restored as soon as the call has returned its
 * promise; the path it answers is checked to be in that directory.
 */
export default async function setup(project: TestProject) {
  const dir = await mkdtemp(join(tmpdir(), 'postwise-chromium-'));
  project.provide('chromiumDir', dir);
  return async () => {
    await rm(dir, { recursive: true, force: true });
  };
}

/** In a test file: the run's Chromium and its fontconfig file; unpacks them if no other file has (a minute at most). */
export async function chromiumExecutable(dir: string): Promise<{ executable: string; fontConfig: string }> {
  const ready = { executable: join(dir, 'chromium'), fontConfig: join(dir, 'fonts.conf') };
  const claimed = await mkdir(join(dir, 'unpacking')).then(
    () => true,
    (error: NodeJS.ErrnoException) => {
      if (error.code === 'EEXIST') return false;
      throw error;
    },
  );
  if (claimed) {
    try {
      await unpack(dir);
      await writeFile(join(dir, 'ready'), '');
      return ready;
    } catch (error) {
      await writeFile(join(dir, 'failed'), (error as Error).stack ?? String(error));
      throw error;
    }
  }
  const started = Date.now();
  for (;;) {
    if (existsSync(join(dir, 'ready'))) return ready;
    if (existsSync(join(dir, 'failed'))) throw new Error(`Unpacking Chromium failed: ${await readFile(join(dir, 'failed'), 'utf8')}`);
    if (Date.now() - started > 60_000) throw new Error(`Chromium was not unpacked into ${dir} within a minute`);
    await sleep(50);
  }
}

async function unpack(dir: string) {
  const { default: Chromium } = await import('@sparticuz/chromium');
  const saved = process.env.TMPDIR;
  let unpacking: Promise<string>;
  process.env.TMPDIR = dir;
  try {
    unpacking = Chromium.executablePath();
  } finally {
    if (saved === undefined) delete process.env.TMPDIR;
    else process.env.TMPDIR = saved;
  }
  const executable = await unpacking;
  if (executable !== join(dir, 'chromium') || !existsSync(executable)) {
    throw new Error(`@sparticuz/chromium unpacked to ${executable}, not into ${dir} (see test/support/chromium.ts)`);
  }
  // The package's fonts (Open Sans, unpacked into ./fonts), then the system's configuration when there is one: pages
  // have text to show on a machine without fonts.
  await writeFile(
    join(dir, 'fonts.conf'),
    `<?xml version="1.0"?>
<!DOCTYPE fontconfig SYSTEM "fonts.dtd">
<fontconfig>
  <dir>${join(dir, 'fonts')}</dir>
  <include ignore_missing="yes">/etc/fonts/fonts.conf</include>
  <cachedir>${join(dir, 'fonts-cache')}</cachedir>
</fontconfig>
`,
  );
}
