/** The fixture: a workspace with a key and some tags, made with the admin command (`npm run admin`). */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { projectRoot } from './service.js';

const run = promisify(execFile);

export interface Workspace {
  workspaceId: string;
  userId: string;
  apiKey: string;
}

/**
 * `npm run admin -- ...` without npm in between: the same script (src/admin.ts under tsx), but one node
 * process instead of three, which matters when it runs fifty times.
 */
async function admin(env: NodeJS.ProcessEnv, args: string[]): Promise<string> {
  try {
    const { stdout } = await run(process.execPath, ['--import', 'tsx', 'src/admin.ts', ...args], { cwd: projectRoot, env });
    return stdout.trim();
  } catch (error) {
    const { stderr } = error as { stderr?: string };
    throw new Error(`admin ${args[0]} failed: ${stderr?.trim() || (error as Error).message}`, { cause: error });
  }
}

export async function bootstrap(env: NodeJS.ProcessEnv): Promise<Workspace> {
  const lines = (await admin(env, ['bootstrap', '--json'])).split('\n');
  return JSON.parse(lines.at(-1)!) as Workspace;
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
