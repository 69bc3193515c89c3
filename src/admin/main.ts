/**
 * `npm run admin -- <command>`: workspace administration from a shell, against the same database as the server
 * (DATABASE_URL, or the embedded Postgres under DATA_DIR, whether or not a server is running). Every operation of the
 * registry is a command, made from its schemas (src/admin/operation-commands.ts), run through the same pipeline as REST
 * and MCP as a member of the workspace (its owner unless --user), so internal operations are reachable here; the few
 * commands that are not operations are written by hand (src/admin/operator-commands.ts).
 */
import { Command, CommanderError } from 'commander';
import { operations } from '../../operations/index.js';
import { CliFailure } from '../cli/failure.js';
import { loadConfig } from '../process/config.js';
import { createLogger } from '../process/logger.js';
import { exitOnStartupFailure, orExit } from '../process/startup.js';
import { OperationError } from '../registry/errors.js';
import { openCore } from '../service/core.js';
import { CommandError, type AdminCommand, type Options } from './command.js';
import { operationCommands } from './operation-commands.js';
import { operatorCommands } from './operator-commands.js';

let chosen: { command: AdminCommand; options: Options } | undefined;
const program = new Command('npm run admin --')
  .usage('<command> [options]')
  .description('Workspace administration, against the same database as the server (docs/operations.md#the-admin-command).')
  .option('--json', 'Accepted for scripts that pass it: every command prints JSON')
  // Help on stderr, so that stdout holds the JSON alone; commander's own error lines are printed our way below.
  .configureOutput({ writeOut: (text) => process.stderr.write(text), outputError: () => {} })
  .exitOverride()
  .allowExcessArguments()
  .addHelpText('after', '\n`npm run admin -- <command> --help` lists its flags. Every command prints one JSON line; a failure prints { code, message } on stderr and exits 1.');
const groups = [
  { heading: 'Operations of the registry, run as a member of the workspace (its owner unless --user ID):', commands: operationCommands(operations) },
  { heading: 'Operator commands, which are not operations:', commands: operatorCommands },
];
for (const { heading, commands } of groups) {
  for (const command of commands) {
    const made = program.command(command.name).helpGroup(heading).summary(command.summary).description(`${command.summary}.`);
    for (const option of command.options) made.addOption(option);
    made.option('--json', 'Accepted for scripts that pass it').action((options: Options) => {
      chosen = { command, options };
    });
    if (command.details) made.addHelpText('after', `\n${command.details}`);
  }
}

try {
  await program.parseAsync(process.argv);
} catch (error) {
  if (!(error instanceof CommanderError)) throw error;
  // Help asked for, or no command given: commander has printed it.
  if (error.code === 'commander.helpDisplayed' || error.code === 'commander.help') process.exit(error.exitCode === 0 ? 0 : 2);
  if (error.code === 'commander.unknownCommand') {
    process.stderr.write(program.helpInformation());
    process.exit(2);
  }
  console.error(JSON.stringify({ code: 'VALIDATION_ERROR', message: error.message.replace(/^error: /, '') }));
  process.exit(1);
}
if (!chosen) process.exit(2);
const { command, options } = chosen;
if (command.offline) process.exit(await printOutcome(() => command.run(options)));

const config = orExit(loadConfig);
const core = await openCore(config, createLogger(config.logLevel === 'info' ? 'warn' : config.logLevel)).catch(exitOnStartupFailure);
let exitCode: number;
try {
  exitCode = await printOutcome(() => command.run(options, core));
} finally {
  await core.close();
}
process.exit(exitCode);

/** Prints the command's result as one JSON line, or its error on stderr; the exit code. */
async function printOutcome(execute: () => Promise<unknown>): Promise<number> {
  try {
    console.log(JSON.stringify(await execute()));
    return 0;
  } catch (error) {
    const body =
      error instanceof CommandError
        ? error.body
        : error instanceof OperationError
          ? { code: error.code, message: error.message }
          : error instanceof CliFailure
            ? { code: 'VALIDATION_ERROR', message: error.message }
            : undefined;
    console.error(body ? JSON.stringify(body) : String(error));
    return 1;
  }
}
