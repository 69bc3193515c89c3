import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectThroughForm, createAccount } from './support/bluesky.js';
import { call, eventually, scheduleDueIn, startTestService, type TestService, type Workspace } from './support/service.js';

/**
 * MCP 2026-07-28 beside 2025-11-25 on one endpoint: the SDK's v2 client pinned to 2026-07-28 (stateless requests
 * carrying `_meta`) and a 2025 client (initialize, a session) against the same server at the same time, and the
 * specification's answers to raw requests that break its rules. A listen is told as the worker publishes to a real PDS.
 */

const V2026 = '2026-07-28';
const META = { 'io.modelcontextprotocol/protocolVersion': V2026, 'io.modelcontextprotocol/clientCapabilities': {} };

let service: TestService;
let ws: Workspace;
let channel: string;
let modern: Client;
let legacy: Client;

const connect = async (version: 'modern' | 'legacy', key = ws.apiKey) => {
  const client = new Client({ name: 'test', version: '1.0.0' }, version === 'modern' ? { versionNegotiation: { mode: { pin: V2026 } } } : {});
  await client.connect(new StreamableHTTPClientTransport(new URL(`${service.base}/mcp`), { requestInit: { headers: { 'x-api-key': key } } }));
  return client;
};

beforeAll(async () => {
  service = await startTestService({}, { api: true, worker: true });
  ws = await service.workspace({ plan: 'business' });
  channel = await connectThroughForm(service.api, ws.apiKey, await createAccount());
  [modern, legacy] = await Promise.all([connect('modern'), connect('legacy')]);
}, 60_000);
afterAll(async () => {
  await Promise.all([modern?.close(), legacy?.close()]);
  await service?.stop();
});

/** A raw 2026-07-28 request with the headers the specification asks for, which `headers` may change or remove. */
const raw2026 = (method: string, params: Record<string, unknown> = {}, headers: Record<string, string | undefined> = {}, key = ws.apiKey) => {
  const name = (params.name ?? params.uri) as string | undefined;
  const sent = Object.fromEntries(
    Object.entries({ 'mcp-protocol-version': V2026, 'mcp-method': method, ...(name && { 'mcp-name': name }), ...headers }).filter(([, value]) => value !== undefined),
  ) as Record<string, string>;
  return call(`${service.base}/mcp`, { method: 'POST', key, headers: sent, body: { jsonrpc: '2.0', id: 7, method, params: { ...params, _meta: META } } });
};

/** A post due in `seconds` on the test's Bluesky channel; its one schedule's id. */
const dueIn = (content: string, seconds: number) => scheduleDueIn(service.api, ws.apiKey, channel, content, seconds);

describe('MCP 2026-07-28 beside 2025-11-25', () => {
  it('negotiates each client its own version, and discover says what 2026 clients get', async () => {
    expect(modern.getNegotiatedProtocolVersion()).toBe(V2026);
    expect(legacy.getNegotiatedProtocolVersion()).toBe('2025-11-25');
    const discovered = await raw2026('server/discover');
    expect(discovered.status).toBe(200);
    expect(discovered.json.result).toMatchObject({
      resultType: 'complete',
      supportedVersions: [V2026],
      capabilities: { tools: { listChanged: false }, resources: { subscribe: true, listChanged: false } },
      ttlMs: expect.any(Number),
      cacheScope: 'public',
      _meta: { 'io.modelcontextprotocol/serverInfo': { name: 'postwise' } },
    });
    // No session in 2026: nothing is handed out.
    expect(discovered.headers.get('mcp-session-id')).toBeNull();
  });

  it('lists the same tools to both, with cache hints in 2026 only, and answers calls with the data REST gives', async () => {
    const [fresh, old] = await Promise.all([modern.listTools(), legacy.listTools()]);
    expect(fresh.tools).toEqual(old.tools);
    const listed = await raw2026('tools/list');
    expect(listed.json.result).toMatchObject({ resultType: 'complete', ttlMs: 3_600_000, cacheScope: 'public' });
    const resources = await raw2026('resources/list');
    expect(resources.json.result).toMatchObject({ resources: [{ uri: 'postwise://events' }], cacheScope: 'public' });

    const tag = await ws.admin('createTag', { name: 'Both eras' });
    const rest = await call(`${service.api}/tags/${tag.id}`, { key: ws.apiKey });
    const [a, b] = await Promise.all([modern.callTool({ name: 'getTag', arguments: { id: tag.id } }), legacy.callTool({ name: 'getTag', arguments: { id: tag.id } })]);
    expect(a.structuredContent).toEqual(rest.json);
    expect(b.structuredContent).toEqual(rest.json);
    const page = await raw2026('tools/call', { name: 'listPosts', arguments: { limit: 5 } });
    expect(page.json.result).toMatchObject({ resultType: 'complete', structuredContent: (await call(`${service.api}/posts?limit=5`, { key: ws.apiKey })).json });

    // resources/read depends on the key: private, and never kept.
    const read = await raw2026('resources/read', { uri: 'postwise://events' });
    expect(read.json.result).toMatchObject({ ttlMs: 0, cacheScope: 'private', contents: [{ uri: 'postwise://events', mimeType: 'application/json' }] });
  });

  it('answers a plain tools/call itself exactly as the SDK answers one it serves, and leaves the SDK every refusal', async () => {
    const tag = await ws.admin('createTag', { name: 'Direct or not' });
    // The same name in the header's Base64 form is one the SDK decodes and the direct path leaves to it.
    const viaSdk = (name: string, args: unknown) =>
      call(`${service.base}/mcp`, {
        method: 'POST',
        key: ws.apiKey,
        headers: { 'mcp-protocol-version': V2026, 'mcp-method': 'tools/call', 'mcp-name': `=?base64?${Buffer.from(name).toString('base64')}?=` },
        body: { jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name, arguments: args, _meta: META } },
      });
    for (const [name, args] of [['getTag', { id: tag.id }], ['listPosts', { limit: 3 }], ['getUsage', { days: 'many' }], ['noSuchTool', {}]] as const) {
      const [direct, sdk] = [await raw2026('tools/call', { name, arguments: args }), await viaSdk(name, args)];
      expect(direct.status, name).toBe(sdk.status);
      for (const answer of [direct, sdk]) expect(answer.headers.get('content-type'), name).toMatch(/^application\/json\b/);
      expect(direct.json, name).toEqual(sdk.json);
      expect(direct.headers.get('ratelimit'), name).toBeTruthy();
    }
    // A malformed envelope is the SDK's to refuse, and nothing runs: in a workspace of its own, the refused calls are
    // never counted, and a call made after them is (counting is written after the answer: it is waited for).
    const fresh = await service.workspace();
    const send = (meta: object) =>
      call(`${service.base}/mcp`, {
        method: 'POST',
        key: fresh.apiKey,
        headers: { 'mcp-protocol-version': V2026, 'mcp-method': 'tools/call', 'mcp-name': 'getUsage' },
        body: { jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: 'getUsage', arguments: {}, _meta: { ...META, ...meta } } },
      });
    for (const meta of [{ 'io.modelcontextprotocol/clientCapabilities': { sampling: 1 } }, { 'io.modelcontextprotocol/clientInfo': { name: 'a', version: '1', title: 5 } }]) {
      const refused = await send(meta);
      expect(refused.status).toBe(400);
      expect(refused.json.error.code).toBe(-32602);
    }
    expect((await send({})).json.result.isError).toBeUndefined();
    const usage = await eventually(async () => (await fresh.admin('getUsage', {})).mcp.calls, (calls) => calls >= 1, 10_000);
    expect(usage).toBe(1);
  });

  it('answers an invalid argument as a tool error, an unknown tool as a protocol error, and a missing resource with each version\'s code', async () => {
    const invalid = await modern.callTool({ name: 'getUsage', arguments: { days: 'many' } });
    expect(invalid.isError).toBe(true);
    expect(JSON.parse((invalid.content as { text: string }[])[0]!.text)).toMatchObject({ code: 'VALIDATION_ERROR' });
    await expect(modern.callTool({ name: 'createApiKey', arguments: {} })).rejects.toMatchObject({ code: -32602, message: 'Unknown tool: createApiKey' });

    // Arguments that are no object: a protocol error, in words that name the field, as a 2025 client is told.
    const notAnObject = await raw2026('tools/call', { name: 'getUsage', arguments: 'text' });
    expect(notAnObject.status).toBe(200);
    expect(notAnObject.json).toEqual({ jsonrpc: '2.0', id: 7, error: { code: -32602, message: expect.stringMatching(/^Invalid params: params\.arguments: .*expected object/) } });

    const uri = 'postwise://schedules/00000000-0000-4000-8000-000000000000';
    const missing = await raw2026('resources/read', { uri });
    expect(missing.json.error).toEqual({ code: -32602, message: `Resource not found: ${uri}`, data: { uri } });
    const old = await call(`${service.base}/mcp`, { method: 'POST', key: ws.apiKey, body: { jsonrpc: '2.0', id: 1, method: 'resources/read', params: { uri } } });
    expect(old.json.error).toEqual({ code: -32002, message: `Resource not found: ${uri}`, data: { uri } });
  });

  it('checks the headers against the body, the version, the envelope and the method, as the specification says', async () => {
    const cases: [string, Awaited<ReturnType<typeof raw2026>>, number, number][] = [
      ['a missing MCP-Protocol-Version', await raw2026('tools/list', {}, { 'mcp-protocol-version': undefined }), 400, -32020],
      ['a version header unlike the body', await raw2026('tools/list', {}, { 'mcp-protocol-version': '2025-11-25' }), 400, -32020],
      ['a missing Mcp-Method', await raw2026('tools/list', {}, { 'mcp-method': undefined }), 400, -32020],
      ['an Mcp-Method unlike the body', await raw2026('tools/list', {}, { 'mcp-method': 'resources/list' }), 400, -32020],
      ['an Mcp-Name unlike the body', await raw2026('tools/call', { name: 'getUsage', arguments: {} }, { 'mcp-name': 'listPosts' }), 400, -32020],
      ['a missing Mcp-Name', await raw2026('tools/call', { name: 'getUsage', arguments: {} }, { 'mcp-name': undefined }), 400, -32020],
      ['initialize, which 2026 has not', await raw2026('initialize'), 404, -32601],
      ['resources/subscribe, which 2026 has not', await raw2026('resources/subscribe', { uri: 'postwise://events' }), 404, -32601],
    ];
    for (const [what, answer, status, code] of cases) {
      expect(answer.status, what).toBe(status);
      expect(answer.json.error.code, what).toBe(code);
      expect(answer.json.id, what).toBe(7);
    }
    const unsupported = await call(`${service.base}/mcp`, {
      method: 'POST',
      key: ws.apiKey,
      headers: { 'mcp-protocol-version': '2099-01-01', 'mcp-method': 'tools/list' },
      body: { jsonrpc: '2.0', id: 8, method: 'tools/list', params: { _meta: { ...META, 'io.modelcontextprotocol/protocolVersion': '2099-01-01' } } },
    });
    expect(unsupported.status).toBe(400);
    expect(unsupported.json.error).toMatchObject({ code: -32022, data: { supported: [V2026], requested: '2099-01-01' } });
    const noCapabilities = await call(`${service.base}/mcp`, {
      method: 'POST',
      key: ws.apiKey,
      headers: { 'mcp-protocol-version': V2026, 'mcp-method': 'tools/list' },
      body: { jsonrpc: '2.0', id: 9, method: 'tools/list', params: { _meta: { 'io.modelcontextprotocol/protocolVersion': V2026 } } },
    });
    expect(noCapabilities.status).toBe(400);
    expect(noCapabilities.json.error.code).toBe(-32602);
  });

  it('refuses a request without a valid key in both versions, before anything else', async () => {
    const modernNoKey = await raw2026('tools/list', {}, {}, 'pw_not_a_key');
    const legacyNoKey = await call(`${service.base}/mcp`, { method: 'POST', key: 'pw_not_a_key', body: { jsonrpc: '2.0', id: 1, method: 'tools/list' } });
    for (const answer of [modernNoKey, legacyNoKey]) {
      expect(answer.status).toBe(401);
      expect(answer.json).toEqual({ code: 'UNAUTHORIZED', message: expect.stringContaining('API key') });
    }
  });

  it('tells a 2026 listen and a 2025 subscription alike as the schedule publishes, and no other workspace\'s listen', async () => {
    const watched = await dueIn('Watched by both', 600);
    const uri = `postwise://schedules/${watched}`;
    const heard = { modern: [] as string[], legacy: [] as string[], stranger: [] as string[] };
    modern.setNotificationHandler('notifications/resources/updated', (n) => void heard.modern.push(n.params.uri));
    legacy.setNotificationHandler('notifications/resources/updated', (n) => void heard.legacy.push(n.params.uri));
    const other = await service.workspace({ plan: 'business' });
    const stranger = await connect('modern', other.apiKey);
    stranger.setNotificationHandler('notifications/resources/updated', (n) => void heard.stranger.push(n.params.uri));

    const listen = await modern.listen({ resourceSubscriptions: [uri] });
    expect(listen.honoredFilter).toEqual({ resourceSubscriptions: [uri] });
    // Another workspace may name the schedule: acknowledged, and never told of it.
    const theirs = await stranger.listen({ resourceSubscriptions: [uri, 'postwise://events'] });
    await legacy.subscribeResource({ uri });
    try {
      const soon = { scheduledAt: new Date(Date.now() + 2000).toISOString() };
      expect((await call(`${service.api}/posts/schedules/${watched}/reschedule`, { method: 'POST', key: ws.apiKey, body: soon })).status).toBe(200);
      await eventually(async () => heard, (h) => h.modern.includes(uri) && h.legacy.includes(uri), 20_000);
      expect(heard.modern).toContain(uri);
      expect(heard.legacy).toContain(uri);
      const published = await eventually(
        async () => JSON.parse(((await modern.readResource({ uri })).contents[0] as { text: string }).text),
        (post) => post.schedules[0].status === 'PUBLISHED',
        20_000,
      );
      expect(published.schedules[0].platformPostId).toMatch(/^at:\/\//);
      // Only what was asked for: the events resource was not, so it is not sent though events were written.
      expect(new Set(heard.modern)).toEqual(new Set([uri]));
      // The stranger's own workspace changes, and that is all it hears: its events, never the schedule of ours.
      const sky = await other.admin('createIntegration', { platform: 'BLUESKY', name: 'Theirs' });
      const theirPost = await call(`${service.api}/posts`, {
        method: 'POST',
        key: other.apiKey,
        body: { rows: [{ content: 'Theirs' }], shared: { selectedIntegrations: [sky.id] }, postAction: 'DRAFT' },
      });
      expect(theirPost.status, theirPost.text).toBe(201);
      await eventually(async () => heard.stranger, (uris) => uris.includes('postwise://events'), 20_000);
      expect(heard.stranger).toContain('postwise://events');
      expect(heard.stranger).not.toContain(uri);
    } finally {
      await Promise.all([listen.close(), theirs.close(), stranger.close()]);
    }
  }, 60_000);

  it('holds a workspace to 32 open listens, whatever other workspaces hold', async () => {
    // A closed listen is let go when its stream ends on the server, a moment after the client closes it: a listen
    // refused for the limit is asked again (a bounded number of times) until an earlier one has been let go.
    const listen = async (client: Client) => {
      for (let attempt = 1; ; attempt++) {
        try {
          return await client.listen({ resourceSubscriptions: ['postwise://events'] });
        } catch (error) {
          if (attempt === 100 || !/Subscription limit reached/.test(String(error))) throw error;
          await new Promise((resolve) => setTimeout(resolve, 20));
        }
      }
    };
    const listens = [];
    for (let n = 0; n < 32; n++) listens.push(await listen(modern));
    try {
      const refused = await raw2026('subscriptions/listen', { notifications: { resourceSubscriptions: ['postwise://events'] } });
      expect(refused.status).toBe(200);
      expect(refused.json.error).toEqual({ code: -32603, message: expect.stringMatching(/^Subscription limit reached: this workspace has 32 listens open/) });
      const other = await service.workspace();
      const theirs = await connect('modern', other.apiKey);
      await (await theirs.listen({ resourceSubscriptions: ['postwise://events'] })).close();
      await theirs.close();
      // One closed, one may open.
      await listens.pop()!.close();
      listens.push(await listen(modern));
    } finally {
      await Promise.all(listens.map((open) => open.close()));
    }
  }, 60_000);

  it('serves 2026-07-28 over stdio too (npm run mcp:stdio): discover, tools, and a listen told as its schedule publishes', async () => {
    const stdio = new Client({ name: 'test', version: '1.0.0' }, { versionNegotiation: { mode: { pin: V2026 } } });
    const updated: string[] = [];
    stdio.setNotificationHandler('notifications/resources/updated', (n) => void updated.push(n.params.uri));
    const env = { ...(process.env as Record<string, string>), DATABASE_URL: service.databaseUrl, POSTWISE_API_KEY: ws.apiKey, LOG_LEVEL: 'warn' };
    await stdio.connect(new StdioClientTransport({ command: process.execPath, args: ['--import', 'tsx', 'src/mcp/stdio.ts'], env, stderr: 'pipe' }));
    try {
      expect(stdio.getNegotiatedProtocolVersion()).toBe(V2026);
      expect((await stdio.listTools()).tools).toEqual((await modern.listTools()).tools);
      const watched = await dueIn('Watched over stdio in 2026', 600);
      const uri = `postwise://schedules/${watched}`;
      const listen = await stdio.listen({ resourceSubscriptions: [uri] });
      const soon = { scheduledAt: new Date(Date.now() + 2000).toISOString() };
      expect((await call(`${service.api}/posts/schedules/${watched}/reschedule`, { method: 'POST', key: ws.apiKey, body: soon })).status).toBe(200);
      await eventually(async () => updated, (uris) => uris.includes(uri), 20_000);
      expect(updated).toContain(uri);
      await listen.close();
    } finally {
      await stdio.close();
    }
  }, 60_000);
});
