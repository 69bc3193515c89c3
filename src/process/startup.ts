/**
 * A failure to start that the person starting the service can act on: its message is the one line they see,
 * naming what failed and what to do.
 */
export class StartupError extends Error {}

/**
 * Ends a process that could not start: one line on stderr and exit code 1. The stack (and its causes) only at
 * LOG_LEVEL=debug, read from the environment because the configuration itself may be what failed.
 */
export function exitOnStartupFailure(error: unknown): never {
  const line = error instanceof StartupError ? error.message : `could not start: ${error instanceof Error ? error.message : String(error)}`;
  process.stderr.write(`postwise: ${line}\n`);
  if (process.env.LOG_LEVEL === 'debug') {
    for (let cause = error; cause instanceof Error; cause = cause.cause) process.stderr.write(`${cause.stack}\n`);
  }
  process.exit(1);
}

/** `make()`, or the process ends as exitOnStartupFailure ends it. */
export function orExit<T>(make: () => T): T {
  try {
    return make();
  } catch (error) {
    return exitOnStartupFailure(error);
  }
}

/** What an operating-system error code means for a path, in words. */
export function describeFsError(error: unknown): string {
  const code = (error as NodeJS.ErrnoException).code;
  const reasons: Record<string, string> = {
    EACCES: 'permission denied',
    EPERM: 'operation not permitted',
    EROFS: 'read-only file system',
    ENOTDIR: 'a part of the path is not a directory',
    ENOSPC: 'no space left on the device',
    EDQUOT: 'disk quota exceeded',
  };
  return (code && reasons[code]) ?? (error instanceof Error ? error.message : String(error));
}
