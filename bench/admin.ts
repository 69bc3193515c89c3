/** The fixture's workspaces, plan, tags and channels, made with the admin command (`npm run admin`). */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { projectRoot } from './service.js';

const run = promisify(execFile);

export interface Workspace {
  workspaceId: string;
  userId: string;
  apiKey: string;
}

export type Platform = 'BLUESKY' | 'LINKEDIN' | 'MASTODON';

/**
 * `npm run admin -- ...` without npm in between: the same script (src/admin/main.ts under tsx), but one node
 * process instead of three, which matters when it runs fifty times.
 */
async function admin(env: NodeJS.ProcessEnv, args: string[]): Promise<string> {
  try {
    const { stdout } = await run(process.execPath, ['--import', 'tsx', 'src/admin/main.ts', ...args], { cwd: projectRoot, env });
    return stdout.trim();
  } catch (error) {
    const { stderr } = error as { stderr?: string };
    throw new Error(`admin ${args[0]} failed: ${stderr?.trim() || (error as Error).message}`, { cause: error });
  }
}

/** The command's JSON: its last line of stdout. */
async function adminJson<T>(env: NodeJS.ProcessEnv, args: string[]): Promise<T> {
  return JSON.parse((await admin(env, args)).split('\n').at(-1)!) as T;
}

export function bootstrap(env: NodeJS.ProcessEnv, plan?: string): Promise<Workspace> {
  return adminJson<Workspace>(env, ['bootstrap', '--json', ...(plan ? ['--plan', plan] : [])]);
}

/** Creates (or changes) a plan whose monthly quotas (and rate limit, unless given) are `allowance` on every platform. */
export async function defineGenerousPlan(env: NodeJS.ProcessEnv, name: string, allowance: number, rateLimit = allowance): Promise<void> {
  await admin(env, [
    'define-plan',
    '--plan', name,
    '--rate-limit', String(rateLimit),
    '--storage-bytes', String(allowance),
    '--quota', `BLUESKY=${allowance}`,
    '--quota', `LINKEDIN=${allowance}`,
    '--quota', `MASTODON=${allowance}`,
  ]);
}

/** A channel without credentials; its id. */
export async function createIntegration(env: NodeJS.ProcessEnv, workspaceId: string, platform: Platform, name: string): Promise<string> {
  return (await adminJson<{ id: string }>(env, ['create-integration', '--workspace', workspaceId, '--platform', platform, '--name', name])).id;
}

/** `count` tags, a few admin commands at a time: each is a short-lived process that opens its own pool. */
export async function createTags(env: NodeJS.ProcessEnv, workspaceId: string, count: number, concurrency: number): Promise<void> {
  const names = Array.from({ length: count }, (_, i) => `Bench tag ${String(i + 1).padStart(2, '0')}`);
  const worker = async () => {
    for (let name = names.shift(); name !== undefined; name = names.shift()) {
      await admin(env, ['create-tag', '--workspace', workspaceId, '--name', name]);
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
}

/** `connect-bluesky`: checks the account against `serviceUrl` and stores its credentials sealed; the integration's id. */
export async function connectBluesky(env: NodeJS.ProcessEnv, workspaceId: string, handle: string, appPassword: string, serviceUrl: string): Promise<string> {
  const args = ['connect-bluesky', '--workspace', workspaceId, '--handle', handle, '--app-password', appPassword, '--service-url', serviceUrl];
  return (await adminJson<{ id: string }>(env, args)).id;
}
