/**
 * `postwise`: the command-line client (docs/cli.md). Its commands are made from src/cli/operations.json, which
 * tools/generate-client.ts writes from the operation registry: an operation added to the server is a command here
 * with no line written for it. It talks to a server over HTTP only, with a key, an app sign-in (OAuth) or a
 * dashboard session.
 */
import { createInterface } from 'node:readline/promises';
import { Writable } from 'node:stream';
import { Command, CommanderError, Option } from 'commander';
import packageJson from '../../package.json' with { type: 'json' };
import { newIdempotencyKey, send, succeeded, type ClientOptions, type Credentials } from './client.js';
import { completionScript, type CompletionCommand } from './completion.js';
import { CliFailure, EXIT, usage } from './failure.js';
import { dataOption, flagsOf, inputOf, optionsOf, readData, readStdin, validate } from './flags.js';
import { commandOf, operations, type CliOperation } from './manifest.js';
import { itemsOf, nextPageQuery, readable } from './output.js';
import { configPath, readConfig, updateConfig, type Profile } from './profiles.js';
import { renderers } from './render.js';

const DEFAULT_BASE_URL = 'http://127.0.0.1:3000';

interface GlobalOptions {
  baseUrl?: string;
  apiKey?: string;
  profile?: string;
  json?: boolean;
  verbose?: boolean;
  retries: string;
}

const write = (text: string) => process.stdout.write(text.endsWith('\n') ? text : `${text}\n`);
const note = (text: string) => process.stderr.write(`${text}\n`);

/** A secret from stdin: typed without echo on a terminal, or the first line of what is piped (never from argv). */
async function readSecret(prompt: string): Promise<string> {
  if (!process.stdin.isTTY) return (await readStdin()).split(/\r?\n/)[0]!.trim();
  const muted = new Writable({ write: (_chunk, _encoding, done) => done() });
  process.stderr.write(prompt);
  const reader = createInterface({ input: process.stdin, output: muted, terminal: true });
  const answer = await reader.question('');
  reader.close();
  process.stderr.write('\n');
  return answer.trim();
}

function profileName(globals: GlobalOptions): string {
  return globals.profile ?? process.env.POSTWISE_PROFILE ?? 'default';
}

/** The server, the credentials and the retries of this run: flags, then the environment, then the profile. */
async function clientOf(globals: GlobalOptions, { needsCredentials = true } = {}): Promise<ClientOptions & { profile: Profile }> {
  const name = profileName(globals);
  const profile = (await readConfig()).profiles[name] ?? {};
  const retries = Number(globals.retries);
  if (!Number.isInteger(retries) || retries < 0 || retries > 10) throw usage(`--retries: expected a whole number from 0 to 10, got "${globals.retries}"`);
  const baseUrl = (globals.baseUrl ?? process.env.POSTWISE_BASE_URL ?? profile.baseUrl ?? DEFAULT_BASE_URL).replace(/\/+$/, '');
  const trace = globals.verbose ? note : undefined;
  const apiKey = globals.apiKey ?? process.env.POSTWISE_API_KEY ?? profile.apiKey;
  let credentials: Credentials = apiKey ? { apiKey } : profile.session ? { session: profile.session } : undefined;
  if (!apiKey && profile.oauth) {
    // Its tokens are for the server it signed in to, and are sent nowhere else (--base-url or POSTWISE_BASE_URL naming another).
    if (profile.baseUrl && profile.baseUrl !== baseUrl) {
      if (needsCredentials) {
        throw new CliFailure('NOT_LOGGED_IN', `Profile "${name}" is signed in to ${profile.baseUrl}, not ${baseUrl}: sign in there with \`postwise login --web --base-url ${baseUrl}\` (under another --profile to keep this one)`, EXIT.auth);
      }
    } else {
      // Loaded only for an app sign-in: the MCP SDK's OAuth functions are not for every command's start.
      const { signInTokens } = await import('./oauth.js');
      credentials = { oauth: signInTokens({ profile: name, baseUrl, signIn: profile.oauth, trace }) };
    }
  }
  if (needsCredentials && !credentials) {
    throw new CliFailure(
      'NOT_LOGGED_IN',
      `No credentials for profile "${name}": run \`postwise login\` (or \`postwise login --web\`), or give --api-key or POSTWISE_API_KEY`,
      EXIT.auth,
    );
  }
  return { baseUrl, credentials, retries, trace, profile };
}

/**
 * What reaches only the public operations, named for messages: a key, or an app sign-in (whose token's audience is the
 * REST API; the server answers either's call of an internal operation 404). Undefined for a session, which reaches all.
 */
function publicOnly(credentials: Credentials): string | undefined {
  if (credentials && 'apiKey' in credentials) return 'an API key';
  if (credentials && 'oauth' in credentials) return 'an app sign-in (postwise login --web)';
  return undefined;
}

/** The path with its parameters filled in from the input. */
const pathOf = (operation: CliOperation, values: Record<string, unknown>) =>
  operation.path.replace(/\{(\w+)\}/g, (_, name: string) => encodeURIComponent(String(values[name] ?? '')));

/**
 * Exactly the REST body when piped or with --json; on a terminal, the operation's own reading (src/cli/render.ts) when
 * it has one, else a table or a block. A reading that fails (an answer of another shape, a read after it refused)
 * falls back to the block: the call itself succeeded.
 */
async function print(globals: GlobalOptions, answer: { text: string; json: unknown }, reading?: { operation: CliOperation; client: ClientOptions }) {
  if (!answer.text) return;
  if (globals.json || !process.stdout.isTTY || answer.json === undefined) return write(answer.text);
  const renderer = reading && renderers[reading.operation.id];
  if (renderer) {
    const read = async (id: string, params: Record<string, string> = {}) => {
      const operation = operations.find((candidate) => candidate.id === id && candidate.method === 'GET');
      if (!operation) throw new Error(`${id}: not a GET operation of the registry`);
      // As for a command: a key's call of an internal operation is bound to fail (404), so it is not sent.
      if (operation.visibility === 'internal' && publicOnly(reading.client.credentials)) {
        throw new CliFailure('NEEDS_SESSION', `${id} needs a signed-in session`, EXIT.auth);
      }
      return succeeded(await send(reading.client, { method: 'GET', path: pathOf(operation, params) })).json;
    };
    const columns = process.stdout.columns || Number(process.env.COLUMNS) || 100;
    const shown = await renderer(answer.json, { read, columns, credentials: publicOnly(reading.client.credentials) }).catch((error: unknown) => {
      reading.client.trace?.(`(no reading of ${reading.operation.id}: ${error instanceof Error ? error.message : String(error)})`);
      return undefined;
    });
    if (shown !== undefined) return write(shown);
  }
  write(readable(answer.json));
}

async function runOperation(operation: CliOperation, command: Command, positional: string[]) {
  const options = command.opts<Record<string, unknown>>();
  const globals = command.optsWithGlobals<GlobalOptions>();
  const data = typeof options.data === 'string' ? await readData(options.data) : undefined;
  const input = inputOf(operation, flagsOf(operation), options, positional.filter((value) => value !== undefined), data);
  const files = (options.media as string[] | undefined) ?? [];
  const alts = (options.alt as string[] | undefined) ?? [];
  if (alts.length > files.length) throw usage(`--alt: ${alts.length} alt texts for ${files.length} --media files; give them in the same order`);
  // The files stand in for the media: checked together with everything else before anything is uploaded.
  const placeholder = '00000000-0000-4000-8000-000000000000';
  const withMedia = (ids: string[]) => {
    const rows = (input.body?.rows as Record<string, unknown>[] | undefined) ?? [];
    for (const row of rows) row.media ??= ids.map((id, index) => ({ id, ...(alts[index] && { altText: alts[index] }) }));
  };
  if (files.length) withMedia(files.map(() => placeholder));
  validate(operation, input);
  const client = await clientOf(globals);
  // The server answers a key's call of an internal operation with 404, saying nothing of its existence; the client knows
  // it exists, so it says what the command needs rather than sending a call bound to fail.
  const limited = publicOnly(client.credentials);
  if (operation.visibility === 'internal' && limited) {
    const { resource, action } = commandOf(operation);
    throw new CliFailure('NEEDS_SESSION', `postwise ${resource} ${action} needs a signed-in session: postwise login --email EMAIL (${limited} reaches only the public commands)`, EXIT.auth);
  }
  if (files.length) {
    const { progressBar, uploadFile } = await import('./uploads.js');
    const uploaded = [];
    for (const file of files) uploaded.push(await uploadFile(client, file, process.stderr.isTTY ? progressBar(process.stderr) : undefined));
    for (const row of (input.body?.rows as Record<string, unknown>[] | undefined) ?? []) delete row.media;
    withMedia(uploaded.map((result) => String(result.mediaId)));
  }
  const call = {
    method: operation.method,
    path: pathOf(operation, input.path),
    query: input.query,
    body: input.body,
    idempotencyKey: operation.idempotent ? ((options.idempotencyKey as string | undefined) ?? newIdempotencyKey()) : undefined,
  };
  if (!options.all) return print(globals, succeeded(await send(client, call)), { operation, client });
  // Every page, one item per line; a page that repeats an item (a list changing under the walk) prints it once.
  const seen = new Set<string>();
  let query: Record<string, unknown> | undefined = call.query;
  while (query) {
    const answer = succeeded(await send(client, { ...call, query }));
    for (const item of itemsOf(answer.json) ?? []) {
      const line = JSON.stringify(item);
      const id = (item as { id?: unknown })?.id;
      const key = id === undefined ? line : String(id);
      if (seen.has(key)) continue;
      seen.add(key);
      write(line);
    }
    query = nextPageQuery(answer.json, query);
  }
}

/** One command per operation, grouped by resource, with its flags made from the operation's input schema. */
function addOperationCommands(program: Command): CompletionCommand[] {
  const groups = new Map<string, Command>();
  const completions: CompletionCommand[] = [];
  for (const operation of operations) {
    const { resource, action } = commandOf(operation);
    let group = groups.get(resource);
    if (!group) {
      const actions = operations.filter((other) => commandOf(other).resource === resource).map((other) => `${commandOf(other).action}${other.visibility === 'internal' ? '*' : ''}`);
      group = program.command(resource).description(`${resource}: ${actions.join(', ')}${actions.some((name) => name.endsWith('*')) ? ' (* needs a signed-in session)' : ''}`);
      groups.set(resource, group);
    }
    const session = operation.visibility === 'internal' ? ' (needs a signed-in session: postwise login --email)' : '';
    const command = group.command(action).summary(`${operation.summary}${session}`).description(`${operation.summary}${session}.`);
    const pathNames = Object.keys(operation.input.path?.properties ?? {});
    for (const name of pathNames) command.argument(`[${name}]`, `the ${name} (or --${name.replace(/([A-Z])/g, '-$1').toLowerCase()})`);
    for (const field of flagsOf(operation)) for (const option of optionsOf(field)) command.addOption(option);
    if (operation.method !== 'GET') command.addOption(dataOption());
    if (operation.idempotent) command.option('--idempotency-key <key>', 'Sent as Idempotency-Key (one is generated otherwise, and kept across retries)');
    if (operation.method === 'GET' && !pathNames.length) command.option('--all', 'Every page, one item per line (JSON lines)');
    if (operation.id === 'createPost') {
      const repeat = (value: string, previous: string[] | undefined) => [...(previous ?? []), value];
      command.addOption(new Option('--media <file>', 'An image to upload and attach to every row without media (repeatable, in order)').argParser(repeat));
      command.addOption(new Option('--alt <text>', 'The alt text of the --media file in the same position (repeatable)').argParser(repeat));
    }
    command.addHelpText(
      'after',
      `\nOperation ${operation.id}: ${operation.method} /api/v1${operation.path} (${operation.visibility}${operation.visibility === 'internal' ? ': a dashboard session only, with `postwise login --email`' : ''}).\n${operation.description ? `\n${operation.description}\n` : ''}`,
    );
    command.action(async (...args: unknown[]) => {
      const self = args.at(-1) as Command;
      await runOperation(operation, self, args.slice(0, pathNames.length) as string[]);
    });
    completions.push({ resource, action, flags: command.options.map((option) => option.long!).filter(Boolean) });
  }
  return completions;
}

function addUploadsPut(program: Command, completions: CompletionCommand[]) {
  const uploads = program.commands.find((command) => command.name() === 'uploads')!;
  const put = uploads
    .command('put')
    .summary('Upload files: initiate, the signed PUT and complete for each')
    .description('Upload image files: for each, its SHA-256 computed here, POST /uploads/initiate, the signed PUT with a progress bar on a terminal, and POST /uploads/complete; prints each result.')
    .argument('<files...>', 'image files (JPEG, PNG, WebP, GIF)')
    .addOption(new Option('--alt <text>', 'alt text for the file in the same position, echoed in its result as altText (repeatable)').argParser((value: string, previous: string[] | undefined) => [...(previous ?? []), value]))
    .action(async (files: string[], options: { alt?: string[] }, command: Command) => {
      const globals = command.optsWithGlobals<GlobalOptions>();
      const client = await clientOf(globals);
      // Loaded when used: reading images' types (file-type) is not for every command's start.
      const { progressBar, uploadFile } = await import('./uploads.js');
      const results = [];
      for (const [index, file] of files.entries()) {
        const result = await uploadFile(client, file, process.stderr.isTTY ? progressBar(process.stderr) : undefined);
        results.push({ file, ...result, ...(options.alt?.[index] && { altText: options.alt[index] }) });
      }
      // One result per line when piped (JSON lines), so that a script reads each as it comes.
      for (const result of results) await print(globals, { text: JSON.stringify(result), json: result });
    });
  completions.push({ resource: 'uploads', action: 'put', flags: put.options.map((option) => option.long!) });
}

const DEFAULT_WEB_TIMEOUT_SECONDS = 600;

/** `An app sign-in (OAuth) to BASE as NAME <EMAIL>, profile "x"; workspace …`: what `login --web` and `whoami` say. */
function appSignInLine(baseUrl: string, profile: string, me: unknown, workspace: Profile['workspace']): string {
  const { name, email } = (me ?? {}) as { name?: string; email?: string };
  const who = name || email ? ` as ${[name, email && `<${email}>`].filter(Boolean).join(' ')}` : '';
  // A token cannot read the workspace (GET /workspace is a session's): named when the profile knows it.
  const where = workspace?.name ? `, workspace "${workspace.name}"` : ', in the workspace chosen when it was allowed';
  return `An app sign-in (OAuth, postwise login --web) to ${baseUrl}${who}${where}; profile "${profile}"`;
}

/** `postwise login --web`: the browser's sign-in (src/cli/oauth.ts), its tokens kept in the profile, then who it is. */
async function loginWithBrowser(globals: GlobalOptions, client: ClientOptions, options: { email?: string; browser: boolean; timeout: string }) {
  if (options.email) throw usage('--web and --email are two ways to sign in: give one');
  if (globals.apiKey) throw usage('--web signs in without a key: leave out --api-key');
  const timeoutSeconds = Number(options.timeout);
  if (!Number.isInteger(timeoutSeconds) || timeoutSeconds < 1 || timeoutSeconds > 3600) throw usage(`--timeout: expected a whole number of seconds from 1 to 3600, got "${options.timeout}"`);
  const name = profileName(globals);
  const { signInTokens, signInWithBrowser } = await import('./oauth.js');
  const signIn = await signInWithBrowser({ baseUrl: client.baseUrl, openBrowser: options.browser, timeoutSeconds, note, trace: client.trace });
  const replaced = await updateConfig((config) => {
    const former = config.profiles[name];
    const profile: Profile = { ...former, baseUrl: client.baseUrl, oauth: signIn };
    // One way in per profile; and the workspace of a former login may not be the one allowed now.
    delete profile.apiKey;
    delete profile.session;
    delete profile.workspace;
    config.profiles[name] = profile;
    return former;
  });
  await endReplaced(replaced, client);
  const credentials: Credentials = { oauth: signInTokens({ profile: name, baseUrl: client.baseUrl, signIn, fresh: true, trace: client.trace }) };
  const me = succeeded(await send({ ...client, credentials }, { method: 'GET', path: '/users/me' })).json;
  note(`Signed in. ${appSignInLine(client.baseUrl, name, me, undefined)}; saved in ${configPath()}`);
}

/** A login replacing an app sign-in disconnects it on the server, best effort: it would otherwise stay connected, unused. */
async function endReplaced(former: Profile | undefined, client: ClientOptions): Promise<void> {
  if (!former?.oauth || !former.baseUrl) return;
  const { revokeSignIn } = await import('./oauth.js');
  const failed = await revokeSignIn(former.baseUrl, former.oauth);
  if (failed) client.trace?.(`(the former app sign-in could not be disconnected: ${failed})`);
}

function addAccountCommands(program: Command, completions: CompletionCommand[]) {
  const login = program
    .command('login')
    .description(
      'Check a key with GET /users/me and keep it in the profile (the key from --api-key, POSTWISE_API_KEY, or stdin so that it stays out of shell history); ' +
        'with --web, sign in in the browser instead (an app sign-in, OAuth: you allow the command line on the dashboard\'s consent page, and its tokens are kept and renewed here); ' +
        'with --email, sign in as a dashboard member (the password from stdin), which reaches internal operations too.',
    )
    .option('--web', 'sign in in the browser (OAuth): prints the page to open, and waits for it')
    .option('--no-browser', 'with --web: only print the page, do not try to open a browser')
    .option('--timeout <seconds>', 'with --web: how long to wait for the browser', String(DEFAULT_WEB_TIMEOUT_SECONDS))
    .option('--email <email>', 'sign in with a dashboard account; the password is read from stdin')
    .addHelpText(
      'after',
      '\nAn app sign-in (--web) reaches the public commands, as a key does, with the permissions you allowed; its access token lasts an hour and is renewed ' +
        'without a word, and it ends when you log out or disconnect "Postwise command line" in the dashboard (then: postwise login --web again).\n',
    )
    .action(async (options: { email?: string; web?: boolean; browser: boolean; timeout: string }, command: Command) => {
      const globals = command.optsWithGlobals<GlobalOptions>();
      const name = profileName(globals);
      const client = await clientOf(globals, { needsCredentials: false });
      if (options.web) return loginWithBrowser(globals, client, options);
      const webOnly = ['browser', 'timeout'].filter((option) => command.getOptionValueSource(option) === 'cli');
      if (webOnly.length) throw usage(`--${webOnly[0] === 'browser' ? 'no-browser' : 'timeout'} goes with --web`);
      const config = await readConfig();
      const profile: Profile = { ...(config.profiles[name] ?? {}), baseUrl: client.baseUrl };
      delete profile.oauth;
      if (options.email) {
        const password = await readSecret('Password: ');
        const answer = succeeded(await send({ ...client, credentials: undefined }, { method: 'POST', path: '/auth/login', body: { email: options.email, password } }));
        const token = /postwise_session=([^;]+)/.exec(answer.headers.get('set-cookie') ?? '')?.[1];
        const session = answer.json as { csrfToken: string; expiresAt: string; workspace: { id: string; name: string } };
        if (!token) throw new CliFailure('INTERNAL', 'The server signed in but set no session cookie', EXIT.other);
        delete profile.apiKey;
        Object.assign(profile, { session: { token, csrfToken: session.csrfToken, expiresAt: session.expiresAt }, workspace: session.workspace });
      } else {
        const apiKey = globals.apiKey ?? process.env.POSTWISE_API_KEY ?? (await readSecret('API key: '));
        if (!apiKey) throw usage('No key given: pass it on stdin, or with --api-key or POSTWISE_API_KEY');
        const me = succeeded(await send({ ...client, credentials: { apiKey } }, { method: 'GET', path: '/users/me' })).json as { organizationId?: string; organizationName?: string };
        delete profile.session;
        Object.assign(profile, { apiKey }, me.organizationId ? { workspace: { id: me.organizationId, name: me.organizationName ?? '' } } : {});
      }
      const replaced = await updateConfig((latest) => {
        const former = latest.profiles[name];
        latest.profiles[name] = profile;
        return former;
      });
      await endReplaced(replaced, client);
      note(`Logged in to ${client.baseUrl}${profile.workspace?.name ? ` (workspace "${profile.workspace.name}")` : ''} as profile "${name}", with ${profile.session ? 'a dashboard session' : 'an API key'}; saved in ${configPath()}`);
    });
  const logout = program
    .command('logout')
    .description('Forget the profile\'s key, session or app sign-in (a session ends on the server too, and an app sign-in is disconnected there: RFC 7009 revocation)')
    .action(async (_options: unknown, command: Command) => {
      const globals = command.optsWithGlobals<GlobalOptions>();
      const name = profileName(globals);
      const client = await clientOf(globals, { needsCredentials: false });
      // Taken out of the file first (under its lock, so that no renewal puts a new pair back), then ended on the server.
      const profile = await updateConfig((config) => {
        const found = config.profiles[name];
        const was = found && { ...found };
        if (found) {
          delete found.apiKey;
          delete found.session;
          delete found.oauth;
        }
        return was;
      });
      let ended = '';
      if (profile?.session) {
        await send({ ...client, credentials: { session: profile.session } }, { method: 'POST', path: '/auth/logout', body: {} }).catch(() => undefined);
      }
      if (profile?.oauth) {
        const { revokeSignIn } = await import('./oauth.js');
        const failed = await revokeSignIn(profile.baseUrl ?? client.baseUrl, profile.oauth);
        ended = failed ? `; the server could not be told to disconnect the app sign-in (${failed}): disconnect "Postwise command line" in the dashboard` : '; the app sign-in was disconnected on the server';
      }
      note(`Logged out of profile "${name}"${ended}`);
    });
  const whoami = program
    .command('whoami')
    .description('Who the key, session or app sign-in is: GET /users/me (the same as `postwise users get`); for an app sign-in, a line on stderr says so')
    .action(async (_options: unknown, command: Command) => {
      const globals = command.optsWithGlobals<GlobalOptions>();
      const client = await clientOf(globals);
      const answer = succeeded(await send(client, { method: 'GET', path: '/users/me' }));
      if (client.credentials && 'oauth' in client.credentials) note(appSignInLine(client.baseUrl, profileName(globals), answer.json, client.profile.workspace));
      await print(globals, answer);
    });
  const api = program
    .command('api')
    .description('Send any request with the profile\'s credentials, as `gh api` does: PATH below /api/v1 (with its query), or from the root when it starts with /api/ or /auth/')
    .argument('<method>', 'GET, POST, PUT, PATCH or DELETE')
    .argument('<path>', 'e.g. /posts?limit=5')
    .option('--data <json>', 'the body: JSON, @file.json, or - for stdin')
    .option('--idempotency-key <key>', 'sent as Idempotency-Key')
    .action(async (method: string, path: string, options: { data?: string; idempotencyKey?: string }, command: Command) => {
      const globals = command.optsWithGlobals<GlobalOptions>();
      const verb = method.toUpperCase();
      if (!['GET', 'POST', 'PUT', 'PATCH', 'DELETE'].includes(verb)) throw usage(`${method}: not an HTTP method (GET, POST, PUT, PATCH, DELETE)`);
      if (!path.startsWith('/')) throw usage(`${path}: a path starts with /`);
      const body = options.data ? await readData(options.data) : undefined;
      const [pathname, search] = path.split('?', 2) as [string, string | undefined];
      const query = Object.fromEntries(new URLSearchParams(search ?? ''));
      await print(globals, succeeded(await send(await clientOf(globals), { method: verb, path: pathname, query, body, idempotencyKey: options.idempotencyKey })));
    });
  const mcp = program
    .command('mcp')
    .description('Serve the server\'s MCP tools over stdio, relayed to its /mcp with the profile\'s key: for MCP clients that launch a process (docs/cli.md has their configuration)')
    .action(async (_options: unknown, command: Command) => {
      const globals = command.optsWithGlobals<GlobalOptions>();
      const client = await clientOf(globals);
      if (!client.credentials || !('apiKey' in client.credentials)) {
        const why = client.credentials && 'oauth' in client.credentials ? ' (an app sign-in from `postwise login --web` is for the REST commands: its token is refused by /mcp)' : '';
        throw new CliFailure('NOT_LOGGED_IN', `postwise mcp takes API keys only${why}: log in with a key (postwise login), or give --api-key or POSTWISE_API_KEY`, EXIT.auth);
      }
      const { runMcpBridge } = await import('./mcp.js');
      await runMcpBridge({ baseUrl: client.baseUrl, headers: { 'x-api-key': client.credentials.apiKey }, verbose: client.trace });
    });
  const listen = program
    .command('listen')
    .description(
      'Forward the workspace\'s events, from now on, to a local URL, signed as webhook deliveries are (Standard Webhooks, with a secret ' +
        'printed at start), as `stripe listen` does: for building a receiver on your own machine (docs/events.md#testing-a-receiver-locally)',
    )
    .requiredOption('--forward-to <url>', 'where each event is POSTed, e.g. http://localhost:8080/webhooks')
    .addOption(new Option('--type <type>', 'forward only this event type (repeatable); every type unless given').argParser((value: string, previous: string[] | undefined) => [...(previous ?? []), value]))
    .option('--secret <whsec>', 'sign with this secret rather than a new one (e.g. the one your receiver already has)')
    .option('--interval <ms>', 'how often the feed is read once it is read to the end', '1000')
    .action(async (options: { forwardTo: string; type?: string[]; secret?: string; interval: string }, command: Command) => {
      const globals = command.optsWithGlobals<GlobalOptions>();
      const client = await clientOf(globals);
      const intervalMs = Number(options.interval);
      if (!Number.isInteger(intervalMs) || intervalMs < 100) throw usage(`--interval ${options.interval}: a whole number of milliseconds, 100 or more`);
      try {
        new URL(options.forwardTo);
      } catch {
        throw usage(`--forward-to ${options.forwardTo}: not an absolute URL`);
      }
      const stop = new AbortController();
      for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => stop.abort());
      const { listen: run } = await import('./listen.js');
      await run(client, { forwardTo: options.forwardTo, types: options.type ?? [], secret: options.secret, intervalMs, note, signal: stop.signal });
    });
  for (const command of [login, logout, whoami, api, mcp, listen]) completions.push({ resource: command.name(), flags: command.options.map((option) => option.long!) });
}

function buildProgram(): Command {
  const program = new Command('postwise')
    .version(packageJson.version, '-V, --version', 'print the version of this client')
    .description('The command-line client of a Postwise server: every operation as `postwise <resource> <action>`, on the same key as REST and MCP, or signed in in the browser with `postwise login --web` (docs/cli.md).')
    .option('--base-url <url>', `the server (POSTWISE_BASE_URL, or the profile's; ${DEFAULT_BASE_URL} unless given)`)
    .option('--api-key <key>', 'an API key (POSTWISE_API_KEY, or the profile\'s); prefer `postwise login`, which keeps it out of shell history')
    .option('--profile <name>', 'the profile to use (POSTWISE_PROFILE; "default" unless given)')
    .option('--json', 'print the REST body as JSON, also on a terminal')
    .option('--verbose', 'trace each request and answer on stderr (keys, tokens and signed URLs hidden)')
    .option('--retries <n>', 'how many times a 429 or a lost connection of a repeatable request is retried', '3')
    .showSuggestionAfterError()
    .exitOverride();
  const completions = addOperationCommands(program);
  addUploadsPut(program, completions);
  addAccountCommands(program, completions);
  program
    .command('commands')
    .description('Every command with its operation id, method, path and visibility (--json for scripts and completion)')
    .action(async (_options: unknown, command: Command) => {
      const list = operations.map((operation) => ({ command: Object.values(commandOf(operation)).join(' '), operationId: operation.id, method: operation.method, path: `/api/v1${operation.path}`, visibility: operation.visibility, summary: operation.summary }));
      const globals = command.optsWithGlobals<GlobalOptions>();
      await print(globals, { text: JSON.stringify(list, null, 2), json: list });
    });
  program
    .command('completion')
    .description('Print a completion script: bash (source <(postwise completion bash)), zsh, or fish')
    .argument('<shell>', 'bash, zsh or fish')
    .action((shell: string) => {
      if (shell !== 'bash' && shell !== 'zsh' && shell !== 'fish') throw usage(`${shell}: completion is made for bash, zsh and fish`);
      process.stdout.write(completionScript(shell, completions));
    });
  completions.push({ resource: 'commands', flags: ['--json'] }, { resource: 'completion', flags: ['bash', 'zsh', 'fish'] });
  // Every command answers a usage problem with exit 2 and the help hint, not commander's own exit.
  const everyCommand = (command: Command): Command[] => [command, ...command.commands.flatMap(everyCommand)];
  for (const command of everyCommand(program)) command.exitOverride().configureOutput({ outputError: (text, out) => out(text) });
  return program;
}

// A reader that stops early (`| head`) is not an error of ours.
process.stdout.on('error', (error: NodeJS.ErrnoException) => {
  if (error.code === 'EPIPE') process.exit(process.exitCode ?? 0);
  throw error;
});

try {
  await buildProgram().parseAsync(process.argv);
} catch (error) {
  if (error instanceof CommanderError) {
    // Help and version are successes; anything else commander refuses is a usage error (it printed why).
    process.exitCode = error.exitCode === 0 || error.code === 'commander.helpDisplayed' || error.code === 'commander.help' ? EXIT.ok : EXIT.usage;
  } else if (error instanceof CliFailure) {
    note(`${error.code}: ${error.message}`);
    process.exitCode = error.exitCode;
  } else {
    note(`INTERNAL: ${(error as Error).stack ?? String(error)}`);
    process.exitCode = EXIT.other;
  }
}
