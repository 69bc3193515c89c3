/**
 * The admin commands that run an operation: one per operation of the registry, named by its id (`listApiKeys` →
 * `list-api-keys`), with a flag for each field of its input, made, typed and converted by the command-line client's
 * own machinery (src/cli/flags.ts) from the operation's schemas; and the names and flags of src/admin/aliases.ts.
 * Each runs through the same pipeline as REST and MCP, as a member of the workspace (its owner unless --user).
 */
import { Option } from 'commander';
import { dataOption, flagsOf, inputOf, kebab, optionKey, optionsOf, readData, type FieldFlag } from '../cli/flags.js';
import { manifestEntryOf, type CliOperation } from '../cli/manifest.js';
import type { Operation } from '../registry/operation.js';
import { aliases, type AdminAlias } from './aliases.js';
import { CommandError, missing, required, type AdminCommand, type Options, type Runner } from './command.js';

export function operationCommands(operations: readonly Operation[]): AdminCommand[] {
  for (const alias of aliases) {
    if (!operations.some((operation) => operation.id === alias.operation)) throw new Error(`src/admin/aliases.ts: ${alias.command} names ${alias.operation}, no operation of the registry`);
  }
  return operations.flatMap((operation) => {
    const entry = manifestEntryOf(operation);
    const own = aliases.filter((alias) => alias.operation === operation.id);
    const name = kebab(operation.id);
    const plain = own.some((alias) => alias.command === name) ? [] : [{ command: name, operation: operation.id }];
    return [...plain, ...own].map((alias) => commandOf(entry, alias));
  });
}

/** The command's flags: the operation's fields', and its aliases'. */
function flagsWithAliases(operation: CliOperation, alias: AdminAlias): FieldFlag[] {
  // A list here is comma-separated (`--channels ID,ID`, `--languages ''` for none), unless its flag is repeated.
  const derived = flagsOf(operation).map((field) => (field.repeatable && !field.json ? { ...field, separator: ',' } : field));
  const extra = Object.entries(alias.flags ?? {}).map(([flag, spec]): FieldFlag => {
    const { field, value, nullWord, repeat } = typeof spec === 'string' ? { field: spec } : spec;
    const own = derived.find((candidate) => candidate.at.length === 1 && candidate.at[0] === field);
    if (!own) throw new Error(`src/admin/aliases.ts: ${alias.command} --${flag} names ${field}, no field of ${operation.id}`);
    return { ...own, flag, constant: value, nullWord, separator: repeat ? undefined : own.separator, required: value === undefined && own.required };
  });
  const renamed = new Set(extra.filter((field) => field.constant === undefined).map((field) => field.at[0]));
  const needed = new Set(alias.required);
  return [...derived.filter((field) => !renamed.has(field.at[0]!)), ...extra].map((field) => (needed.has(field.flag) ? { ...field, required: true } : field));
}

function commandOf(operation: CliOperation, alias: AdminAlias): AdminCommand {
  const flags = flagsWithAliases(operation, alias);
  // remove-member's --user is the member removed; everywhere else, the member acting.
  const actsAs = !flags.some((field) => field.flag === 'user');
  const options = [
    new Option('--workspace <id>', 'The workspace (required)'),
    ...(actsAs ? [new Option('--user <id>', 'Act as this member of the workspace; its owner unless given')] : []),
    ...flags.flatMap(optionsOf),
    ...(operation.method === 'GET' ? [] : [dataOption()]),
  ];
  return {
    name: alias.command,
    summary: alias.summary ?? operation.summary,
    details: `Operation ${operation.id}: ${operation.method} /api/v1${operation.path} (${operation.visibility}).${operation.description ? `\n\n${operation.description}` : ''}`,
    options,
    run: (given, runner) => runOperation(runner, operation, flags, given, { actsAs, required: alias.required ?? [] }),
  };
}

async function runOperation(runner: Runner, operation: CliOperation, flags: FieldFlag[], options: Options, rules: { actsAs: boolean; required: string[] }) {
  const workspaceId = required(options, 'workspace');
  for (const flag of rules.required) if (options[optionKey(flag)] === undefined) throw missing(flag);
  const data = typeof options.data === 'string' ? await readData(options.data) : undefined;
  const input = inputOf(operation, flags, options, [], data);
  const actor = rules.actsAs && typeof options.user === 'string' ? options.user : undefined;
  const [member] = await runner.db<{ userId: string }[]>`
    SELECT user_id FROM memberships
    WHERE organization_id::text = ${workspaceId} AND ${actor ? runner.db`user_id::text = ${actor}` : runner.db`role = 'owner'`}`;
  if (!member) throw new CommandError({ code: 'NOT_FOUND', message: actor ? 'No such member of that workspace' : 'No such workspace' });
  const outcome = await runner.runAs({ userId: member.userId, workspaceId }, operation.id, { ...input.path, ...input.query, ...input.body });
  if (!outcome.ok) throw new CommandError(outcome.body);
  return outcome.body;
}
