import { Client, StreamableHTTPClientTransport, UnauthorizedError } from '@modelcontextprotocol/client';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { checkAccessibility, launchBrowser, newPage, pageErrors, screenshot, setOwnerPassword } from './support/browser.js';
import { httpsHost, loopbackCallback, TestAuthProvider } from './support/oauth.js';
import { call, startTestService, type TestService, type Workspace } from './support/service.js';

/**
 * The consent page in a real browser, as a member meets it when a hosted agent connects: sent to sign in and back,
 * the app named (by its metadata document, or as one that registered itself), Allow, and the agent lists and calls
 * tools with its token; then the member disconnects it on the Developer API page and the agent's next call is refused.
 */
let service: TestService;
let ws: Workspace;
let browser: Browser;
let page: Page;
let credentials: { email: string; password: string };
let callback: Awaited<ReturnType<typeof loopbackCallback>>;
let documents: Awaited<ReturnType<typeof httpsHost>>;
let channel: string;

beforeAll(async () => {
  [callback, browser] = await Promise.all([loopbackCallback(), launchBrowser()]);
  documents = await httpsHost({
    '/agent.json': (_req: IncomingMessage, res: ServerResponse) =>
      res.writeHead(200, { 'content-type': 'application/json' }).end(
        JSON.stringify({
          client_id: `${documents.origin}/agent.json`,
          client_name: 'Documented agent',
          redirect_uris: [callback.url],
          grant_types: ['authorization_code', 'refresh_token'],
          response_types: ['code'],
          token_endpoint_auth_method: 'none',
        }),
      ),
  });
  service = await startTestService({ mediaFetchAllowHosts: [documents.host] });
  ws = await service.workspace({ workspaceName: 'Newsroom', ownerName: 'Ada Lovelace', plan: 'business' });
  channel = (await ws.admin('createIntegration', { platform: 'BLUESKY', name: 'Sky' })).id;
  credentials = await setOwnerPassword(service, ws);
  page = await newPage(browser, { baseURL: service.base });
});

afterAll(async () => {
  await browser?.close();
  await Promise.all([callback?.close(), documents?.close()]);
  await service?.stop();
});

const mcpUrl = () => new URL(`${service.base}/mcp`);

/** The agent's first try: refused, with where to send the member (the provider keeps it). */
async function startConnecting(provider: TestAuthProvider) {
  const client = new Client({ name: 'agent', version: '1.0.0' });
  await expect(client.connect(new StreamableHTTPClientTransport(mcpUrl(), { authProvider: provider }))).rejects.toBeInstanceOf(UnauthorizedError);
  return provider.authorizationUrl!.href;
}

/** The agent finishes with what came back to its redirect URI, and connects. */
async function finishConnecting(provider: TestAuthProvider, back: URL) {
  expect(back.searchParams.get('state')).toBe(provider.lastState);
  await new StreamableHTTPClientTransport(mcpUrl(), { authProvider: provider }).finishAuth(back.searchParams);
  const client = new Client({ name: 'agent', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(mcpUrl(), { authProvider: provider }));
  return client;
}

/** Allow on the consent page, and wait to be back at the app's redirect URI. */
async function allow() {
  await Promise.all([page.waitForURL((url) => url.href.startsWith(callback.url)), page.getByRole('button', { name: 'Allow' }).click()]);
  return new URL(page.url());
}

test('a registered agent: the signed-out member signs in and comes back, sees who asks and what for, and allows it', async () => {
  const provider = new TestAuthProvider(callback.url, { clientName: 'Chat assistant' });
  await page.goto(await startConnecting(provider));
  // Not signed in: to sign-in first, then back to the same consent.
  await page.waitForURL(/\/login\?next=%2Fauthorize%2F/);
  await page.getByLabel('Email').fill(credentials.email);
  await page.getByLabel('Password').fill(credentials.password);
  await page.getByRole('button', { name: /sign in/i }).click();
  await page.getByRole('heading', { name: 'Connect Chat assistant to Newsroom?' }).waitFor();
  expect(new URL(page.url()).pathname).toMatch(/^\/authorize\/[\w-]+$/);
  const body = await page.locator('main').innerText();
  expect(body).toContain(new URL(callback.url).host);
  expect(body).toMatch(/registered itself/i);
  expect(body).toMatch(/address on this computer/);
  for (const description of ['Read posts, schedules, tags, channels, events and usage', 'Create, change, delete and reschedule posts', 'Upload images and import them from links']) {
    expect(await page.getByRole('checkbox', { name: description }).isChecked()).toBe(true);
  }
  expect(await page.getByRole('checkbox', { name: /wait for approval/ }).isChecked()).toBe(true);
  await checkAccessibility(page, 'consent');
  await screenshot(page, 'consent');

  const client = await finishConnecting(provider, await allow());
  expect((await client.listTools()).tools.map((tool) => tool.name)).toContain('createPost');
  const created = await client.callTool({ name: 'createPost', arguments: { rows: [{ content: 'Drafted by the assistant' }], shared: { selectedIntegrations: [channel] }, postAction: 'PUBLISH_NOW' } });
  expect(created.isError, JSON.stringify(created.content)).toBeFalsy();
  expect((created.structuredContent as { approvalStatus: string }).approvalStatus).toBe('pending_review');
  await client.close();
  // The approver sees which app wrote it.
  await page.goto('/approvals');
  await page.getByText('Written by the connected app Chat assistant').waitFor();
  expect(pageErrors(page)).toEqual([]);
});

test('an agent named by its metadata document: its host shown; unticking a scope and the approval box is what it gets', async () => {
  const provider = new TestAuthProvider(callback.url, { clientName: 'Documented agent', clientMetadataUrl: `${documents.origin}/agent.json` });
  await page.goto(await startConnecting(provider));
  await page.getByRole('heading', { name: 'Connect Documented agent to Newsroom?' }).waitFor();
  const body = await page.locator('main').innerText();
  expect(body).toContain(documents.host);
  expect(body).toMatch(/never been connected to this workspace/);
  await page.getByRole('checkbox', { name: 'Upload images and import them from links' }).uncheck();
  await page.getByRole('checkbox', { name: /wait for approval/ }).uncheck();
  const client = await finishConnecting(provider, await allow());
  const created = await client.callTool({ name: 'createPost', arguments: { rows: [{ content: 'Trusted to publish' }], shared: { selectedIntegrations: [channel] }, postAction: 'PUBLISH_NOW' } });
  expect((created.structuredContent as { approvalStatus: string | null }).approvalStatus).toBeNull();
  const upload = await client.callTool({ name: 'initiateUpload', arguments: { fileName: 'a.png', contentType: 'image/png', size: 100 } });
  expect(upload.isError).toBe(true);
  expect(JSON.stringify(upload.content)).toContain('media:write');
  await client.close();
});

test('Deny sends the member back to the app with access_denied, and nothing is connected', async () => {
  const provider = new TestAuthProvider(callback.url, { clientName: 'Unwanted agent' });
  await page.goto(await startConnecting(provider));
  await page.getByRole('heading', { name: 'Connect Unwanted agent to Newsroom?' }).waitFor();
  await Promise.all([page.waitForURL((url) => url.href.startsWith(callback.url)), page.getByRole('button', { name: 'Deny' }).click()]);
  expect(new URL(page.url()).searchParams.get('error')).toBe('access_denied');
  const [row] = await service.service.core.db<{ count: number }[]>`SELECT count(*)::int AS count FROM oauth_connections WHERE client_name = 'Unwanted agent'`;
  expect(row!.count).toBe(0);
});

test('disconnecting on the Developer API page ends a connected agent\'s access at its next request', async () => {
  const provider = new TestAuthProvider(callback.url, { clientName: 'Soon gone' });
  await page.goto(await startConnecting(provider));
  await page.getByRole('heading', { name: 'Connect Soon gone to Newsroom?' }).waitFor();
  const client = await finishConnecting(provider, await allow());
  expect((await client.callTool({ name: 'listPosts', arguments: {} })).isError).toBeFalsy();
  const token = provider.tokens()!.access_token;

  await page.goto('/settings/api-keys');
  const row = page.getByRole('row').filter({ hasText: 'Soon gone' });
  await row.getByRole('button', { name: /Disconnect/ }).click();
  await page.getByRole('dialog').getByRole('button', { name: /Disconnect/ }).click();
  await row.waitFor({ state: 'detached' });
  await expect(client.callTool({ name: 'listPosts', arguments: {} })).rejects.toThrow();
  const answer = await call(`${service.base}/mcp`, { method: 'POST', headers: { authorization: `Bearer ${token}` }, body: { jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} } });
  expect(answer.status).toBe(401);
});

test('the consent page cannot be framed', async () => {
  const answer = await fetch(`${service.base}/authorize/anything`);
  expect(answer.headers.get('content-security-policy')).toContain("frame-ancestors 'none'");
  expect(answer.headers.get('x-frame-options')).toBe('DENY');
  expect(answer.headers.get('referrer-policy')).toBe('no-referrer');
});

