import type { Option } from 'commander';
import { optionKey } from '../cli/flags.js';
import type { Database } from '../db/index.js';
import type { Outcome } from '../registry/pipeline.js';

/** What the commands run against: the database, and the registry's pipeline as a member (src/service/core.ts's Core). */
export interface Runner {
  db: Database;
  runAs(member: { userId: string; workspaceId: string }, operationId: string, args: Record<string, unknown>): Promise<Outcome>;
}

/** The options commander parsed, by their camel-cased names (`--rate-limit` is `rateLimit`). */
export type Options = Record<string, unknown>;

/** One command of `npm run admin`: its name, its words for --help, its flags, and what it does. */
export type AdminCommand = {
  name: string;
  summary: string;
  /** For the command's own --help, after its flags. */
  details?: string;
  options: Option[];
} & (
  | { /** Needs no database: run without opening one, nor starting or joining a cluster. */ offline: true; run(options: Options): Promise<unknown> }
  | { offline?: false; run(options: Options, runner: Runner): Promise<unknown> }
);

/** A refusal the command prints as `{ code, message }` on stderr, exiting 1. */
export class CommandError extends Error {
  constructor(readonly body: { code: string; message: string }) {
    super(body.message);
  }
}

export const missing = (flag: string) => new CommandError({ code: 'VALIDATION_ERROR', message: `--${flag} is required` });

/** The value of a flag the command cannot do without. */
export function required(options: Options, flag: string): string {
  const value = options[optionKey(flag)];
  if (typeof value !== 'string') throw missing(flag);
  return value;
}
