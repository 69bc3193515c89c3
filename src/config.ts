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
  logLevel: LogLevel;
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
    logLevel: logLevel(env.LOG_LEVEL ?? 'info'),
  };
}

function integer(env: NodeJS.ProcessEnv, name: string, fallback: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 0) throw new StartupError(`${name} must be a non-negative integer, got "${raw}"`);
  return value;
}

function logLevel(raw: string): LogLevel {
  if (['debug', 'info', 'warn', 'error', 'silent'].includes(raw)) return raw as LogLevel;
  throw new StartupError(`LOG_LEVEL must be one of debug, info, warn, error, silent; got "${raw}"`);
}
