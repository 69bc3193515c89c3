import { StdioClientTransport } from "@modelcontextprotocol/client/stdio";
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { readFile } from 'node:fs/promises';
import { request as httpRequest } from 'node:http';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, eventually, startTestService, waitingOnLocks, type TestService, type Workspace } from './support/service.js';

let service: TestService;
let ws: Workspace;
let client: Client;

async function connect(key: string): Promise<Client> {
  const mcp = new Client({ name: 'test', version: '1.0.0' });
  await mcp.connect(new StreamableHTTPClientTransport(new URL(`${service.base}/mcp`), { requestInit: { headers: { 'x-api-key': key } } }));
  return mcp;
}

beforeAll(async () => {
  service = await startTestService();
  ws = await service.workspace();
  client = await connect(ws.apiKey);
});
afterAll(async () => {
  await client?.close();
  await service?.stop();
});

const textOf = (result: any) => JSON.parse(result.content[0].text);

/** A POST with a Host header of our choosing (fetch sends the URL's own). */
function postWithHost(url: string, host: string, key: string, body: unknown) {
  return new Promise<{ status: number; body: any }>((resolve, reject) => {
    const request = httpRequest(url, { method: 'POST', headers: { host, 'content-type': 'application/json', 'x-api-key': key } }, (response) => {
      let text = '';
      response.on('data', (chunk) => (text += chunk));
      response.on('end', () => resolve({ status: response.statusCode!, body: JSON.parse(text) }));
    });
    request.on('error', reject);
    request.end(JSON.stringify(body));
  });
}

describe('MCP over Streamable HTTP', () => {
  it('names itself with the version of package.json, as the OpenAPI document does', async () => {
    const { version } = JSON.parse(await readFile('package.json', 'utf8'));
    expect(client.getServerVersion()).toEqual({ name: 'postwise', version });
    expect((await call(`${service.api}/openapi.json`)).json.info.version).toBe(version);
  });

  it('lists exactly the public operations as tools, with object input and output schemas', async () => {
    const { tools } = await client.listTools();
    const doc = (await call(`${service.api}/openapi.json`)).json;
    const operationIds = Object.values(doc.paths).flatMap((item: any) => Object.values(item).map((op: any) => op.operationId));
    expect(tools.map((tool) => tool.name).sort()).toEqual(operationIds.sort());
    for (const tool of tools) {
      expect(tool.inputSchema.type).toBe('object');
      expect(tool.outputSchema?.type).toBe('object');
    }
    await expect(`${JSON.stringify(tools, null, 2)}\n`).toMatchFileSnapshot('./__snapshots__/tools.json');
  });

  it('annotates tools from their HTTP method', async () => {
    const { tools } = await client.listTools();
    const getTag = tools.find((tool) => tool.name === 'getTag')!;
    expect(getTag.annotations).toEqual(expect.objectContaining({ readOnlyHint: true, destructiveHint: false, idempotentHint: true }));
    expect(getTag.inputSchema.required).toEqual(['id']);
  });

  it('answers a call with the same data REST gives for the same key', async () => {
    const tag = await ws.admin('createTag', { name: 'Shared' });
    for (const [tool, args, path] of [
      ['getCurrentUser', {}, '/users/me'],
      ['getTag', { id: tag.id }, `/tags/${tag.id}`],
      ['listTags', { limit: 10 }, '/tags?limit=10'],
    ] as const) {
      const result = await client.callTool({ name: tool, arguments: args });
      const rest = await call(`${service.api}${path}`, { key: ws.apiKey });
      expect(result.isError ?? false).toBe(false);
      expect(result.structuredContent).toEqual(rest.json);
      expect(textOf(result)).toEqual(rest.json);
    }
  });

  it('answers errors as isError with the REST { code, message } body', async () => {
    const invalid = await client.callTool({ name: 'getUsage', arguments: { days: 91 } });
    expect(invalid.isError).toBe(true);
    expect(textOf(invalid)).toEqual({ code: 'VALIDATION_ERROR', message: expect.stringContaining('days') });

    const unknownArgument = await client.callTool({ name: 'getCurrentUser', arguments: { workspaceId: 'x' } });
    expect(textOf(unknownArgument).code).toBe('VALIDATION_ERROR');
  });

  it('answers an unknown tool, and an internal operation\'s name, with the same JSON-RPC error -32602 naming it', async () => {
    const rpc = (name: string, id: number) =>
      call(`${service.base}/mcp`, { method: 'POST', key: ws.apiKey, body: { jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: { name: 'sneaky' } } } });
    const unknownTool = await rpc('noSuchTool', 1);
    const internalTool = await rpc('createApiKey', 2);
    for (const [answer, name, id] of [[unknownTool, 'noSuchTool', 1], [internalTool, 'createApiKey', 2]] as const) {
      expect(answer.status).toBe(200);
      expect(answer.json.result).toBeUndefined();
      expect(answer.json.id).toBe(id);
      expect(answer.json.error.code).toBe(-32602);
      expect(answer.json.error.message).toBe(`Unknown tool: ${name}`);
    }
    // Nothing tells the two apart but the name each was asked by.
    expect((await ws.admin('listApiKeys')).items.some((key: { name: string }) => key.name === 'sneaky')).toBe(false);
    // The SDK's client surfaces it as the protocol error it is.
    await expect(client.callTool({ name: 'createApiKey', arguments: {} })).rejects.toMatchObject({ code: -32602, message: 'Unknown tool: createApiKey' });
    // Invalid arguments of a tool that exists stay a tool execution error (SEP-1303), which a model can read and correct.
    const invalid = await client.callTool({ name: 'getUsage', arguments: { days: 'many' } });
    expect(invalid.isError).toBe(true);
    expect(textOf(invalid).code).toBe('VALIDATION_ERROR');
  });

  it('runs a tools/call that asks for a task as a plain call, since it declares no tasks (MCP 2025-11-25, Tasks)', async () => {
    const tag = await ws.admin('createTag', { name: 'Tasked' });
    const answer = await call(`${service.base}/mcp`, {
      method: 'POST',
      key: ws.apiKey,
      body: { jsonrpc: '2.0', id: 'task-1', method: 'tools/call', params: { name: 'getTag', arguments: { id: tag.id }, task: { ttl: 60000 } } },
    });
    expect(answer.status).toBe(200);
    expect(answer.json.id).toBe('task-1');
    expect(answer.json.result.structuredContent).toEqual((await call(`${service.api}/tags/${tag.id}`, { key: ws.apiKey })).json);
    expect(textOf(answer.json.result)).toEqual(answer.json.result.structuredContent);
    // Task metadata of the wrong shape is refused as invalid params, like any other.
    const malformed = await call(`${service.base}/mcp`, {
      method: 'POST',
      key: ws.apiKey,
      body: { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'getCurrentUser', arguments: {}, task: 5 } },
    });
    expect(malformed.json.error.code).toBe(-32602);
  });

  it('keeps the 404 rule for rows: another workspace\'s row and a missing one look alike, as over REST', async () => {
    const other = await service.workspace();
    const theirs = await other.admin('createTag', { name: 'Not yours' });
    const foreignRow = await client.callTool({ name: 'getTag', arguments: { id: theirs.id } });
    const missingRow = await client.callTool({ name: 'getTag', arguments: { id: '00000000-0000-4000-8000-000000000000' } });
    const rest404 = await call(`${service.api}/api-keys`, { key: ws.apiKey });
    for (const result of [foreignRow, missingRow]) {
      expect(result.isError).toBe(true);
      expect(result.content).toEqual(foreignRow.content);
      expect(textOf(result)).toEqual(rest404.json);
    }
  });

  it('refuses with 403 a browser page of a foreign origin, and a foreign Host on its loopback bind (DNS rebinding)', async () => {
    const port = Number(new URL(service.base).port);
    const toolCall = { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'getCurrentUser', arguments: {} } };
    const fromOrigin = (origin: string | undefined, key = ws.apiKey) =>
      call(`${service.base}/mcp`, { method: 'POST', key, body: toolCall, headers: origin ? { origin } : {} });

    for (const origin of ['http://evil.example', 'null', `http://evil.example:${port}`, 'not a url']) {
      const refused = await fromOrigin(origin);
      expect(refused.status, origin).toBe(403);
      expect(refused.json).toEqual({ jsonrpc: '2.0', error: { code: -32000, message: expect.stringContaining(`Origin ${origin} may not call this server`) }, id: null });
      // Refused before the key is read: without one, the answer is the same.
      expect((await fromOrigin(origin, 'pw_nope')).status).toBe(403);
    }
    // No Origin (a non-browser client), its own origin, and pages of this machine (loopback names, any port) are served.
    for (const origin of [undefined, service.base, `http://localhost:${port}`, `http://[::1]:${port}`, 'http://127.0.0.1:5173', 'https://localhost']) {
      const served = await fromOrigin(origin);
      expect(served.status, origin).toBe(200);
      expect(served.json.result.structuredContent.id).toBe(ws.userId);
    }

    // A Host that names another machine reaches a loopback bind only through a rebound name.
    const withHost = (host: string) => postWithHost(`${service.base}/mcp`, host, ws.apiKey, toolCall);
    const rebound = await withHost(`evil.example:${port}`);
    expect(rebound.status).toBe(403);
    expect(rebound.body.error).toEqual({ code: -32000, message: 'Invalid Host: evil.example' });
    for (const host of [`localhost:${port}`, `127.0.0.1:${port}`, `[::1]:${port}`]) expect((await withHost(host)).status, host).toBe(200);
  });

  it('serves the origins of ALLOWED_ORIGINS and PUBLIC_URL, and the public host on a loopback bind', async () => {
    const configured = await startTestService({ allowedOrigins: ['https://app.example.com'], publicUrl: 'https://postwise.example.com' });
    try {
      const member = await configured.workspace();
      const toolCall = { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'getCurrentUser', arguments: {} } };
      const fromOrigin = (origin: string) => call(`${configured.base}/mcp`, { method: 'POST', key: member.apiKey, body: toolCall, headers: { origin } });
      expect((await fromOrigin('https://app.example.com')).status).toBe(200);
      expect((await fromOrigin('https://postwise.example.com')).status).toBe(200);
      expect((await fromOrigin('http://app.example.com')).status).toBe(403);
      expect((await fromOrigin('https://other.example.com')).status).toBe(403);
      expect((await postWithHost(`${configured.base}/mcp`, 'postwise.example.com', member.apiKey, toolCall)).status).toBe(200);
      expect((await postWithHost(`${configured.base}/mcp`, 'other.example.com', member.apiKey, toolCall)).status).toBe(403);
    } finally {
      await configured.stop();
    }
  });

  it('refuses HTTP requests without a valid key with 401, and a revoked key on the next call', async () => {
    const initialize = { jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} };
    expect((await call(`${service.base}/mcp`, { method: 'POST', body: initialize })).status).toBe(401);
    expect((await call(`${service.base}/mcp`, { method: 'POST', key: 'pw_nope', body: initialize })).json.code).toBe('UNAUTHORIZED');

    const created = await ws.admin('createApiKey', { name: 'mcp key' });
    const revocable = await connect(created.key);
    expect((await revocable.callTool({ name: 'getCurrentUser', arguments: {} })).isError ?? false).toBe(false);
    await ws.admin('revokeApiKey', { id: created.id });
    await expect(revocable.callTool({ name: 'getCurrentUser', arguments: {} })).rejects.toThrow(/UNAUTHORIZED/);
  });

  it('speaks plain JSON-RPC to simple clients: ids kept, notifications accepted, GET refused', async () => {
    const headers = { accept: 'application/json, text/event-stream' };
    const answers = await Promise.all(
      ['a', 'b', 42].map((id) =>
        call(`${service.base}/mcp`, { method: 'POST', key: ws.apiKey, headers, body: { jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'getCurrentUser', arguments: {} } } }),
      ),
    );
    expect(answers.map((answer) => answer.json.id)).toEqual(['a', 'b', 42]);
    expect(answers.every((answer) => answer.json.result.structuredContent.id === ws.userId)).toBe(true);

    const notification = await call(`${service.base}/mcp`, { method: 'POST', key: ws.apiKey, headers, body: { jsonrpc: '2.0', method: 'notifications/initialized' } });
    expect(notification.status).toBe(202);
    const withoutSession = await call(`${service.base}/mcp`, { key: ws.apiKey });
    expect(withoutSession.status).toBe(405);
    expect(withoutSession.headers.get('allow')).toBe('POST');
    expect((await call(`${service.base}/mcp`)).status).toBe(401);
    const garbage = await call(`${service.base}/mcp`, { method: 'POST', key: ws.apiKey, raw: '{"jsonrpc": ' });
    expect(garbage.status).toBe(400);
    expect(garbage.json.error.code).toBe(-32700);
    const notRpc = await call(`${service.base}/mcp`, { method: 'POST', key: ws.apiKey, body: { hello: 'world' } });
    expect(notRpc.status).toBe(400);
    expect(notRpc.json.error.code).toBe(-32600);
  });

  it('refuses at once, never by silence, every message the MCP server would not take', async () => {
    const malformed = [
      { jsonrpc: '2.0', id: 1, method: 'tools/list', params: 5 },
      { jsonrpc: '2.0', id: 1, method: 'tools/list', params: null },
      { jsonrpc: '2.0', id: 1, method: 'tools/list', foo: 1 },
      { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'getCurrentUser', _meta: 5 } },
      [
        { jsonrpc: '2.0', id: 1, method: 'tools/list' },
        { jsonrpc: '2.0', id: 1, method: 'tools/list' },
      ],
    ];
    for (const body of malformed) {
      const answer = await call(`${service.base}/mcp`, { method: 'POST', key: ws.apiKey, body, signal: AbortSignal.timeout(5000) });
      expect(answer.status, JSON.stringify(body)).toBe(400);
      expect(answer.json.error.code).toBe(-32600);
    }
    // A cancellation without params is ignored, and the request beside it is answered.
    const batch = [
      { jsonrpc: '2.0', id: '', method: 'tools/list' },
      { jsonrpc: '2.0', method: 'notifications/cancelled' },
    ];
    const answer = await call(`${service.base}/mcp`, { method: 'POST', key: ws.apiKey, body: batch, signal: AbortSignal.timeout(5000) });
    expect(answer.status).toBe(200);
    expect(answer.json[0].result.tools.length).toBeGreaterThan(0);
  });

  it('lets a client cancel only its own requests', async () => {
    const other = await service.workspace();
    const rpc = (key: string, body: unknown) => call(`${service.base}/mcp`, { method: 'POST', key, body });
    const toolCall = (id: number) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'getCurrentUser', arguments: {} } });

    // Hold a lock the call must wait for, so it is in flight while another client sends cancellations: the lock taken,
    // then the call waiting for it (seen in pg_stat_activity), however long this machine takes to get either there.
    const blocker = postgres(service.databaseUrl, { max: 1, onnotice: () => {} });
    const watcher = postgres(service.databaseUrl, { max: 1, onnotice: () => {} });
    let release!: () => void;
    let locked!: () => void;
    const lockTaken = new Promise<void>((resolve) => (locked = resolve));
    const holding = blocker.begin(async (tx) => {
      await tx`LOCK TABLE users IN ACCESS EXCLUSIVE MODE`;
      locked();
      await new Promise<void>((resolve) => (release = resolve));
    });
    await lockTaken;
    const victim = rpc(ws.apiKey, toolCall(1));
    expect(await waitingOnLocks(watcher, { timeoutMs: 20_000 })).toBeGreaterThan(0);
    await watcher.end();
    const cancellations = Array.from({ length: 200 }, (_, i) => ({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: i + 1 } }));
    expect((await rpc(other.apiKey, cancellations)).status).toBe(202);
    release();
    await holding;
    await blocker.end();
    const answer = await victim;
    expect(answer.status).toBe(200);
    expect(answer.json.result.structuredContent.id).toBe(ws.userId);

    // Its own request, cancelled in the same batch, is answered with nothing, as the protocol says.
    const own = await rpc(ws.apiKey, [toolCall(5), { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 5 } }]);
    expect(own.status).toBe(202);
  });

  it('counts tool calls under the mcp surface, and REST calls under api', async () => {
    const fresh = await service.workspace();
    const mcp = await connect(fresh.apiKey);
    await mcp.listTools();
    await mcp.callTool({ name: 'getCurrentUser', arguments: {} });
    await mcp.callTool({ name: 'getTag', arguments: { id: '00000000-0000-4000-8000-000000000000' } });
    await mcp.close();
    await call(`${service.api}/users/me`, { key: fresh.apiKey });
    const count = async () =>
      (await service.service.core.db`SELECT count(*)::int AS n FROM usage_events WHERE organization_id = ${fresh.workspaceId}`)[0]!.n as number;
    await eventually(count, (n) => n >= 3);
    const usage = (await call(`${service.api}/usage`, { key: fresh.apiKey })).json;
    expect(usage.mcp).toEqual({ calls: 2, errors: 1, lastUsedAt: expect.any(String) });
    expect(usage.api).toEqual({ calls: 1, errors: 0, lastUsedAt: expect.any(String) });
    const events = (await call(`${service.api}/usage/events`, { key: fresh.apiKey })).json.items;
    expect(events.filter((event: { surface: string }) => event.surface === 'mcp').map((event: { operation: string; status: number }) => [event.operation, event.status])).toEqual([
      ['getTag', 404],
      ['getCurrentUser', 200],
    ]);
  });

  it('serves the same tools over stdio (npm run mcp:stdio), with the key from POSTWISE_API_KEY', async () => {
    const stdio = new Client({ name: 'test', version: '1.0.0' });
    const env = { ...(process.env as Record<string, string>), DATABASE_URL: service.databaseUrl, POSTWISE_API_KEY: ws.apiKey, LOG_LEVEL: 'warn' };
    await stdio.connect(new StdioClientTransport({ command: process.execPath, args: ['--import', 'tsx', 'src/mcp/stdio.ts'], env, stderr: 'pipe' }));
    try {
      const overHttp = await client.listTools();
      expect((await stdio.listTools()).tools).toEqual(overHttp.tools);
      const result = await stdio.callTool({ name: 'getCurrentUser', arguments: {} });
      expect(result.structuredContent).toEqual((await call(`${service.api}/users/me`, { key: ws.apiKey })).json);
      // A call that asks for a task runs as a plain one here too.
      const tasked = await stdio.request(
        { method: 'tools/call', params: { name: 'getCurrentUser', arguments: {}, task: { ttl: 60000 } } }
      );
      expect(tasked.structuredContent).toEqual(result.structuredContent);
    } finally {
      await stdio.close();
    }
  });
});
