import { chmod, mkdir, readFile, rename, stat, writeFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { CliFailure, EXIT } from './failure.js';

/** What `postwise login` keeps for one profile: a server, and a key or a dashboard session on it. */
export interface Profile {
  baseUrl?: string;
  apiKey?: string;
  session?: { token: string; csrfToken: string; expiresAt: string };
  workspace?: { id: string; name: string };
}

export interface ConfigFile {
  profiles: Record<string, Profile>;
}

/** `$XDG_CONFIG_HOME/postwise/config.json`, or `~/.config/postwise/config.json`. */
export function configPath(env: NodeJS.ProcessEnv = process.env): string {
  return join(env.XDG_CONFIG_HOME || join(homedir(), '.config'), 'postwise', 'config.json');
}

/** The config file, refused while others may read it: it holds keys and session tokens. */
export async function readConfig(path = configPath()): Promise<ConfigFile> {
  const info = await stat(path).catch(() => undefined);
  if (!info) return { profiles: {} };
  if (info.mode & 0o077) {
    throw new CliFailure(
      'CONFIG_UNSAFE',
      `${path} can be read by other users (mode ${(info.mode & 0o777).toString(8)}) and holds credentials: run \`chmod 600 ${path}\`, then log in again if it may have been read`,
      EXIT.auth,
    );
  }
  try {
    const parsed = JSON.parse(await readFile(path, 'utf8')) as ConfigFile;
    return { profiles: parsed.profiles ?? {} };
  } catch {
    throw new CliFailure('CONFIG_UNREADABLE', `${path} is not JSON: fix or remove it, then log in again`, EXIT.usage);
  }
}

/** Writes the file with mode 0600 (its folder 0700) from the start, through a rename so that a reader never sees half of it. */
export async function writeConfig(config: ConfigFile, path = configPath()): Promise<void> {
  await mkdir(dirname(path), { recursive: true, mode: 0o700 });
  const temporary = `${path}.${process.pid}.tmp`;
  await writeFile(temporary, `${JSON.stringify(config, null, 2)}\n`, { mode: 0o600 });
  await chmod(temporary, 0o600);
  await rename(temporary, path);
}
