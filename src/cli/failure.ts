/**
 * The exit codes of the command-line client (docs/cli.md), one per kind of outcome a script may branch on.
 */
export const EXIT = {
  ok: 0,
  other: 1,
  usage: 2,
  notFound: 3,
  auth: 4,
  limits: 5,
  conflict: 6,
  unreachable: 7,
} as const;

/** A failure the client reports as `CODE: message` on stderr, exiting with `exitCode`. */
export class CliFailure extends Error {
  constructor(
    readonly code: string,
    message: string,
    readonly exitCode: number,
  ) {
    super(message);
  }
}

export const usage = (message: string) => new CliFailure('USAGE', message, EXIT.usage);

/** The exit code of an error answer of the server. */
export function exitCodeOf(status: number, code: string): number {
  if (status === 404) return EXIT.notFound;
  if (status === 401) return EXIT.auth;
  if (status === 402 || status === 429 || (status === 403 && code.endsWith('_QUOTA_EXCEEDED'))) return EXIT.limits;
  if (status === 403) return EXIT.auth;
  if (status === 409) return EXIT.conflict;
  // The client checks input with the operation's schema first; what only the server can check is still a usage error.
  if (status === 400 && code === 'VALIDATION_ERROR') return EXIT.usage;
  return EXIT.other;
}
