import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { chmod, mkdtemp, readdir, readFile, stat, writeFile } from 'node:fs/promises';
import { createServer, request as httpRequest, type Server } from 'node:http';
import { createServer as createNetServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { operations } from '../operations/index.js';
import { definePlan, setSubscription, setWorkspacePlan } from '../src/admin/plans.js';
import { setOwnerPassword } from './support/browser.js';
import { photo } from './support/images.js';
import { call, startTestService, type TestService, type Workspace } from './support/service.js';

/**
 * The command-line client, run as a user runs it: the real binary (bin/postwise.mjs) as a child process against a
 * started server, piped, or on a pseudo-terminal made by util-linux's `script`.
 */

let service: TestService;
let ws: Workspace;
let sky: string;
let files: string;

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs `postwise ARGS` with the test's server and a config directory of its own, unless told otherwise. */
async function postwise(args: string[], options: { env?: Record<string, string | undefined>; input?: string; key?: string | null } = {}): Promise<Run> {
  const env: Record<string, string | undefined> = {
    ...process.env,
    POSTWISE_BASE_URL: service.base,
    POSTWISE_API_KEY: options.key === null ? undefined : (options.key ?? ws.apiKey),
    XDG_CONFIG_HOME: await mkdtemp(join(tmpdir(), 'postwise-cli-')),
    ...options.env,
  };
  const child = spawn(process.execPath, ['bin/postwise.mjs', ...args], { env: env as NodeJS.ProcessEnv, stdio: ['pipe', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk) => (stdout += chunk));
  child.stderr.on('data', (chunk) => (stderr += chunk));
  child.stdin.end(options.input ?? '');
  const [code] = (await once(child, 'close')) as [number];
  return { code, stdout, stderr };
}

const quoted = (word: string) => `'${word.replace(/'/g, `'\\''`)}'`;

/** The same on a pseudo-terminal (`script`): stdout and stderr arrive together, lines end in \r\n. */
async function onTerminal(args: string[], env: Record<string, string> = {}): Promise<Run> {
  const line = [process.execPath, 'bin/postwise.mjs', ...args].map(quoted).join(' ');
  const child = spawn('script', ['-qfec', line, '/dev/null'], {
    env: { ...process.env, POSTWISE_BASE_URL: service.base, POSTWISE_API_KEY: ws.apiKey, XDG_CONFIG_HOME: await mkdtemp(join(tmpdir(), 'postwise-cli-')), COLUMNS: '160', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  child.stdout.on('data', (chunk) => (stdout += chunk));
  const [code] = (await once(child, 'close')) as [number];
  // The shell `script` starts warns of a locale the machine lacks (LC_ALL=de_DE.UTF-8); the client formats with ICU's own.
  return { code, stdout: stdout.replace(/\r\n/g, '\n').replace(/^bash: warning: setlocale: .*\n/gm, ''), stderr: '' };
}

const rest = (path: string, options: { method?: string; body?: unknown; key?: string } = {}) => call(`${service.api}${path}`, { key: ws.apiKey, ...options });

/** A loopback port nothing listens on. */
async function closedPort(): Promise<number> {
  const server = createNetServer().listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as { port: number };
  server.close();
  await once(server, 'close');
  return port;
}

/** A loopback HTTP server answering with `handle`; closed after the suite. */
const servers: Server[] = [];
async function serve(handle: Parameters<typeof createServer>[1]): Promise<string> {
  const server = createServer(handle).listen(0, '127.0.0.1');
  servers.push(server);
  await once(server, 'listening');
  return `http://127.0.0.1:${(server.address() as { port: number }).port}`;
}

beforeAll(async () => {
  service = await startTestService({}, { api: true, worker: false });
  ws = await service.workspace({ plan: 'business', workspaceName: 'Command line' });
  sky = (await ws.admin('createIntegration', { platform: 'BLUESKY', name: 'Sky' })).id;
  files = await mkdtemp(join(tmpdir(), 'postwise-cli-files-'));
});

afterAll(async () => {
  for (const server of servers) server.close();
  await service?.stop();
});

describe('commands from the registry', () => {
  it('every operation is a command, named by the rule, listed by `commands --json` with its id, method, path and visibility', async () => {
    const listed = await postwise(['commands', '--json']);
    expect(listed.code, listed.stderr).toBe(0);
    const commands = JSON.parse(listed.stdout) as { command: string; operationId: string; method: string; path: string; visibility: string }[];
    expect(commands.map((command) => command.operationId).sort()).toEqual(operations.map((operation) => operation.id).sort());
    for (const operation of operations) {
      expect(commands.find((command) => command.operationId === operation.id)).toMatchObject({ method: operation.method, path: `/api/v1${operation.path}`, visibility: operation.visibility });
    }
    expect(new Set(commands.map((command) => command.command)).size).toBe(commands.length);
    const byId = Object.fromEntries(commands.map((command) => [command.operationId, command.command]));
    expect(byId).toMatchObject({
      listPosts: 'posts list',
      createPost: 'posts create',
      getPost: 'posts get',
      rescheduleSchedule: 'schedules reschedule',
      initiateUpload: 'uploads initiate',
      getTag: 'tags get',
      connectBluesky: 'integrations connect-bluesky',
      getDailyUsage: 'usage get-daily',
    });
    // Each public one answers its --help with its flags.
    const help = await postwise(['posts', 'list', '--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/--limit <value>\s+Posts per page, 1 to 100; 10 unless given\.\s+\[integer;\s+1\s+to\s+100;\s+default\s+10\]/);
    expect(help.stdout).toMatch(/--status <value>[\s\S]*one\s+of\s+DRAFT\|SCHEDULED\|PUBLISHING\|PUBLISHED\|FAILED,\s+repeatable/);
    expect(help.stdout).toContain('Operation listPosts: GET /api/v1/posts (public).');
  });

  it('completion scripts for bash, zsh and fish; bash completes resources, actions and flags', async () => {
    const bash = await postwise(['completion', 'bash']);
    expect(bash.code).toBe(0);
    const script = join(files, 'completion.bash');
    await writeFile(script, bash.stdout);
    const complete = async (words: string[]) => {
      const child = spawn('bash', ['-c', `source ${script}; COMP_WORDS=(${words.map(quoted).join(' ')}); COMP_CWORD=${words.length - 1}; _postwise; echo "\${COMPREPLY[*]}"`]);
      let out = '';
      child.stdout.on('data', (chunk) => (out += chunk));
      await once(child, 'close');
      return out.trim().split(' ');
    };
    expect(await complete(['postwise', 'sch'])).toEqual(['schedules']);
    expect(await complete(['postwise', 'schedules', 're'])).toEqual(['retry', 'reschedule']);
    expect(await complete(['postwise', 'posts', 'list', '--li'])).toEqual(['--limit']);
    for (const shell of ['zsh', 'fish']) {
      const script = await postwise(['completion', shell]);
      expect(script.code).toBe(0);
      expect(script.stdout).toContain('reschedule');
    }
    expect((await postwise(['completion', 'powershell'])).code).toBe(2);
  });
  it('installs with npm install -g as the postwise command', async () => {
    const prefix = await mkdtemp(join(tmpdir(), 'postwise-global-'));
    const install = spawn('npm', ['install', '-g', '--prefix', prefix, '--offline', '--no-audit', '--no-fund', process.cwd()], { stdio: 'ignore' });
    const [installed] = (await once(install, 'close')) as [number];
    expect(installed).toBe(0);
    const child = spawn(join(prefix, 'bin', 'postwise'), ['whoami'], { env: { ...process.env, POSTWISE_BASE_URL: service.base, POSTWISE_API_KEY: ws.apiKey, XDG_CONFIG_HOME: prefix } });
    let out = '';
    child.stdout.on('data', (chunk) => (out += chunk));
    const [code] = (await once(child, 'close')) as [number];
    expect(code).toBe(0);
    expect(JSON.parse(out)).toEqual((await rest('/users/me')).json);
  });

  it('imports no server module: only its own files, the file lock and the deadline it shares, and the client\'s libraries', async () => {
    const allowed = new Set(['commander', 'zod', 'qs', 'file-type', '@modelcontextprotocol/client', '@modelcontextprotocol/server', 'standardwebhooks', 'open', 'tsx', 'esbuild']);
    const sources = ['bin/postwise.mjs', ...(await readdir('src/cli')).filter((name) => name.endsWith('.ts')).map((name) => `src/cli/${name}`)];
    for (const source of sources) {
      const text = await readFile(source, 'utf8');
      for (const [, specifier] of text.matchAll(/(?:from|import\()\s*'([^']+)'/g)) {
        // package.json is data (its version, for --version), not a module of the server.
        // The file lock around an app sign-in's renewal and a request's deadline are shared with the server (leaves: .dependency-cruiser.mjs).
        const shared = ['../db/file-lock.js', '../process/deadline.js'];
        const local = specifier!.startsWith('./') || specifier === '../src/cli/main.ts' || specifier === '../../package.json' || shared.includes(specifier!);
        const library = allowed.has(specifier!.startsWith('@') ? specifier!.split('/').slice(0, 2).join('/') : specifier!.split('/')[0]!);
        expect(local || library || specifier!.startsWith('node:'), `${source} imports ${specifier}`).toBe(true);
      }
    }
  });
});

describe('flags', () => {
  it('are checked with the operation\'s schema before anything is sent: exit 2, naming the flag and the rule', async () => {
    // Nothing listens there: a request would exit 7.
    const env = { POSTWISE_BASE_URL: `http://127.0.0.1:${await closedPort()}` };
    const cases: [string[], RegExp][] = [
      [['posts', 'list', '--limit', '500'], /^VALIDATION_ERROR: --limit: Too big: expected number to be <=100\n$/],
      [['posts', 'list', '--limit', 'many'], /^USAGE: --limit: expected a number, got "many"\n$/],
      [['posts', 'list', '--status', 'LOST'], /^VALIDATION_ERROR: --status\[0\]: Invalid option: expected one of "DRAFT"\|/],
      [['posts', 'get', 'not-a-uuid'], /^VALIDATION_ERROR: --id: Invalid UUID\n$/],
      [['posts', 'create', '--rows', '{"content":""}', '--shared.selected-integrations', sky], /^VALIDATION_ERROR: --rows\[0\]\.content: Too small: expected string to have >=1 characters\n$/],
      [['posts', 'create', '--rows', '{"content":"x"', '--shared.selected-integrations', sky], /^USAGE: --rows: not JSON/],
      [['posts', 'create', '--data', '{"rows":[{"content":"x"}],"shared":{"selectedIntegrations":[]},"extra":1}'], /--extra: not a field of this command/],
      [['posts', 'get'], /^VALIDATION_ERROR: --id: Invalid input: expected string, received undefined\n$/],
    ];
    for (const [args, message] of cases) {
      const run = await postwise(args, { env });
      expect(run.code, `${args.join(' ')}: ${run.stderr}`).toBe(2);
      expect(run.stderr).toMatch(message);
      expect(run.stdout).toBe('');
    }
    const unknown = await postwise(['posts', 'list', '--nope'], { env });
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain("unknown option '--nope'");
  });

  it('take the body from --data as JSON, @file or stdin, with flags overriding its fields; objects by --field.sub', async () => {
    const body = { rows: [{ content: 'From --data' }], shared: { selectedIntegrations: [sky] }, postAction: 'PUBLISH_NOW' };
    const file = join(files, 'body.json');
    await writeFile(file, JSON.stringify({ ...body, rows: [{ content: 'From a file' }] }));
    const runs = [
      await postwise(['posts', 'create', '--data', JSON.stringify(body), '--post-action', 'DRAFT']),
      await postwise(['posts', 'create', '--data', `@${file}`, '--post-action', 'DRAFT']),
      await postwise(['posts', 'create', '--data', '-', '--post-action', 'DRAFT', '--rows', '{"content":"Rows from a flag"}'], { input: JSON.stringify(body) }),
      await postwise(['posts', 'create', '--rows', '{"content":"All by flags"}', '--shared.selected-integrations', sky, '--post-action', 'DRAFT']),
    ];
    const contents = [];
    for (const run of runs) {
      expect(run.code, run.stderr).toBe(0);
      const post = (await rest(`/posts/${JSON.parse(run.stdout).postId}`)).json;
      // The flag's DRAFT won over the body's PUBLISH_NOW.
      expect(post.schedules.map((schedule: { status: string }) => schedule.status)).toEqual(['DRAFT']);
      contents.push(post.content);
    }
    expect(contents).toEqual(['From --data', 'From a file', 'Rows from a flag', 'All by flags']);
  });
});

describe('output', () => {
  it('is exactly the REST body when piped, and a table or a block on a terminal (JSON there with --json)', async () => {
    const created = await postwise(['posts', 'create', '--rows', '{"content":"Shown on a terminal"}', '--shared.selected-integrations', sky, '--post-action', 'DRAFT']);
    const postId = JSON.parse(created.stdout).postId as string;
    const piped = await postwise(['posts', 'get', postId]);
    expect(piped.code).toBe(0);
    expect(piped.stdout).toBe(`${(await rest(`/posts/${postId}`)).text}\n`);

    // A command without a reading of its own (src/cli/render.ts): the generic block and table.
    const block = await onTerminal(['users', 'get']);
    expect(block.code).toBe(0);
    expect(block.stdout).toMatch(new RegExp(`^id: +${ws.userId}$`, 'm'));
    const tags = await onTerminal(['tags', 'list', '--limit', '5']);
    expect(tags.code, tags.stdout).toBe(0);
    expect(tags.stdout).toMatch(/^(ID +NAME|\(none\))/m);
    expect(tags.stdout).toMatch(/^nextCursor: /m);
    const json = await onTerminal(['posts', 'get', postId, '--json']);
    expect(JSON.parse(json.stdout)).toEqual((await rest(`/posts/${postId}`)).json);
  });

  it('posts get, list and create read as people read them on a terminal: channel, status, time in the workspace zone, link, failure', async () => {
    const linkedin = (await ws.admin('createIntegration', { platform: 'LINKEDIN', name: 'In' })).id;
    const content = `A post to read ${Date.now()}: ${'and a long tail of words '.repeat(8)}\u001b]0;not a title\u0007`;
    const made = await rest('/posts', { method: 'POST', body: { rows: [{ content, scheduledAt: '2035-12-05T08:00:00Z' }], shared: { selectedIntegrations: [sky, linkedin] }, postAction: 'SCHEDULED_TIME' } });
    expect(made.status, made.text).toBe(201);
    const postId = made.json.postId as string;
    // As the worker leaves them (this service runs none): one published with its link, one failed with its reason.
    const sql = service.service.core.db;
    await sql`UPDATE schedules SET status = 'PUBLISHED', published_at = '2035-12-05T08:01:00Z', release_url = 'https://bsky.app/profile/sky.test/post/3k'
      WHERE post_id = ${postId} AND integration_id = ${sky}`;
    await sql`UPDATE schedules SET status = 'FAILED', failure_reason = 'LinkedIn refused the token' WHERE post_id = ${postId} AND integration_id = ${linkedin}`;
    const post = (await rest(`/posts/${postId}`)).json as { schedules: { id: string; integrationId: string }[] };
    const failedId = post.schedules.find((schedule) => schedule.integrationId === linkedin)!.id;

    // With a key: UTC, said so (GET /workspace is internal: not even sent), whatever the machine's TZ; the reader's locale.
    const withKey = await onTerminal(['posts', 'get', postId, '--verbose'], { TZ: 'America/New_York', LC_ALL: 'de_DE.UTF-8' });
    expect(withKey.code, withKey.stdout).toBe(0);
    expect(withKey.stdout).toMatch(new RegExp(`^Post ${postId}$`, 'm'));
    expect(withKey.stdout).toMatch(/^Times: +UTC \(an API key cannot read the workspace's time zone; a signed-in session can: postwise login --email\)$/m);
    expect(withKey.stdout).toMatch(/^ {2}Sky \(Bluesky\) +Published +Mi\., 5\. Dez\. 2035, 8:01$/m);
    expect(withKey.stdout).toMatch(/^ {6}link: +https:\/\/bsky\.app\/profile\/sky\.test\/post\/3k$/m);
    expect(withKey.stdout).toMatch(/^ {2}In \(LinkedIn\) +Failed +Mi\., 5\. Dez\. 2035, 8:00$/m);
    expect(withKey.stdout).toMatch(/^ {6}failure: +LinkedIn refused the token$/m);
    expect(withKey.stdout).toMatch(new RegExp(`^ {6}retry: +postwise schedules retry ${failedId}$`, 'm'));
    expect(withKey.stdout).not.toMatch(/GET \/api\/v1\/workspace/);
    expect(withKey.stdout).not.toMatch(/[{}]|organizationId|userId/);
    // The text's control characters cannot steer the terminal.
    expect(withKey.stdout).toContain('words \uFFFD]0;not a title\uFFFD');
    // C or POSIX (a container's usual locale): en-US.
    const plain = await onTerminal(['posts', 'get', postId], { LC_ALL: 'C.UTF-8' });
    expect(plain.stdout).toMatch(/^ {2}In \(LinkedIn\) +Failed +Wed, Dec 5, 2035, 8:00 AM$/m);
    // Piped and --json: the REST body, unchanged.
    expect((await postwise(['posts', 'get', postId])).stdout).toBe(`${(await rest(`/posts/${postId}`)).text}\n`);
    expect(JSON.parse((await onTerminal(['posts', 'get', postId, '--json'])).stdout)).toEqual((await rest(`/posts/${postId}`)).json);

    // The list: text trimmed to the terminal's width, the channels, the statuses and the first time; no ids but the post's.
    const search = content.slice(0, 30);
    const list = await onTerminal(['posts', 'list', '--search', search], { LC_ALL: 'en_GB.UTF-8', COLUMNS: '150' });
    expect(list.code, list.stdout).toBe(0);
    const lines = list.stdout.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^ID +TEXT +CHANNELS +STATUS +TIME \(UTC\)$/);
    expect(lines[1]).toMatch(new RegExp(`^${postId}  A post to read \\d+: .*… +Sky \\(Bluesky\\), In \\(LinkedIn\\) +1 published, 1 failed +Wed, 5 Dec 2035, 8:00$`));
    for (const line of lines) expect([...line].length).toBeLessThanOrEqual(150);
    expect(list.stdout).toMatch(/^Page 1 of 1, 1 post in all$/m);
    expect(list.stdout).toMatch(/^Times in UTC: an API key cannot read the workspace's time zone/m);
    expect(list.stdout).not.toContain(ws.workspaceId);
    expect(list.stdout).not.toContain(ws.userId);
    const piped = await postwise(['posts', 'list', '--search', search]);
    expect(JSON.parse(piped.stdout)).toEqual((await rest(`/posts?search=${encodeURIComponent(search)}`)).json);

    // Signed in (a dashboard session): the workspace's own zone, from GET /workspace, named.
    const { email, password } = await setOwnerPassword(service, ws);
    const home = await mkdtemp(join(tmpdir(), 'postwise-home-'));
    expect((await postwise(['login', '--email', email], { env: { XDG_CONFIG_HOME: home }, key: null, input: `${password}\n` })).code).toBe(0);
    await ws.admin('updateWorkspaceSettings', { timeZone: 'Europe/Paris' });
    try {
      const session = { XDG_CONFIG_HOME: home, POSTWISE_API_KEY: '' };
      const paris = await onTerminal(['posts', 'get', postId], { ...session, TZ: 'Asia/Tokyo', LC_ALL: 'C.UTF-8' });
      expect(paris.code, paris.stdout).toBe(0);
      expect(paris.stdout).toMatch(/^Times: +Europe\/Paris \(the workspace's time zone\)$/m);
      expect(paris.stdout).toMatch(/^ {2}Sky \(Bluesky\) +Published +Wed, Dec 5, 2035, 9:01 AM$/m);
      expect(paris.stdout).toMatch(/^ {2}In \(LinkedIn\) +Failed +Wed, Dec 5, 2035, 9:00 AM$/m);
      const narrow = await onTerminal(['posts', 'list', '--search', search], { ...session, LC_ALL: 'fr_FR.UTF-8', COLUMNS: '120' });
      expect(narrow.stdout).toMatch(/^ID +TEXT +CHANNELS +STATUS +TIME \(Europe\/Paris\)$/m);
      expect(narrow.stdout).toMatch(new RegExp(`^${postId}  A post to read \\d+… +Sky \\(Bluesky… +1 published, 1 failed +mer\\. 5 déc\\. 2035, 9:00$`, 'm'));
      expect(narrow.stdout).not.toMatch(/^Times in/m);
      for (const line of narrow.stdout.trimEnd().split('\n')) expect([...line].length).toBeLessThanOrEqual(120);

      // A create says which slot each schedule took, read back from the posts it made; a draft, that it was saved.
      const scheduled = await onTerminal(
        ['posts', 'create', '--rows', JSON.stringify({ content: 'Booked for December', scheduledAt: '2035-12-06T08:30:00Z' }), '--shared.selected-integrations', sky, '--shared.selected-integrations', linkedin, '--post-action', 'SCHEDULED_TIME'],
        { ...session, LC_ALL: 'C.UTF-8' },
      );
      expect(scheduled.code, scheduled.stdout).toBe(0);
      expect(scheduled.stdout).toMatch(/^Post [0-9a-f-]{36}: Booked for December$/m);
      expect(scheduled.stdout).toMatch(/^ {2}Scheduled on Sky \(Bluesky\) for Thu, Dec 6, 2035, 9:30 AM$/m);
      expect(scheduled.stdout).toMatch(/^ {2}Scheduled on In \(LinkedIn\) for Thu, Dec 6, 2035, 9:30 AM$/m);
      expect(scheduled.stdout).toMatch(/^Times in Europe\/Paris \(the workspace's time zone\)\.$/m);
      expect(scheduled.stdout).toMatch(/^See a post: postwise posts get [0-9a-f-]{36}$/m);
    } finally {
      await ws.admin('updateWorkspaceSettings', { timeZone: 'UTC' });
    }
    // With a key again: the same slot in UTC, said so.
    const withKeyCreate = await onTerminal(['posts', 'create', '--rows', JSON.stringify({ content: 'Booked in UTC', scheduledAt: '2035-12-06T08:30:00Z' }), '--shared.selected-integrations', sky, '--post-action', 'SCHEDULED_TIME'], { LC_ALL: 'C.UTF-8' });
    expect(withKeyCreate.stdout).toMatch(/^ {2}Scheduled on Sky \(Bluesky\) for Thu, Dec 6, 2035, 8:30 AM$/m);
    expect(withKeyCreate.stdout).toMatch(/^Times in UTC \(an API key cannot read the workspace's time zone; a signed-in session can: postwise login --email\)\.$/m);
    const draft = await onTerminal(['posts', 'create', '--rows', '{"content":"Just an idea"}', '--shared.selected-integrations', sky, '--post-action', 'DRAFT']);
    expect(draft.code, draft.stdout).toBe(0);
    expect(draft.stdout).toMatch(/^ {2}Saved a draft for Sky \(Bluesky\), not scheduled$/m);
    const pipedCreate = await postwise(['posts', 'create', '--rows', '{"content":"Piped"}', '--shared.selected-integrations', sky, '--post-action', 'DRAFT']);
    expect(Object.keys(JSON.parse(pipedCreate.stdout)).sort()).toEqual(['approvalStatus', 'canSchedule', 'message', 'postId', 'postIds', 'scheduleCount']);
  });

  it('a reading that cannot be made falls back to the block: the call itself succeeded', async () => {
    // A server that makes the post but refuses to show it (as a rate limit or an outage between the two calls would).
    const postId = '00000000-0000-4000-8000-00000000000a';
    const base = await serve((req, res) => {
      if (req.method === 'POST') return void res.writeHead(201, { 'content-type': 'application/json' }).end(JSON.stringify({ postId, postIds: [postId], message: '1 post with 1 schedule saved as drafts', scheduleCount: 1, approvalStatus: null, canSchedule: true }));
      res.writeHead(500, { 'content-type': 'application/json' }).end('{"code":"INTERNAL","message":"Something broke"}');
    });
    const run = await onTerminal(['posts', 'create', '--rows', '{"content":"Made, not shown"}', '--shared.selected-integrations', sky, '--post-action', 'DRAFT', '--retries', '0'], { POSTWISE_BASE_URL: base });
    expect(run.code, run.stdout).toBe(0);
    expect(run.stdout).toMatch(new RegExp(`^postId: +${postId}$`, 'm'));
    expect(run.stdout).toMatch(/^message: +1 post with 1 schedule saved as drafts$/m);
  });

  it('the readings of their own are keyed by operations of the registry', async () => {
    const { renderers } = await import('../src/cli/render.js');
    const ids = new Set(operations.map((operation) => operation.id));
    for (const id of Object.keys(renderers)) expect(ids.has(id), id).toBe(true);
  });

  it('--all walks every page of each pagination shape, one item per line, none lost or repeated', async () => {
    const other = await service.workspace({ plan: 'business', workspaceName: 'Paging' });
    const channel = (await other.admin('createIntegration', { platform: 'LINKEDIN', name: 'In' })).id;
    const start = Date.now() + 86_400_000;
    const rows = Array.from({ length: 23 }, (_, index) => ({ content: `Paged ${index}`, scheduledAt: new Date(start + index * 3_600_000).toISOString() }));
    const made = await call(`${service.api}/posts`, { method: 'POST', key: other.apiKey, body: { rows, shared: { selectedIntegrations: [channel] }, postAction: 'SCHEDULED_TIME' } });
    expect(made.status, made.text).toBe(201);
    for (let index = 0; index < 12; index++) await other.admin('createTag', { name: `Tag ${String(index).padStart(2, '0')}` });
    const lines = (run: Run) => {
      expect(run.code, run.stderr).toBe(0);
      return run.stdout.trim().split('\n').map((line) => JSON.parse(line) as { id: string });
    };
    // Page and limit (GET /posts).
    const posts = lines(await postwise(['posts', 'list', '--limit', '10', '--all'], { key: other.apiKey }));
    expect(posts.map((post) => post.id).sort()).toEqual([...(made.json.postIds as string[])].sort());
    // Keyset (GET /schedules), forward from the start.
    const schedules = lines(await postwise(['schedules', 'list', '--limit', '10', '--start-date', new Date(start - 60_000).toISOString(), '--all'], { key: other.apiKey }));
    expect(schedules).toHaveLength(23);
    expect(new Set(schedules.map((schedule) => schedule.id)).size).toBe(23);
    expect(schedules.map((schedule) => (schedule as unknown as { scheduledContent: string }).scheduledContent)).toEqual(rows.map((row) => row.content));
    // Items and nextCursor (GET /tags).
    const tags = lines(await postwise(['tags', 'list', '--limit', '5', '--all'], { key: other.apiKey }));
    expect(tags.map((tag) => (tag as unknown as { name: string }).name).sort()).toEqual(Array.from({ length: 12 }, (_, index) => `Tag ${String(index).padStart(2, '0')}`));
  });
});

describe('exit codes', () => {
  it('0, 3, 4, 5, 6, 7 and 1 as documented, with CODE: message on stderr', async () => {
    expect((await postwise(['users', 'get'])).code).toBe(0);
    const missing = await postwise(['posts', 'get', '00000000-0000-4000-8000-000000000000']);
    expect([missing.code, missing.stderr]).toEqual([3, `NOT_FOUND: ${(await rest('/posts/00000000-0000-4000-8000-000000000000')).json.message}\n`]);
    // An internal command with a key: the client says what it needs (the server would answer the key's call 404).
    const internal = await postwise(['members', 'list']);
    expect([internal.code, internal.stderr]).toEqual([
      4,
      'NEEDS_SESSION: postwise members list needs a signed-in session: postwise login --email EMAIL (an API key reaches only the public commands)\n',
    ]);
    expect((await rest('/members')).status).toBe(404);
    // --help marks them, and --version says which client this is.
    expect((await postwise(['posts', '--help'])).stdout).toContain('duplicate*, delete, approve*, reject* (* needs\na signed-in session)');
    expect((await postwise(['--version'])).stdout).toBe(`${JSON.parse(await readFile('package.json', 'utf8')).version}\n`);
    const wrongKey = await postwise(['posts', 'list'], { key: 'pw_wrong_key' });
    expect(wrongKey.code).toBe(4);
    expect(wrongKey.stderr).toMatch(/^UNAUTHORIZED: /);
    const noKey = await postwise(['posts', 'list'], { key: null });
    expect([noKey.code, noKey.stderr]).toEqual([4, 'NOT_LOGGED_IN: No credentials for profile "default": run `postwise login` (or `postwise login --web`), or give --api-key or POSTWISE_API_KEY\n']);

    const draft = JSON.parse((await postwise(['posts', 'create', '--rows', '{"content":"A draft"}', '--shared.selected-integrations', sky, '--post-action', 'DRAFT'])).stdout);
    const schedule = (await rest(`/posts/${draft.postId}`)).json.schedules[0].id as string;
    const conflict = await postwise(['schedules', 'retry', schedule]);
    expect(conflict.code).toBe(6);
    expect(conflict.stderr).toMatch(/^INVALID_STATE: /);

    await setSubscription(service.service.core.db, ws.workspaceId, 'none');
    try {
      const unpaid = await postwise(['posts', 'create', '--rows', '{"content":"Needs a plan"}', '--shared.selected-integrations', sky, '--post-action', 'PUBLISH_NOW']);
      expect(unpaid.code).toBe(5);
      expect(unpaid.stderr).toMatch(/^PAYMENT_REQUIRED: /);
    } finally {
      await setSubscription(service.service.core.db, ws.workspaceId, 'active');
    }
    const quota = await service.workspace({ plan: 'business', workspaceName: 'Quota' });
    await definePlan(service.service.core.db, { name: 'cli-no-posts', rateLimitPerMinute: 2, storageBytes: 1024 ** 2, monthlyPostQuotas: { BLUESKY: 0, LINKEDIN: 0 } });
    await setWorkspacePlan(service.service.core.db, quota.workspaceId, 'cli-no-posts');
    const quotaChannel = (await quota.admin('createIntegration', { platform: 'BLUESKY', name: 'Q' })).id;
    const spent = await postwise(['posts', 'create', '--rows', '{"content":"Over quota"}', '--shared.selected-integrations', quotaChannel, '--post-action', 'PUBLISH_NOW'], { key: quota.apiKey });
    expect(spent.code).toBe(5);
    expect(spent.stderr).toMatch(/^POST_QUOTA_EXCEEDED: /);
    // Two calls a minute: the third is refused, and with no retries left that is exit 5 at once.
    await postwise(['users', 'get'], { key: quota.apiKey });
    const limited = await postwise(['users', 'get', '--retries', '0'], { key: quota.apiKey });
    expect(limited.code).toBe(5);
    expect(limited.stderr).toMatch(/^RATE_LIMITED: /);

    const unreachable = await postwise(['posts', 'list'], { env: { POSTWISE_BASE_URL: `http://127.0.0.1:${await closedPort()}` } });
    expect(unreachable.code).toBe(7);
    expect(unreachable.stderr).toMatch(/^UNREACHABLE: Could not reach http:\/\/127\.0\.0\.1:\d+ \(ECONNREFUSED\)/);
    const broken = await serve((_req, res) => res.writeHead(500, { 'content-type': 'application/json' }).end('{"code":"INTERNAL","message":"Something broke"}'));
    const failed = await postwise(['posts', 'list'], { env: { POSTWISE_BASE_URL: broken } });
    expect([failed.code, failed.stderr]).toEqual([1, 'INTERNAL: Something broke\n']);
  });

  it('a 429 is retried after its Retry-After, a bounded number of times', async () => {
    let calls = 0;
    const base = await serve((_req, res) => {
      calls++;
      if (calls === 1) return void res.writeHead(429, { 'retry-after': '1', 'content-type': 'application/json' }).end('{"code":"RATE_LIMITED","message":"Slow down"}');
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"id":"me"}');
    });
    const started = Date.now();
    const retried = await postwise(['users', 'get'], { env: { POSTWISE_BASE_URL: base } });
    expect([retried.code, retried.stdout, calls]).toEqual([0, '{"id":"me"}\n', 2]);
    expect(Date.now() - started).toBeGreaterThanOrEqual(1000);

    let refused = 0;
    const always = await serve((_req, res) => {
      refused++;
      res.writeHead(429, { 'retry-after': '0', 'content-type': 'application/json' }).end('{"code":"RATE_LIMITED","message":"Slow down"}');
    });
    const exhausted = await postwise(['users', 'get', '--retries', '2'], { env: { POSTWISE_BASE_URL: always } });
    expect([exhausted.code, exhausted.stderr, refused]).toEqual([5, 'RATE_LIMITED: Slow down\n', 3]);
  });

  it('a create whose answer was lost is sent again under the same Idempotency-Key, and makes one post', async () => {
    // A proxy that carries the first POST /posts to the server, then cuts the client's connection unanswered.
    const keys: string[] = [];
    const proxy = await serve((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        if (req.method === 'POST') keys.push(String(req.headers['idempotency-key']));
        const upstream = httpRequest(`${service.base}${req.url}`, { method: req.method, headers: req.headers }, (answer) => {
          const body: Buffer[] = [];
          answer.on('data', (chunk: Buffer) => body.push(chunk));
          answer.on('end', () => {
            if (req.method === 'POST' && keys.length === 1) return void req.socket.destroy();
            res.writeHead(answer.statusCode!, answer.headers).end(Buffer.concat(body));
          });
        });
        upstream.end(Buffer.concat(chunks));
      });
    });
    const content = `Sent twice, made once ${Date.now()}`;
    const run = await postwise(['posts', 'create', '--rows', JSON.stringify({ content }), '--shared.selected-integrations', sky, '--post-action', 'DRAFT'], { env: { POSTWISE_BASE_URL: proxy } });
    expect(run.code, run.stderr).toBe(0);
    expect(keys).toHaveLength(2);
    expect(keys[0]).toBe(keys[1]);
    const found = (await rest(`/posts?search=${encodeURIComponent(content)}`)).json;
    expect(found.items.map((post: { id: string }) => post.id)).toEqual([JSON.parse(run.stdout).postId]);
  });
});

describe('profiles and secrets', () => {
  it('login checks the key and keeps it in a 0600 file; a file others can read is refused; logout forgets it', async () => {
    const home = await mkdtemp(join(tmpdir(), 'postwise-home-'));
    const env = { XDG_CONFIG_HOME: home };
    const wrong = await postwise(['login'], { env, key: null, input: 'pw_not_a_key\n' });
    expect(wrong.code).toBe(4);
    await expect(stat(join(home, 'postwise', 'config.json'))).rejects.toThrow();

    const login = await postwise(['login', '--profile', 'work'], { env, key: null, input: `${ws.apiKey}\n` });
    expect(login.code, login.stderr).toBe(0);
    expect(login.stderr).toContain('as profile "work", with an API key');
    const file = join(home, 'postwise', 'config.json');
    expect((await stat(file)).mode & 0o777).toBe(0o600);
    expect((await stat(join(home, 'postwise'))).mode & 0o777).toBe(0o700);
    expect(JSON.parse(await readFile(file, 'utf8')).profiles.work).toMatchObject({ baseUrl: service.base, apiKey: ws.apiKey });

    const me = await postwise(['whoami', '--profile', 'work'], { env, key: null });
    expect(me.code).toBe(0);
    expect(JSON.parse(me.stdout)).toEqual((await rest('/users/me')).json);
    const byEnvironment = await postwise(['posts', 'list'], { env: { ...env, POSTWISE_PROFILE: 'work' }, key: null });
    expect(byEnvironment.code).toBe(0);
    expect((await postwise(['posts', 'list'], { env, key: null })).code).toBe(4);

    await chmod(file, 0o644);
    const unsafe = await postwise(['whoami', '--profile', 'work'], { env, key: null });
    expect(unsafe.code).toBe(4);
    expect(unsafe.stderr).toBe(`CONFIG_UNSAFE: ${file} can be read by other users (mode 644) and holds credentials: run \`chmod 600 ${file}\`, then log in again if it may have been read\n`);
    await chmod(file, 0o600);

    expect((await postwise(['logout', '--profile', 'work'], { env, key: null })).code).toBe(0);
    expect((await postwise(['whoami', '--profile', 'work'], { env, key: null })).code).toBe(4);
  });

  it('login --email starts a dashboard session that reaches internal commands; logout ends it on the server', async () => {
    const owner = await service.workspace({ plan: 'business', workspaceName: 'Signed in' });
    const { email, password } = await setOwnerPassword(service, owner);
    const env = { XDG_CONFIG_HOME: await mkdtemp(join(tmpdir(), 'postwise-home-')) };
    const login = await postwise(['login', '--email', email], { env, key: null, input: `${password}\n` });
    expect(login.code, login.stderr).toBe(0);
    expect(login.stderr).toContain('with a dashboard session');
    const members = await postwise(['members', 'list'], { env, key: null });
    expect(members.code, members.stderr).toBe(0);
    expect(JSON.parse(members.stdout).items.map((member: { user: { email: string } }) => member.user.email)).toContain(email);
    // A state-changing internal call carries the session's csrf token.
    const tag = await postwise(['tags', 'create', '--name', 'From the terminal'], { env, key: null });
    expect(tag.code, tag.stderr).toBe(0);
    // The key to hand an agent, and the queue its posts would wait in (docs/publishing.md "Approval before publishing").
    const agentKey = await postwise(['api-keys', 'create', '--name', 'Agent', '--posts-need-approval'], { env, key: null });
    expect(agentKey.code, agentKey.stderr).toBe(0);
    expect(JSON.parse(agentKey.stdout)).toMatchObject({ name: 'Agent', postsNeedApproval: true });
    const queue = await postwise(['approvals', 'list'], { env, key: null });
    expect([queue.code, JSON.parse(queue.stdout)]).toEqual([0, { items: [], nextCursor: null }]);
    const token = JSON.parse(await readFile(join(env.XDG_CONFIG_HOME, 'postwise', 'config.json'), 'utf8')).profiles.default.session.token as string;
    const traced = await postwise(['tags', 'list', '--verbose'], { env, key: null });
    expect(traced.code).toBe(0);
    expect(`${traced.stdout}${traced.stderr}`).not.toContain(token);
    expect(traced.stderr).toContain('cookie: (hidden)');
    expect((await postwise(['logout'], { env, key: null })).code).toBe(0);
    const ended = await fetch(`${service.base}/auth/session`, { headers: { cookie: `postwise_session=${token}` } });
    expect(ended.status).toBe(401);
    const wrong = await postwise(['login', '--email', email], { env, key: null, input: 'not the password\n' });
    expect([wrong.code, wrong.stderr]).toEqual([4, 'INVALID_CREDENTIALS: The email or password is not right\n']);
  });

  it('never prints the key or the session token, not even in --verbose traces', async () => {
    const runs = [
      await postwise(['posts', 'list', '--verbose']),
      await postwise(['posts', 'get', '00000000-0000-4000-8000-000000000000', '--verbose']),
      await postwise(['api', 'GET', '/users/me', '--verbose']),
      await onTerminal(['users', 'get', '--verbose']),
    ];
    for (const run of runs) {
      expect(`${run.stdout}${run.stderr}`).not.toContain(ws.apiKey);
      expect(`${run.stdout}${run.stderr}`).toContain('x-api-key: (hidden)');
    }
    expect(runs[0]!.stderr).toMatch(/^> GET http:\/\/127\.0\.0\.1:\d+\/api\/v1\/posts$/m);
    expect(runs[0]!.stderr).toMatch(/^< 200 OK$/m);
  });
});

describe('uploads and raw calls', () => {
  it('uploads put: initiate, signed PUT and complete, with a progress bar on a terminal; posts create --media attaches in one step', async () => {
    const image = join(files, 'harbour.jpg');
    await writeFile(image, await photo(1600, 1200));
    const shown = await onTerminal(['uploads', 'put', image, '--alt', 'A harbour']);
    expect(shown.code, shown.stdout).toBe(0);
    expect(shown.stdout).toContain('harbour.jpg [####################] 100%');
    expect(shown.stdout).toMatch(/^mediaId: +[0-9a-f-]{36}$/m);
    expect(shown.stdout).toMatch(/^altText: +A harbour$/m);

    const piped = await postwise(['uploads', 'put', image, image]);
    expect(piped.code, piped.stderr).toBe(0);
    const results = piped.stdout.trim().split('\n').map((line) => JSON.parse(line));
    expect(results.map((result) => [result.file, result.status])).toEqual([
      [image, 'completed'],
      [image, 'completed'],
    ]);

    const created = await postwise(['posts', 'create', '--rows', '{"content":"With a picture"}', '--shared.selected-integrations', sky, '--post-action', 'DRAFT', '--media', image, '--alt', 'Boats at dawn']);
    expect(created.code, created.stderr).toBe(0);
    const post = (await rest(`/posts/${JSON.parse(created.stdout).postId}`)).json;
    expect(post.attachments.map((attachment: { altText: string; media: { size: number } }) => [attachment.altText, attachment.media.size])).toEqual([['Boats at dawn', (await stat(image)).size]]);
  });

  it('api METHOD PATH sends any request with the credentials, and answers with the same exit codes', async () => {
    const listed = await postwise(['api', 'GET', '/posts?limit=2']);
    expect(listed.code).toBe(0);
    expect(JSON.parse(listed.stdout).pageInfo.limit).toBe(2);
    const tag = await postwise(['api', 'GET', '/tags/00000000-0000-4000-8000-000000000000']);
    expect(tag.code).toBe(3);
    const bad = await postwise(['api', 'FETCH', '/posts']);
    expect(bad.code).toBe(2);
  });
});

describe('listen', () => {
  it('forwards the workspace\'s events from now on to a local URL, signed with the secret it prints, until Ctrl-C', async () => {
    const { Webhook } = await import('standardwebhooks');
    const got: { headers: Record<string, string>; body: string }[] = [];
    const receiver = createServer((request, response) => {
      let body = '';
      request.on('data', (chunk) => (body += chunk));
      request.on('end', () => {
        got.push({ headers: request.headers as Record<string, string>, body });
        response.end('ok');
      });
    });
    servers.push(receiver);
    receiver.listen(0, '127.0.0.1');
    await once(receiver, 'listening');
    const url = `http://127.0.0.1:${(receiver.address() as { port: number }).port}/hook`;
    const draft = (content: string) =>
      call(`${service.api}/posts`, { method: 'POST', key: ws.apiKey, body: { rows: [{ content }], shared: { selectedIntegrations: [sky] }, postAction: 'DRAFT' } });
    // Before the listener starts: not forwarded.
    expect((await draft('Before listening')).status).toBe(201);

    const child = spawn(process.execPath, ['bin/postwise.mjs', 'listen', '--forward-to', url, '--type', 'post.created', '--interval', '200'], {
      env: { ...process.env, POSTWISE_BASE_URL: service.base, POSTWISE_API_KEY: ws.apiKey, XDG_CONFIG_HOME: await mkdtemp(join(tmpdir(), 'postwise-cli-')) },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (chunk) => (stderr += chunk));
    for (const since = Date.now(); !/secret for this run is (whsec_\S+)/.test(stderr) && Date.now() - since < 15_000; ) await new Promise((resolve) => setTimeout(resolve, 25));
    const secret = /secret for this run is (whsec_\S+)/.exec(stderr)![1]!;

    const created = await draft('While listening');
    expect(created.status).toBe(201);
    await call(`${service.api}/posts/${created.json.postId}`, { method: 'PATCH', key: ws.apiKey, body: { content: 'Not forwarded: an update' } });
    // The update is not forwarded: shown by an event after it that is (the listener forwards in the feed's order), not
    // by a moment of silence.
    const after = await draft('After the update');
    expect(after.status).toBe(201);
    for (const since = Date.now(); got.length < 2 && Date.now() - since < 15_000; ) await new Promise((resolve) => setTimeout(resolve, 25));
    expect(got.map((request) => (JSON.parse(request.body) as { type: string; data: { id: string } }).data.id)).toEqual([created.json.postId, after.json.postId]);
    expect(got.map((request) => (JSON.parse(request.body) as { type: string }).type)).toEqual(['post.created', 'post.created']);
    const event = new Webhook(secret).verify(got[0]!.body, got[0]!.headers) as { id: string; type: string; data: { id: string; content: string } };
    expect(event).toMatchObject({ type: 'post.created', data: { id: created.json.postId, content: 'While listening' } });
    expect(got[0]!.headers['webhook-id']).toBe(event.id);
    expect(stderr).toContain(`post.created  ${event.id}  → 200`);

    child.kill('SIGINT');
    const [code] = (await once(child, 'close')) as [number];
    expect(code).toBe(0);
  });
});
