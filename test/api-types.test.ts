import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

describe('src/dashboard/api-types.ts', () => {
  it('is what the registry generates now, so a changed operation reaches the dashboard\'s type check', async () => {
    const check = await promisify(execFile)(process.execPath, ['--import', 'tsx', 'tools/generate-client.ts', '--check']).catch((error) => error);
    expect(check.stderr ?? '').toBe('');
    expect(check.stdout).toBe('src/dashboard/api-types.ts is up to date\nsrc/cli/operations.json is up to date\n');
  }, 60_000);
});
