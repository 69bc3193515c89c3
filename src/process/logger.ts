import type { LogLevel } from './config.js';

export interface Logger {
  debug(message: string, fields?: Record<string, unknown>): void;
  info(message: string, fields?: Record<string, unknown>): void;
  warn(message: string, fields?: Record<string, unknown>): void;
  error(message: string, fields?: Record<string, unknown>): void;
}

const rank: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40, silent: 99 };

/**
 * One JSON line per entry on stderr, so stdout stays free for what a command prints for people or scripts.
 * Callers never pass keys, tokens or signed URLs in fields.
 */
export function createLogger(level: LogLevel): Logger {
  const write = (entryLevel: Exclude<LogLevel, 'silent'>) => (message: string, fields?: Record<string, unknown>) => {
    if (rank[entryLevel] < rank[level]) return;
    const entry = { time: new Date().toISOString(), level: entryLevel, message, ...fields };
    process.stderr.write(`${JSON.stringify(entry, errorsAsText)}\n`);
  };
  return { debug: write('debug'), info: write('info'), warn: write('warn'), error: write('error') };
}

function errorsAsText(_key: string, value: unknown) {
  return value instanceof Error ? { name: value.name, message: value.message, stack: value.stack } : value;
}
