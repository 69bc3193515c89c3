import { chmod, mkdir, readFile, rename, stat, writeFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
// Shared with the server (a leaf of Node's modules only: .dependency-cruiser.mjs), and bundled into the client.
import { withFileLock } from '../db/file-lock.js';
import { CliFailure, EXIT } from './failure.js';

/**
 * An app sign-in (`postwise login --web`): OAuth tokens of the command line's own client for the server's REST
 * resource (`<base>/api/v1`). The refresh token changes at every refresh (the server rotates it, and ends the whole
 * sign-in if an old one is used again), so it is only ever used and replaced under the config file's lock.
 */
export interface OAuthSignIn {
  /** The authorization server that issued them (its metadata's `issuer`). */
  issuer: string;
  clientId: string;
  accessToken: string;
  refreshToken?: string;
  /** When the access token lapses (ISO 8601); unknown when the server did not say. */
  expiresAt?: string;
}

/** What `postwise login` keeps for one profile: a server, and a key, a dashboard session or an app sign-in on it. */
export interface Profile {
  baseUrl?: string;
  apiKey?: string;
  session?: { token: string; csrfToken: string; expiresAt: string };
  oauth?: OAuthSignIn;
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

/**
 * Runs `critical` holding the config file's lock (`config.json.lock` beside it), for a change that reads the file and
 * writes it back: two processes refreshing one sign-in at once would otherwise both use its refresh token, and the
 * second use would end the sign-in. Whoever holds it re-reads the file inside.
 */
export async function withConfigLock<T>(critical: () => Promise<T>, path = configPath()): Promise<T> {
  await mkdir(dirname(path), { recursive: true, mode: 0o700 });
  let entered = false;
  try {
    return await withFileLock(`${path}.lock`, () => {
      entered = true;
      return critical();
    });
  } catch (error) {
    // Waiting for the lock failed (held for minutes by a live process, or the folder not writable); not the change itself.
    if (entered) throw error;
    throw new CliFailure('CONFIG_LOCKED', `Could not lock ${path}: ${(error as Error).message}`, EXIT.other);
  }
}

/** Reads the file, changes it and writes it back, under its lock; answers what `change` answers. */
export function updateConfig<T>(change: (config: ConfigFile) => T | Promise<T>, path = configPath()): Promise<T> {
  return withConfigLock(async () => {
    const config = await readConfig(path);
    const result = await change(config);
    await writeConfig(config, path);
    return result;
  }, path);
}
