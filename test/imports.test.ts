import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

/** dependency-cruiser over the whole tree with the rules of .dependency-cruiser.mjs; its report of what broke them. */
async function cruise(): Promise<{ code: number; report: string }> {
  return await promisify(execFile)(
    process.execPath,
    ['node_modules/dependency-cruiser/bin/dependency-cruise.mjs', '--config', '.dependency-cruiser.mjs', '--output-type', 'err', 'src', 'operations', 'bench', 'tools', 'test', 'bin'],
    { maxBuffer: 16 * 1024 * 1024 },
  ).then(
    ({ stdout }) => ({ code: 0, report: stdout }),
    (error: { code: number; stdout: string }) => ({ code: error.code, report: error.stdout }),
  );
}

describe('what may import what (docs/architecture.md, "The map")', () => {
  it('holds across the tree: no import circle, type imports included, and every layer rule kept', async () => {
    const { code, report } = await cruise();
    expect(code, report).toBe(0);
    expect(report).toMatch(/no dependency violations found/);
  }, 60_000);

  it('is enforced: the registry naming an operation, or a circle, fails the check', async () => {
    const dir = await mkdtemp(join('src', 'registry', '.imports-check-'));
    try {
      await writeFile(join(dir, 'a.ts'), "import type { PostOutput } from '../../../operations/posts/post.js';\nimport type { B } from './b.js';\nexport type A = PostOutput | B;\n");
      await writeFile(join(dir, 'b.ts'), "import type { A } from './a.js';\nexport type B = { a?: A };\n");
      const { code, report } = await cruise();
      expect(code).not.toBe(0);
      expect(report).toMatch(/registry-knows-no-operation: src\/registry\/\.imports-check-\w+\/a\.ts → operations\/posts\/post\.ts/);
      expect(report).toMatch(/no-circular: src\/registry\/\.imports-check-\w+\/a\.ts/);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }, 60_000);
});
