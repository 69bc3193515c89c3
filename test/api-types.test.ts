import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

describe('what tools/generate-client.ts writes from the registry', () => {
  it('is what the registry generates now: src/dashboard/api-types.ts (a changed operation reaches the dashboard\'s type check), src/cli/operations.json and the table of operations in docs/api.md', async () => {
    const check = await promisify(execFile)(process.execPath, ['--import', 'tsx', 'tools/generate-client.ts', '--check']).catch((error) => error);
    // A stale file is named on stderr: "… is stale: run `npm run generate:client` and commit the result".
    expect(check.stderr ?? '').toBe('');
    expect(check.stdout).toBe('src/dashboard/api-types.ts is up to date\nsrc/cli/operations.json is up to date\ndocs/api.md is up to date\n');
  }, 60_000);
});
