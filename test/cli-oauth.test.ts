import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, readdir, readFile, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SCOPES } from '../src/oauth/scopes.js';
import { launchBrowser, newPage, setOwnerPassword, signIn } from './support/browser.js';
import { call, startTestService, type TestService, type Workspace } from './support/service.js';

/**
 * `postwise login --web`: the real binary signs in through the dashboard's consent page, driven in a real browser, then
 * sends the app sign-in's bearer token with every command, renewing it as it lapses (access tokens of 2 s here) under
 * the config file's lock, and says to sign in again once the connection is gone.
 */

let service: TestService;
let ws: Workspace;
let browser: Browser;
let owner: { email: string; password: string };
/** A Bluesky channel of the workspace, for the posts made. */
let sky: string;
/** The config folder (XDG_CONFIG_HOME) the sign-in of the first test is kept in, and the later tests use. */
let home: string;

const OWNER_NAME = 'Ada Lovelace';

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

beforeAll(async () => {
  [service, browser] = await Promise.all([startTestService({ oauthAccessTokenSeconds: 2 }), launchBrowser()]);
  ws = await service.workspace({ plan: 'business', workspaceName: 'Terminal', ownerName: OWNER_NAME });
  owner = await setOwnerPassword(service, ws);
  sky = (await ws.admin('createIntegration', { platform: 'BLUESKY', name: 'Sky' })).id;
  home = await mkdtemp(join(tmpdir(), 'postwise-oauth-home-'));
});

afterAll(async () => {
  await browser?.close();
  await service?.stop();
});

const baseEnv = (env: Record<string, string | undefined>) => ({ ...process.env, POSTWISE_BASE_URL: service.base, POSTWISE_API_KEY: undefined, XDG_CONFIG_HOME: home, ...env });

/** `postwise ARGS`, piped, with the sign-in's config folder and no key. */
async function postwise(args: string[], env: Record<string, string | undefined> = {}): Promise<Run> {
  const child = spawn(process.execPath, ['bin/postwise.mjs', ...args], { env: baseEnv(env) as NodeJS.ProcessEnv, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk) => (stdout += chunk));
  child.stderr.on('data', (chunk) => (stderr += chunk));
  const [code] = (await once(child, 'close')) as [number];
  return { code, stdout, stderr };
}

const quoted = (word: string) => `'${word.replace(/'/g, `'\\''`)}'`;

/**
 * `postwise ARGS` on a pseudo-terminal made by util-linux's `script` (stdout and stderr together, as a person sees
 * them), read while it runs: `waitFor` answers the first match of what it printed so far.
 */
function onTerminal(args: string[], env: Record<string, string | undefined> = {}) {
  const line = [process.execPath, 'bin/postwise.mjs', ...args].map(quoted).join(' ');
  const child = spawn('script', ['-qfec', line, '/dev/null'], { env: baseEnv({ COLUMNS: '160', ...env }) as NodeJS.ProcessEnv, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.on('data', (chunk) => (output += String(chunk).replace(/\r\n/g, '\n')));
  const done = once(child, 'close').then(([code]) => ({ code: code as number, output }));
  return {
    done,
    output: () => output,
    async waitFor(pattern: RegExp, timeoutMs = 20_000): Promise<RegExpMatchArray> {
      for (const started = Date.now(); Date.now() - started < timeoutMs; await new Promise((resolve) => setTimeout(resolve, 25))) {
        const match = pattern.exec(output);
        if (match) return match;
      }
      throw new Error(`postwise printed no ${pattern} within ${timeoutMs} ms:\n${output}`);
    },
  };
}

const configFile = () => join(home, 'postwise', 'config.json');
const storedSignIn = async () =>
  JSON.parse(await readFile(configFile(), 'utf8')).profiles.default.oauth as { issuer: string; clientId: string; accessToken: string; refreshToken: string; expiresAt: string };

/** Until the stored access token has lapsed (2 s after it was issued). */
async function lapse() {
  const { expiresAt } = await storedSignIn();
  await new Promise((resolve) => setTimeout(resolve, Math.max(0, Date.parse(expiresAt) - Date.now()) + 500));
}

/** The command line's connections to the workspace, as the dashboard lists them. */
const connections = () => service.service.core.db<{ id: string }[]>`SELECT id FROM oauth_connections WHERE organization_id = ${ws.workspaceId} AND client_id = 'postwise-cli'`;

/** A page of the owner's, signed in to the dashboard. */
async function ownersPage(): Promise<Page> {
  const page = await newPage(browser, { baseURL: service.base });
  await signIn(page, service.base, owner);
  return page;
}

/** `login --web --no-browser` on a terminal, with the consent page opened in the browser at the URL it printed. */
async function startLogin(args: string[] = []) {
  const login = onTerminal(['login', '--web', '--no-browser', ...args]);
  const [, url] = await login.waitFor(/Open this page to sign in: (\S+)/);
  const page = await ownersPage();
  await page.goto(url!);
  await page.getByRole('heading', { name: /Connect .* to/ }).waitFor();
  return { login, page, url: new URL(url!) };
}

describe('postwise login --web', () => {
  it('signs in through the consent page: the terminal says who, the 0600 config file alone holds the tokens', async () => {
    const { login, page, url } = await startLogin();
    // The command line's own client, asking for the REST API, every scope, with PKCE and a state of its own.
    expect(url.searchParams.get('client_id')).toBe('postwise-cli');
    expect(url.searchParams.get('resource')).toBe(service.api);
    expect(url.searchParams.get('code_challenge_method')).toBe('S256');
    expect(url.searchParams.get('state')).toMatch(/^[\w-]{32}$/);
    expect(url.searchParams.get('redirect_uri')).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/callback$/);
    expect(await page.getByRole('heading', { name: /Connect .* to/ }).textContent()).toBe('Connect Postwise command line to Terminal?');
    for (const description of Object.values(SCOPES)) expect(await page.getByRole('checkbox', { name: description }).isChecked()).toBe(true);
    expect(await page.getByRole('checkbox', { name: /wait for approval/ }).isChecked()).toBe(true);
    await page.getByRole('button', { name: 'Allow' }).click();
    await page.waitForURL(/^http:\/\/127\.0\.0\.1:\d+\/callback\?/);
    expect((await page.locator('body').textContent())?.trim()).toBe('Signed in to Postwise; you may close this tab.');
    await page.close();

    const { code, output } = await login.done;
    expect(code, output).toBe(0);
    expect(output).toContain('Waiting for the browser (up to 10 minutes; Ctrl-C to give up)');
    expect(output).toContain(`Signed in. An app sign-in (OAuth, postwise login --web) to ${service.base} as ${OWNER_NAME} <${owner.email}>`);

    const file = configFile();
    expect((await stat(file)).mode & 0o777).toBe(0o600);
    expect((await stat(join(home, 'postwise'))).mode & 0o777).toBe(0o700);
    // The lock and the file's drafts are gone: the file alone holds the tokens.
    expect(await readdir(join(home, 'postwise'))).toEqual(['config.json']);
    const profile = JSON.parse(await readFile(file, 'utf8')).profiles.default;
    expect(profile).toEqual({
      baseUrl: service.base,
      oauth: { issuer: service.base, clientId: 'postwise-cli', accessToken: expect.any(String), refreshToken: expect.any(String), expiresAt: expect.any(String) },
    });
    expect(output).not.toContain(profile.oauth.accessToken);
    expect(output).not.toContain(profile.oauth.refreshToken);
    expect(await connections()).toHaveLength(1);
  });

  it('sends the bearer token with every public command; internal commands and `postwise mcp` are refused, saying why', async () => {
    const content = `Read with an app sign-in ${Date.now()}`;
    const made = await call(`${service.api}/posts`, { method: 'POST', key: ws.apiKey, body: { rows: [{ content }], shared: { selectedIntegrations: [sky] }, postAction: 'DRAFT' } });
    expect(made.status, made.text).toBe(201);
    const list = await postwise(['posts', 'list', '--search', content]);
    expect(list.code, list.stderr).toBe(0);
    expect(JSON.parse(list.stdout).items.map((post: { id: string }) => post.id)).toEqual([made.json.postId]);

    const me = await postwise(['whoami']);
    expect(me.code, me.stderr).toBe(0);
    expect(JSON.parse(me.stdout)).toMatchObject({ email: owner.email, name: OWNER_NAME });
    expect(me.stderr).toBe(`An app sign-in (OAuth, postwise login --web) to ${service.base} as ${OWNER_NAME} <${owner.email}>, in the workspace chosen when it was allowed; profile "default"\n`);

    // Its tokens go to the server it signed in to, and nowhere else (nothing listens at the other: a request would exit 7).
    const elsewhere = 'http://127.0.0.1:9';
    const other = await postwise(['posts', 'list'], { POSTWISE_BASE_URL: elsewhere });
    expect([other.code, other.stderr]).toEqual([4, `NOT_LOGGED_IN: Profile "default" is signed in to ${service.base}, not ${elsewhere}: sign in there with \`postwise login --web --base-url ${elsewhere}\` (under another --profile to keep this one)\n`]);

    const members = await postwise(['members', 'list']);
    expect([members.code, members.stderr]).toEqual([4, 'NEEDS_SESSION: postwise members list needs a signed-in session: postwise login --email EMAIL (an app sign-in (postwise login --web) reaches only the public commands)\n']);
    const mcp = await postwise(['mcp']);
    expect(mcp.code).toBe(4);
    expect(mcp.stderr).toMatch(/^NOT_LOGGED_IN: postwise mcp takes API keys only \(an app sign-in from `postwise login --web` is for the REST commands: its token is refused by \/mcp\)/);
  });

  it('renews a lapsed access token without a word, and keeps the rotated refresh token', async () => {
    await lapse();
    const before = await storedSignIn();
    const run = await postwise(['posts', 'list']);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stderr).toBe('');
    const after = await storedSignIn();
    expect(after.accessToken).not.toBe(before.accessToken);
    expect(after.refreshToken).not.toBe(before.refreshToken);
    expect(Date.parse(after.expiresAt)).toBeGreaterThan(Date.parse(before.expiresAt));
    expect((await stat(configFile())).mode & 0o777).toBe(0o600);

    // A token the server refuses though the file says it is good (a clock ahead): renewed on its 401, and sent again.
    await lapse();
    const file = JSON.parse(await readFile(configFile(), 'utf8'));
    const refused = file.profiles.default.oauth.accessToken as string;
    file.profiles.default.oauth.expiresAt = new Date(Date.now() + 3_600_000).toISOString();
    await writeFile(configFile(), JSON.stringify(file));
    const created = await postwise(['posts', 'create', '--rows', '{"content":"Sent again after a refused token"}', '--shared.selected-integrations', sky, '--post-action', 'DRAFT', '--verbose']);
    expect(created.code, created.stderr).toBe(0);
    expect(created.stderr).toContain('< 401 Unauthorized');
    expect(created.stderr).toContain('< the access token was refused; renewing it and sending again');
    expect(created.stderr).not.toContain(refused);
    expect((await storedSignIn()).accessToken).not.toBe(refused);
    const post = await call(`${service.api}/posts/${JSON.parse(created.stdout).postId}`, { key: ws.apiKey });
    expect(post.json).toMatchObject({ createdBy: { kind: 'app', name: 'Postwise command line' } });
    expect(await connections()).toHaveLength(1);
  });

  it('commands renewing the same lapsed token at once all succeed: one renews it, the others take its token', async () => {
    await lapse();
    const before = await storedSignIn();
    const runs = await Promise.all([1, 2, 3].map(() => postwise(['posts', 'list', '--verbose'])));
    for (const run of runs) expect(run.code, run.stderr).toBe(0);
    const renewedHere = runs.filter((run) => run.stderr.includes('(the token endpoint: the access token renewed, not shown)')).length;
    const tookOthers = runs.filter((run) => run.stderr.includes('renewed by another postwise command')).length;
    expect(renewedHere).toBeGreaterThanOrEqual(1);
    expect(renewedHere + tookOthers).toBe(3);
    // Had two used one refresh token, the server would have ended the connection: it lives, and so does the sign-in.
    expect(await connections()).toHaveLength(1);
    expect((await storedSignIn()).refreshToken).not.toBe(before.refreshToken);
    expect((await postwise(['posts', 'list'])).code).toBe(0);
  });

  it('a disconnected sign-in says, in words, to sign in again', async () => {
    await service.service.core.db`DELETE FROM oauth_connections WHERE organization_id = ${ws.workspaceId} AND client_id = 'postwise-cli'`;
    const run = await postwise(['posts', 'list']);
    expect([run.code, run.stderr]).toEqual([4, 'SIGNED_OUT: This sign-in was disconnected or has expired; run `postwise login --web` again\n']);
    // Also when the token has not lapsed yet: refused by the server, then not renewable.
    const file = JSON.parse(await readFile(configFile(), 'utf8'));
    file.profiles.default.oauth.expiresAt = new Date(Date.now() + 3_600_000).toISOString();
    await writeFile(configFile(), JSON.stringify(file));
    const refused = await postwise(['whoami']);
    expect([refused.code, refused.stderr]).toEqual([4, 'SIGNED_OUT: This sign-in was disconnected or has expired; run `postwise login --web` again\n']);
  });

  it('signing in again disconnects the sign-in it replaces; logout forgets the tokens and disconnects the sign-in on the server', async () => {
    const allow = async () => {
      const { login, page } = await startLogin();
      await page.getByRole('button', { name: 'Allow' }).click();
      await page.waitForURL(/\/callback\?/);
      await page.close();
      const run = await login.done;
      expect(run.code, run.output).toBe(0);
      return (await connections()).map((connection) => connection.id);
    };
    const [first] = await allow();
    const replaced = (await storedSignIn()).accessToken;
    expect(await allow()).not.toContain(first);
    expect(await connections()).toHaveLength(1);
    expect((await call(`${service.api}/users/me`, { headers: { authorization: `Bearer ${replaced}` } })).status).toBe(401);
    const { accessToken } = await storedSignIn();

    const logout = await postwise(['logout']);
    expect([logout.code, logout.stderr]).toEqual([0, 'Logged out of profile "default"; the app sign-in was disconnected on the server\n']);
    expect(JSON.parse(await readFile(configFile(), 'utf8')).profiles.default).toEqual({ baseUrl: service.base });
    expect(await connections()).toHaveLength(0);
    expect((await call(`${service.api}/users/me`, { headers: { authorization: `Bearer ${accessToken}` } })).status).toBe(401);
    expect((await postwise(['posts', 'list'])).code).toBe(4);
  });

  it('a denial, or no answer in time, ends the command with exit 4; an answer of another state is ignored', async () => {
    const { login, page, url } = await startLogin();
    const callback = new URL(url.searchParams.get('redirect_uri')!);
    const forged = await fetch(`${callback.href}?code=forged&state=not-this-one`);
    expect(forged.status).toBe(400);
    expect(await fetch(new URL('/elsewhere', callback)).then((answer) => answer.status)).toBe(404);
    await page.getByRole('button', { name: 'Deny' }).click();
    await page.waitForURL(/\/callback\?/);
    expect(await page.locator('body').textContent()).toMatch(/^Postwise was not signed in: .+ You may close this tab\./);
    await page.close();
    const denied = await login.done;
    expect(denied.code, denied.output).toBe(4);
    expect(denied.output).toMatch(/^ACCESS_DENIED: The sign-in was denied in the browser \(.+\)$/m);
    expect(JSON.parse(await readFile(configFile(), 'utf8')).profiles.default.oauth).toBeUndefined();

    const late = onTerminal(['login', '--web', '--no-browser', '--timeout', '1']);
    const timedOut = await late.done;
    expect(timedOut.code, timedOut.output).toBe(4);
    expect(timedOut.output).toContain('SIGN_IN_TIMEOUT: No answer came back from the browser within 1 s; run `postwise login --web` again');
  });
});
