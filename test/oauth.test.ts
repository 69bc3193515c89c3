import { Client, discoverOAuthProtectedResourceMetadata, extractWWWAuthenticateParams, discoverAuthorizationServerMetadata, registerClient, startAuthorization, StreamableHTTPClientTransport, UnauthorizedError } from '@modelcontextprotocol/client';
import { REGISTRATION_LIMITS } from '../src/http/oauth.js';
import { afterAll, beforeAll, beforeEach, describe, expect, test, vi } from 'vitest';
import { signedIn } from './support/http-session.js';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { authorizeOverHttp, httpsHost, loopbackCallback, TestAuthProvider } from './support/oauth.js';
import { call, eventually, startTestService, type TestService, type Workspace } from './support/service.js';
import type { HttpSession } from './support/http-session.js';

/**
 * MCP authorization (OAuth 2.1) beside the API key, through the MCP SDK client's own flow against a started service:
 * discovery from the 401, registration, the member's consent (its JSON here; the page itself in
 * test/dashboard-authorize.test.ts), the token on /mcp, and every refusal the specification and the issue name.
 */
let service: TestService;
let ws: Workspace;
let member: HttpSession;
let callback: Awaited<ReturnType<typeof loopbackCallback>>;
let channel: string;
/** The hosts of client metadata documents: `documents` is allowed (MEDIA_FETCH_ALLOW_HOSTS), `stranger` is not. */
let documents: Awaited<ReturnType<typeof httpsHost>>;
let stranger: Awaited<ReturnType<typeof httpsHost>>;
const served: Record<string, { body: unknown; status?: number; headers?: Record<string, string> }> = {};
let fetches: string[] = [];

/** Every line the service logged (at debug level), and every code and token it handed out: the last test looks for them. */
const logged: string[] = [];
const secrets = new Set<string>();

beforeAll(async () => {
  vi.spyOn(process.stderr, 'write').mockImplementation((line) => (logged.push(String(line)), true));
  const answer = (req: IncomingMessage, res: ServerResponse) => {
    fetches.push(req.url!);
    const document = served[req.url!]!;
    res.writeHead(document.status ?? 200, { 'content-type': 'application/json', 'cache-control': 'max-age=300', ...document.headers }).end(JSON.stringify(document.body));
  };
  const paths = ['/agent.json', '/wrong-id.json', '/secret.json', '/big.json', '/moved.json'];
  [documents, stranger, callback] = await Promise.all([
    httpsHost(Object.fromEntries(paths.map((path) => [path, answer]))),
    httpsHost({ '/agent.json': answer }),
    loopbackCallback(),
  ]);
  service = await startTestService({ logLevel: 'debug', mediaFetchAllowHosts: [documents.host] });
  ws = await service.workspace({ workspaceName: 'Agents', ownerName: 'Grace Hopper', plan: 'business' });
  channel = (await ws.admin('createIntegration', { platform: 'BLUESKY', name: 'Sky' })).id;
  member = await signedIn(service, ws.workspaceId, ws.userId);
});

// Each test registers apps of its own, from this one address: the registration limit counts the last hour's.
beforeEach(async () => {
  await service.service.core.db`UPDATE oauth_clients SET created_at = created_at - interval '2 hours'`;
});

afterAll(async () => {
  vi.restoreAllMocks();
  await Promise.all([callback?.close(), documents?.close(), stranger?.close()]);
  await service?.stop();
});

const mcpUrl = () => new URL(`${service.base}/mcp`);

/** The app's whole first connection: 401 → discovery → registration → consent → code → token. */
async function connectApp(decision: Parameters<typeof authorizeOverHttp>[2] = {}, provider = new TestAuthProvider(callback.url)) {
  const first = new Client({ name: 'agent', version: '1.0.0' });
  await expect(first.connect(new StreamableHTTPClientTransport(mcpUrl(), { authProvider: provider }))).rejects.toBeInstanceOf(UnauthorizedError);
  const answer = await authorizeOverHttp(member, provider.authorizationUrl!.href, decision);
  expect(answer.callback, answer.body).toBeDefined();
  const params = answer.callback!.searchParams;
  secrets.add(params.get('code')!);
  expect(params.get('state')).toBe(provider.lastState);
  expect(params.get('iss')).toBe(service.base);
  await new StreamableHTTPClientTransport(mcpUrl(), { authProvider: provider }).finishAuth(params);
  const client = new Client({ name: 'agent', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(mcpUrl(), { authProvider: provider }));
  const tokens = provider.tokens()!;
  secrets.add(tokens.access_token).add(tokens.refresh_token!);
  return { client, provider, consent: answer.consent! };
}

async function publishNow(client: Client, content: string): Promise<string> {
  const result = await client.callTool({ name: 'createPost', arguments: { rows: [{ content }], shared: { selectedIntegrations: [channel] }, postAction: 'PUBLISH_NOW' } });
  expect(result.isError, JSON.stringify(result.content)).toBeFalsy();
  return (result.structuredContent as { postId: string }).postId;
}

const form = (body: Record<string, string>) => ({ method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams(body) });

describe('discovery', () => {
  test('an MCP request without credentials is answered 401 with where to get a token, and says in words that a key works too', async () => {
    for (const [method, headers] of [
      ['POST', { 'content-type': 'application/json', accept: 'application/json, text/event-stream' }],
      ['POST', { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2026-07-28' }],
      ['GET', {}],
      ['DELETE', {}],
    ] as const) {
      const answer = await fetch(mcpUrl(), { method, headers, ...(method === 'POST' ? { body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} }) } : {}) });
      expect(answer.status).toBe(401);
      expect(answer.headers.get('www-authenticate')).toBe(`Bearer resource_metadata="${service.base}/.well-known/oauth-protected-resource/mcp"`);
      expect(((await answer.json()) as { message: string }).message).toMatch(/x-api-key/);
    }
    const parsed = extractWWWAuthenticateParams(await fetch(mcpUrl(), { method: 'POST' }));
    expect(String(parsed.resourceMetadataUrl)).toBe(`${service.base}/.well-known/oauth-protected-resource/mcp`);
    const rest = await fetch(`${service.api}/posts`);
    expect(rest.status).toBe(401);
    expect(rest.headers.get('www-authenticate')).toBe(`Bearer resource_metadata="${service.base}/.well-known/oauth-protected-resource/api/v1"`);
  });

  test('the protected resource and the authorization server describe themselves as the SDK reads them', async () => {
    const document = await discoverOAuthProtectedResourceMetadata(mcpUrl());
    expect(document).toMatchObject({ resource: `${service.base}/mcp`, authorization_servers: [service.base], scopes_supported: ['posts:read', 'posts:write', 'media:write', 'channels:write'] });
    const root = await fetch(`${service.base}/.well-known/oauth-protected-resource`);
    expect(root.headers.get('access-control-allow-origin')).toBe('*');
    expect(await root.json()).toEqual(document);
    const api = (await (await fetch(`${service.base}/.well-known/oauth-protected-resource/api/v1`)).json()) as { resource: string };
    expect(api.resource).toBe(service.api);
    const server = (await (await fetch(`${service.base}/.well-known/oauth-authorization-server`)).json()) as Record<string, unknown>;
    expect(server).toMatchObject({
      issuer: service.base,
      authorization_endpoint: `${service.base}/oauth/authorize`,
      token_endpoint: `${service.base}/oauth/token`,
      registration_endpoint: `${service.base}/oauth/register`,
      revocation_endpoint: `${service.base}/oauth/revoke`,
      code_challenge_methods_supported: ['S256'],
      response_types_supported: ['code'],
      token_endpoint_auth_methods_supported: ['none'],
      authorization_response_iss_parameter_supported: true,
    });
    expect(server).not.toHaveProperty('dpop_signing_alg_values_supported');
    expect(server).not.toHaveProperty('pushed_authorization_request_endpoint');
  });
});

describe('a registered app, connected by a member', () => {
  test('lists and calls tools with its token; its posts wait for approval by default and name the app', async () => {
    const { client, consent } = await connectApp();
    expect(consent).toMatchObject({ app: { name: 'Test agent', kind: 'registered' }, redirectHost: new URL(callback.url).host, workspace: { name: 'Agents' } });
    expect(consent.warnings.join(' ')).toMatch(/registered itself/);
    expect(consent.warnings.join(' ')).toMatch(/address on this computer/);
    const { tools } = await client.listTools();
    expect(tools.map((tool) => tool.name)).toContain('createPost');
    const postId = await publishNow(client, 'From a hosted agent, read by a person first');
    const post = await call(`${service.api}/posts/${postId}`, { key: ws.apiKey });
    expect(post.json).toMatchObject({ approvalStatus: 'pending_review', createdBy: { kind: 'app', name: 'Test agent', apiKeyId: null } });
    await client.close();
  });

  test('with "wait for approval" unticked, its posts are queued at once', async () => {
    const { client } = await connectApp({ postsNeedApproval: false });
    const postId = await publishNow(client, 'From a trusted agent');
    const post = await call(`${service.api}/posts/${postId}`, { key: ws.apiKey });
    expect(post.json).toMatchObject({ approvalStatus: null, schedules: [{ status: 'SCHEDULED' }] });
    await client.close();
  });
});

const countOf = async (query: PromiseLike<readonly Record<string, unknown>[]>) => Number((await query)[0]!.count);

const serverMetadata = async () => (await discoverAuthorizationServerMetadata(service.base))!;

/** A client registered by hand, for the refusals the SDK would never send. */
async function registered(redirectUri = callback.url) {
  return registerClient(service.base, {
    metadata: await serverMetadata(), clientMetadata: { client_name: 'Hand-made agent', redirect_uris: [redirectUri], token_endpoint_auth_method: 'none', grant_types: ['authorization_code', 'refresh_token'] } });
}

/** An authorization by hand: the member allows it; `tweak` changes the request first. What came back to the app. */
async function authorization(options: { tweak?: (url: URL) => void; resource?: string; decision?: Parameters<typeof authorizeOverHttp>[2]; as?: HttpSession } = {}) {
  const client = await registered();
  const { authorizationUrl, codeVerifier } = await startAuthorization(service.base, {
    metadata: await serverMetadata(),
    clientInformation: client,
    redirectUrl: callback.url,
    scope: 'posts:read posts:write media:write',
    state: 'a-state',
    resource: options.resource ?? `${service.base}/mcp`,
  });
  options.tweak?.(authorizationUrl);
  const answer = await authorizeOverHttp(options.as ?? member, authorizationUrl.href, options.decision);
  return { client, codeVerifier, answer, code: answer.callback?.searchParams.get('code') ?? undefined };
}

const exchange = (client: { client_id: string }, code: string, verifier: string, resource = `${service.base}/mcp`) =>
  tokenRequest({ grant_type: 'authorization_code', client_id: client.client_id, code, code_verifier: verifier, redirect_uri: callback.url, resource });

async function tokenRequest(body: Record<string, string>) {
  if (body.code) secrets.add(body.code);
  const answer = await fetch(`${service.base}/oauth/token`, form(body));
  const read = (await answer.json()) as Record<string, any>;
  for (const name of ['access_token', 'refresh_token']) if (read[name]) secrets.add(read[name]);
  return { status: answer.status, body: read };
}

/** What /mcp answers a token: 200 while it is good. */
const mcpStatus = async (token: string) =>
  (
    await fetch(mcpUrl(), {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2025-11-25' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} }),
    })
  ).status;

describe('an app named by its metadata document', () => {
  const document = (clientId: string, more: Record<string, unknown> = {}) => ({
    client_id: clientId,
    client_name: 'Documented agent',
    logo_uri: `${documents.origin}/logo.png`,
    redirect_uris: [callback.url],
    grant_types: ['authorization_code', 'refresh_token'],
    response_types: ['code'],
    token_endpoint_auth_method: 'none',
    ...more,
  });

  test('connects through the same consent, named by its document and host; the document is fetched once and kept', async () => {
    const clientId = `${documents.origin}/agent.json`;
    served['/agent.json'] = { body: document(clientId) };
    fetches = [];
    const { client, consent } = await connectApp({}, new TestAuthProvider(callback.url, { clientName: 'Documented agent', clientMetadataUrl: clientId }));
    expect(consent).toMatchObject({ app: { name: 'Documented agent', kind: 'metadata-document', documentHost: documents.host, logoUri: `${documents.origin}/logo.png` } });
    expect(consent.warnings.join(' ')).toMatch(/never been connected to this workspace/);
    expect(fetches).toEqual(['/agent.json']);
    expect((await client.listTools()).tools.length).toBeGreaterThan(10);
    await client.close();
    expect(await countOf(service.service.core.db`SELECT count(*)::int AS count FROM oauth_clients WHERE client_id = ${clientId}`)).toBe(0);

    // The second time, the workspace knows it: no "never connected" warning.
    const again = await connectApp({}, new TestAuthProvider(callback.url, { clientName: 'Documented agent', clientMetadataUrl: clientId }));
    expect(again.consent.warnings.join(' ')).not.toMatch(/never been connected/);
    await again.client.close();
  });

  test('a document that is not the client\'s, carries a secret, is too big, moved, or lives on a private host is refused', async () => {
    const refusal = async (clientId: string, redirectUri = callback.url) => {
      const url = new URL(`${service.base}/oauth/authorize`);
      const { authorizationUrl } = await startAuthorization(service.base, { metadata: await serverMetadata(), clientInformation: { client_id: clientId }, redirectUrl: redirectUri, state: 's', resource: `${service.base}/mcp` });
      url.search = authorizationUrl.search;
      const answer = await fetch(url, { redirect: 'manual' });
      return { status: answer.status, location: answer.headers.get('location'), text: await answer.text() };
    };
    served['/wrong-id.json'] = { body: document(`${documents.origin}/someone-else.json`) };
    served['/secret.json'] = { body: document(`${documents.origin}/secret.json`, { client_secret: 'shh', token_endpoint_auth_method: 'client_secret_basic' }) };
    served['/big.json'] = { body: document(`${documents.origin}/big.json`, { client_name: 'x'.repeat(6000) }) };
    served['/moved.json'] = { body: {}, status: 302, headers: { location: `${documents.origin}/agent.json` } };
    served['/agent.json'] = { body: document(`${stranger.origin}/agent.json`) };
    for (const clientId of [
      `${documents.origin}/wrong-id.json`,
      `${documents.origin}/secret.json`,
      `${documents.origin}/big.json`,
      `${documents.origin}/moved.json`,
      `${stranger.origin}/agent.json`,
    ]) {
      const answer = await refusal(clientId);
      expect(answer.status, clientId).toBe(400);
      expect(answer.location, clientId).toBeNull();
      expect(answer.text, clientId).toContain('invalid_client');
    }
    served['/agent.json'] = { body: document(`${documents.origin}/agent.json`) };
    const elsewhere = await refusal(`${documents.origin}/agent.json`, 'https://attacker.example/callback');
    expect([elsewhere.status, elsewhere.location]).toEqual([400, null]);
    expect(elsewhere.text).toContain('redirect_uri');
  });
});

describe('refusals', () => {
  test('a code is used once: its replay is refused and ends what the first exchange gave', async () => {
    const { client, code, codeVerifier } = await authorization();
    const first = await exchange(client, code!, codeVerifier);
    expect(first.status).toBe(200);
    expect(await mcpStatus(first.body.access_token)).toBe(200);
    const replay = await exchange(client, code!, codeVerifier);
    expect(replay).toMatchObject({ status: 400, body: { error: 'invalid_grant' } });
    expect(await mcpStatus(first.body.access_token)).toBe(401);
    expect((await tokenRequest({ grant_type: 'refresh_token', client_id: client.client_id, refresh_token: first.body.refresh_token })).body.error).toBe('invalid_grant');
  });

  test('the same code exchanged twice at once leaves no live token', async () => {
    for (let round = 0; round < 3; round++) {
      const { client, code, codeVerifier } = await authorization();
      const answers = await Promise.all([1, 2, 3].map(() => exchange(client, code!, codeVerifier)));
      for (const answer of answers) expect(answer.status === 200 || answer.body.error === 'invalid_grant', JSON.stringify(answer)).toBe(true);
      const tokens = answers.filter((answer) => answer.status === 200).map((answer) => answer.body.access_token as string);
      expect(answers.some((answer) => answer.body.error === 'invalid_grant')).toBe(true);
      for (const token of tokens) expect(await mcpStatus(token)).toBe(401);
    }
  });

  test('refresh tokens rotate; a replayed one ends the whole chain, at once or later', async () => {
    const { client, code, codeVerifier } = await authorization();
    const issued = (await exchange(client, code!, codeVerifier)).body;
    const refreshed = await tokenRequest({ grant_type: 'refresh_token', client_id: client.client_id, refresh_token: issued.refresh_token });
    expect(refreshed.status).toBe(200);
    expect(refreshed.body.refresh_token).not.toBe(issued.refresh_token);
    expect(await mcpStatus(refreshed.body.access_token)).toBe(200);
    const replay = await tokenRequest({ grant_type: 'refresh_token', client_id: client.client_id, refresh_token: issued.refresh_token });
    expect(replay.body.error).toBe('invalid_grant');
    expect(await mcpStatus(refreshed.body.access_token)).toBe(401);
    expect((await tokenRequest({ grant_type: 'refresh_token', client_id: client.client_id, refresh_token: refreshed.body.refresh_token })).body.error).toBe('invalid_grant');

    for (let round = 0; round < 3; round++) {
      const again = await authorization();
      const chain = (await exchange(again.client, again.code!, again.codeVerifier)).body;
      const raced = await Promise.all([1, 2, 3].map(() => tokenRequest({ grant_type: 'refresh_token', client_id: again.client.client_id, refresh_token: chain.refresh_token })));
      // Each answer is a token (dead by the end) or invalid_grant, never a server error.
      for (const answer of raced) expect(answer.status === 200 || answer.body.error === 'invalid_grant', JSON.stringify(answer)).toBe(true);
      expect(raced.some((answer) => answer.body.error === 'invalid_grant')).toBe(true);
      for (const answer of raced.filter((answer) => answer.status === 200)) expect(await mcpStatus(answer.body.access_token)).toBe(401);
    }
  });

  test('PKCE is required, S256 only, and its verifier must match', async () => {
    const none = await authorization({ tweak: (url) => url.searchParams.delete('code_challenge') });
    expect(none.code).toBeUndefined();
    expect(none.answer.callback?.searchParams.get('error')).toBe('invalid_request');
    const plain = await authorization({ tweak: (url) => url.searchParams.set('code_challenge_method', 'plain') });
    expect(plain.code).toBeUndefined();
    expect(plain.answer.callback?.searchParams.get('error')).toBe('invalid_request');
    const wrong = await authorization();
    expect((await exchange(wrong.client, wrong.code!, `${wrong.codeVerifier.slice(1)}x`)).body.error).toBe('invalid_grant');
  });

  test('state is required, and openid is refused: back to the app with the error, no code', async () => {
    const stateless = await authorization({ tweak: (url) => url.searchParams.delete('state') });
    expect(stateless.code).toBeUndefined();
    expect(stateless.answer.callback?.searchParams.get('error')).toBe('invalid_request');
    const openid = await authorization({ tweak: (url) => url.searchParams.set('scope', 'openid posts:read') });
    expect(openid.code).toBeUndefined();
    expect(openid.answer.callback?.searchParams.get('error')).toBe('invalid_scope');
  });

  test('a redirect URI the app did not register is refused with a page, before any redirect', async () => {
    const client = await registered();
    const { authorizationUrl } = await startAuthorization(service.base, {
    metadata: await serverMetadata(), clientInformation: client, redirectUrl: 'https://attacker.example/callback', state: 's', resource: `${service.base}/mcp` });
    const answer = await fetch(authorizationUrl, { redirect: 'manual' });
    expect(answer.status).toBe(400);
    expect(answer.headers.get('location')).toBeNull();
    expect(answer.headers.get('content-security-policy')).toContain("frame-ancestors 'none'");
    expect(await answer.text()).toContain('redirect_uri');
  });

  test('tokens are bound to their resource: another resource is refused, and each resource refuses the other\'s tokens', async () => {
    const elsewhere = await authorization({ tweak: (url) => url.searchParams.set('resource', 'https://other.example/mcp') });
    expect(elsewhere.answer.callback?.searchParams.get('error')).toBe('invalid_target');
    const forMcp = await authorization();
    const mcpToken = (await exchange(forMcp.client, forMcp.code!, forMcp.codeVerifier)).body.access_token as string;
    const forApi = await authorization({ resource: service.api });
    const apiToken = (await exchange(forApi.client, forApi.code!, forApi.codeVerifier, service.api)).body.access_token as string;
    expect((await call(`${service.api}/users/me`, { headers: { authorization: `Bearer ${apiToken}` } })).status).toBe(200);
    const refused = await fetch(`${service.api}/users/me`, { headers: { authorization: `Bearer ${mcpToken}` } });
    expect(refused.status).toBe(401);
    expect(refused.headers.get('www-authenticate')).toMatch(/^Bearer error="invalid_token"/);
    expect(await mcpStatus(apiToken)).toBe(401);
    expect(await mcpStatus('not-a-token')).toBe(401);
  });

  test('registration: public clients only, https or loopback redirects, rate-limited per address', async () => {
    const register = (metadata: Record<string, unknown>) =>
      fetch(`${service.base}/oauth/register`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(metadata) });
    const secret = await register({ redirect_uris: [callback.url], token_endpoint_auth_method: 'client_secret_basic' });
    expect(secret.status).toBe(400);
    expect(((await secret.json()) as { error: string }).error).toBe('invalid_client_metadata');
    const plainHttp = await register({ redirect_uris: ['http://agent.example/callback'], token_endpoint_auth_method: 'none' });
    expect(((await plainHttp.json()) as { error: string }).error).toBe('invalid_redirect_uri');
    for (let n = 0; n < REGISTRATION_LIMITS.address; n++) expect((await register({ redirect_uris: [callback.url], token_endpoint_auth_method: 'none' })).status).toBe(201);
    const [latest] = await service.service.core.db<{ registeredFrom: string }[]>`SELECT registered_from FROM oauth_clients ORDER BY created_at DESC LIMIT 1`;
    expect(latest!.registeredFrom).toMatch(/^(::ffff:)?127\.0\.0\.1$/);
    const over = await register({ redirect_uris: [callback.url], token_endpoint_auth_method: 'none' });
    expect(over.status).toBe(429);
    expect(over.headers.get('retry-after')).toBe('3600');
  });

  test('a registration no connection uses is forgotten after a day', async () => {
    const client = await registered();
    await service.service.core.db`UPDATE oauth_clients SET created_at = now() - interval '25 hours' WHERE client_id = ${client.client_id}`;
    const { authorizationUrl } = await startAuthorization(service.base, {
    metadata: await serverMetadata(), clientInformation: client, redirectUrl: callback.url, state: 's', resource: `${service.base}/mcp` });
    const answer = await fetch(authorizationUrl, { redirect: 'manual' });
    expect(answer.status).toBe(400);
    expect(await answer.text()).toContain('invalid_client');
  });
});

describe('the connection as a caller', () => {
  test('its calls count as MCP against the connection, in the programmatic bucket; scopes it was not given are refused by name', async () => {
    const { client } = await connectApp({ scopes: ['posts:read'] });
    const refused = await client.callTool({ name: 'createPost', arguments: { rows: [{ content: 'not allowed' }], shared: { selectedIntegrations: [channel] }, postAction: 'DRAFT' } });
    expect(refused.isError).toBe(true);
    expect(JSON.stringify(refused.structuredContent ?? refused.content)).toMatch(/Test agent was not allowed to create, change, delete and reschedule posts \(posts:write\)/);
    expect((await client.callTool({ name: 'listPosts', arguments: {} })).isError).toBeFalsy();
    const [connection] = await service.service.core.db<{ id: string }[]>`SELECT id FROM oauth_connections WHERE scopes = ARRAY['posts:read'] ORDER BY created_at DESC LIMIT 1`;
    const usage = await eventually(
      () => service.service.core.db<{ surface: string; operation: string | null; status: number }[]>`SELECT surface, operation, status FROM usage_events WHERE oauth_connection_id = ${connection!.id}`,
      (rows) => rows.some((row) => row.operation === 'listPosts'),
    );
    expect(usage).toEqual(expect.arrayContaining([{ surface: 'mcp', operation: 'createPost', status: 403 }, { surface: 'mcp', operation: 'listPosts', status: 200 }]));
    await client.close();
  });

  test('revoking its refresh token (RFC 7009) ends it; revoking another app\'s token changes nothing', async () => {
    const mine = await authorization();
    const tokens = (await exchange(mine.client, mine.code!, mine.codeVerifier)).body;
    const theirs = await authorization();
    const other = (await exchange(theirs.client, theirs.code!, theirs.codeVerifier)).body;
    const revoke = (clientId: string, token: string) => fetch(`${service.base}/oauth/revoke`, form({ client_id: clientId, token, token_type_hint: 'refresh_token' }));
    expect((await revoke(mine.client.client_id, other.refresh_token)).status).toBe(200);
    expect(await mcpStatus(other.access_token)).toBe(200);
    expect((await revoke(mine.client.client_id, tokens.refresh_token)).status).toBe(200);
    expect(await mcpStatus(tokens.access_token)).toBe(401);
  });

  test('a member who leaves the workspace takes their connections (and their tokens) with them', async () => {
    const added = await ws.admin('addMember', { email: `leaver-${Date.now()}@example.com`, name: 'Leaver' });
    const leaver = await signedIn(service, ws.workspaceId, added.id ?? added.userId);
    const { client, codeVerifier, code } = await authorization({ as: leaver });
    const tokens = (await exchange(client, code!, codeVerifier)).body;
    expect(await mcpStatus(tokens.access_token)).toBe(200);
    await ws.admin('removeMember', { userId: added.id ?? added.userId });
    expect(await mcpStatus(tokens.access_token)).toBe(401);
    expect(await countOf(service.service.core.db`SELECT count(*)::int AS count FROM oauth_artifacts a JOIN oauth_connections c ON c.id = a.connection_id WHERE c.user_id = ${added.id ?? added.userId}`)).toBe(0);
  });
});

describe('the consent step', () => {
  test('needs the member\'s session, its csrf token and this origin', async () => {
    const client = await registered();
    const { authorizationUrl } = await startAuthorization(service.base, { metadata: await serverMetadata(), clientInformation: client, redirectUrl: callback.url, state: 's', resource: `${service.base}/mcp` });
    const first = await fetch(authorizationUrl, { redirect: 'manual' });
    const consentPath = first.headers.get('location')!;
    expect(consentPath).toMatch(/^\/authorize\/[\w-]+$/);
    const cookie = first.headers.getSetCookie().map((line) => line.split(';')[0]).join('; ');
    const page = await fetch(`${service.base}${consentPath}`);
    expect(page.headers.get('content-security-policy')).toContain("frame-ancestors 'none'");
    expect(page.headers.get('x-frame-options')).toBe('DENY');
    const signedOut = await fetch(`${service.base}${consentPath}/request`, { headers: { cookie } });
    expect(signedOut.status).toBe(401);
    const both = `${cookie}; ${member.cookie}`;
    const decide = (headers: Record<string, string>) =>
      fetch(`${service.base}${consentPath}/decision`, { method: 'POST', headers: { cookie: both, 'content-type': 'application/json', ...headers }, body: JSON.stringify({ allow: true, scopes: ['posts:read'] }) });
    const withoutToken = await decide({ origin: service.base });
    expect(withoutToken.status).toBe(403);
    expect(((await withoutToken.json()) as { code: string }).code).toBe('CSRF_REJECTED');
    const crossSite = await decide({ origin: 'https://attacker.example', 'x-csrf-token': member.csrfToken! });
    expect(crossSite.status).toBe(403);
    expect(await countOf(service.service.core.db`SELECT count(*)::int AS count FROM oauth_connections WHERE client_id = ${client.client_id}`)).toBe(0);
  });
});

describe('what is kept', () => {
  test('the worker forgets expired tokens and connections, and registrations no connection used within a day', async () => {
    const db = service.service.core.db;
    const unused = await registered();
    const used = await authorization();
    const tokens = (await exchange(used.client, used.code!, used.codeVerifier)).body;
    // An authorization the member never answered leaves its consent request behind.
    const { authorizationUrl } = await startAuthorization(service.base, { metadata: await serverMetadata(), clientInformation: unused, redirectUrl: callback.url, state: 's', resource: `${service.base}/mcp` });
    expect((await fetch(authorizationUrl, { redirect: 'manual' })).status).toBe(303);
    expect(await countOf(db`SELECT count(*)::int AS count FROM oauth_artifacts WHERE kind = 'Interaction'`)).toBeGreaterThan(0);
    await db`UPDATE oauth_clients SET created_at = now() - interval '25 hours' WHERE client_id IN (${unused.client_id}, ${used.client.client_id})`;
    const [expired] = await db<{ id: string }[]>`
      UPDATE oauth_connections SET expires_at = now() - interval '1 second'
      WHERE id = (SELECT id FROM oauth_connections WHERE client_id <> ${used.client.client_id} ORDER BY created_at LIMIT 1) RETURNING id`;
    await db`UPDATE oauth_artifacts SET expires_at = now() - interval '1 second' WHERE kind = 'Interaction'`;
    const worker = await startTestService({ databaseUrl: service.databaseUrl }, { api: false, worker: true });
    try {
      await db`SELECT graphile_worker.add_job('prune-oauth', '{}'::json)`;
      await eventually(() => countOf(db`SELECT count(*)::int AS count FROM graphile_worker.jobs WHERE task_identifier = 'prune-oauth'`), (left) => left === 0, 15_000);
    } finally {
      await worker.stop();
    }
    expect(await countOf(db`SELECT count(*)::int AS count FROM oauth_clients WHERE client_id = ${unused.client_id}`)).toBe(0);
    expect(await countOf(db`SELECT count(*)::int AS count FROM oauth_clients WHERE client_id = ${used.client.client_id}`)).toBe(1);
    expect(await countOf(db`SELECT count(*)::int AS count FROM oauth_connections WHERE id = ${expired!.id}`)).toBe(0);
    expect(await countOf(db`SELECT count(*)::int AS count FROM oauth_artifacts WHERE kind = 'Interaction'`)).toBe(0);
    expect(await mcpStatus(tokens.access_token)).toBe(200);
  });

  test('no code or token is stored or logged, even at debug level: only their hashes', async () => {
    expect(secrets.size).toBeGreaterThan(20);
    const db = service.service.core.db;
    const rows = await db<{ row: string }[]>`
      SELECT row_to_json(t)::text AS row FROM oauth_artifacts t UNION ALL SELECT row_to_json(t)::text FROM oauth_connections t
      UNION ALL SELECT row_to_json(t)::text FROM oauth_clients t UNION ALL SELECT row_to_json(t)::text FROM usage_events t`;
    expect(rows.length).toBeGreaterThan(20);
    const stored = rows.map((row) => row.row).join('\n');
    const logs = logged.join('');
    expect(logs).toContain('"level":"debug"');
    for (const secret of secrets) {
      expect(stored).not.toContain(secret);
      expect(logs).not.toContain(secret);
    }
  });
});
