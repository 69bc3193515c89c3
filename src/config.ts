import { resolve } from 'node:path';
import { StartupError } from './startup.js';

/** Everything the service reads from its environment, read once at start. */
export interface Config {
  host: string;
  port: number;
  /** Where the embedded Postgres keeps its cluster when DATABASE_URL is not set. */
  dataDir: string;
  /** An external Postgres; when set, no embedded one is started. */
  databaseUrl: string | undefined;
  databasePoolSize: number;
  /** How often buffered usage events are written to the database. */
  usageFlushMs: number;
  workerConcurrency: number;
  /** How often an idle worker looks for due jobs: the most a schedule waits past its time when the worker is idle. */
  workerPollIntervalMs: number;
  logLevel: LogLevel;
  /** 32 bytes (base64 or hex) sealing credentials at rest; without it, one is generated into DATA_DIR (src/secrets.ts). */
  encryptionKey: string | undefined;
  /** The externally reachable base URL, for the links this service hands out (the connect pages); without it, http://HOST:PORT as bound. */
  publicUrl: string | undefined;
  /** The PDS a Bluesky account is on when the connect form names none. */
  blueskyServiceUrl: string;
  /** A schedule still PUBLISHING this long after its attempt began is taken to be abandoned by a crashed worker. */
  publishStaleMs: number;
  /** How often a worker looks for such schedules. */
  publishRecoveryIntervalMs: number;
  /** A platform request without an answer by then is abandoned (for a write, its outcome is looked up before a retry). */
  platformTimeoutMs: number;
}

export type LogLevel = 'debug' | 'info' | 'warn' | 'error' | 'silent';

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  return {
    host: env.HOST ?? '127.0.0.1',
    port: integer(env, 'PORT', 3000),
    dataDir: resolve(env.DATA_DIR ?? '.data'),
    databaseUrl: env.DATABASE_URL || undefined,
    databasePoolSize: integer(env, 'DATABASE_POOL_SIZE', 10),
    usageFlushMs: integer(env, 'USAGE_FLUSH_MS', 1000),
    workerConcurrency: integer(env, 'WORKER_CONCURRENCY', 5),
    workerPollIntervalMs: integer(env, 'WORKER_POLL_INTERVAL_MS', 250),
    logLevel: logLevel(env.LOG_LEVEL ?? 'info'),
    encryptionKey: env.ENCRYPTION_KEY || undefined,
    publicUrl: env.PUBLIC_URL ? baseUrl(env, 'PUBLIC_URL', '') : undefined,
    blueskyServiceUrl: baseUrl(env, 'BLUESKY_SERVICE_URL', 'https://bsky.social'),
    publishStaleMs: integer(env, 'PUBLISH_STALE_MS', 5 * 60_000),
    publishRecoveryIntervalMs: integer(env, 'PUBLISH_RECOVERY_INTERVAL_MS', 60_000),
    platformTimeoutMs: integer(env, 'PLATFORM_TIMEOUT_MS', 30_000),
  };
}

function integer(env: NodeJS.ProcessEnv, name: string, fallback: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 0) throw new StartupError(`${name} must be a non-negative integer, got "${raw}"`);
  return value;
}

/** An http(s) URL without its trailing slash. */
function baseUrl(env: NodeJS.ProcessEnv, name: string, fallback: string): string {
  const raw = env[name] || fallback;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new StartupError(`${name} must be an http(s) URL, got "${raw}"`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new StartupError(`${name} must be an http(s) URL, got "${raw}"`);
  return raw.replace(/\/+$/, '');
}

function logLevel(raw: string): LogLevel {
  if (['debug', 'info', 'warn', 'error', 'silent'].includes(raw)) return raw as LogLevel;
  throw new StartupError(`LOG_LEVEL must be one of debug, info, warn, error, silent; got "${raw}"`);
}
