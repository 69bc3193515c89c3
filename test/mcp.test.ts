import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, eventually, startTestService, type TestService, type Workspace } from './support/service.js';

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

describe('MCP over Streamable HTTP', () => {
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

  it('keeps the 404 rule: internal tools, unknown tools and other workspaces\' rows look alike', async () => {
    const other = await service.workspace();
    const theirs = await other.admin('createTag', { name: 'Not yours' });
    const unknownTool = await client.callTool({ name: 'noSuchTool', arguments: {} });
    const internalTool = await client.callTool({ name: 'createApiKey', arguments: { name: 'sneaky' } });
    const foreignRow = await client.callTool({ name: 'getTag', arguments: { id: theirs.id } });
    const missingRow = await client.callTool({ name: 'getTag', arguments: { id: '00000000-0000-4000-8000-000000000000' } });
    const rest404 = await call(`${service.api}/api-keys`, { key: ws.apiKey });
    for (const result of [unknownTool, internalTool, foreignRow, missingRow]) {
      expect(result.isError).toBe(true);
      expect(result.content).toEqual(unknownTool.content);
      expect(textOf(result)).toEqual(rest404.json);
    }
    expect((await ws.admin('listApiKeys')).items.some((key: { name: string }) => key.name === 'sneaky')).toBe(false);
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
    expect((await call(`${service.base}/mcp`, { key: ws.apiKey })).status).toBe(405);
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

    // Hold a lock the call must wait for, so it is in flight while another client sends cancellations.
    const blocker = postgres(service.databaseUrl, { max: 1, onnotice: () => {} });
    let release!: () => void;
    const holding = blocker.begin(async (tx) => {
      await tx`LOCK TABLE users IN ACCESS EXCLUSIVE MODE`;
      await new Promise<void>((resolve) => (release = resolve));
    });
    await new Promise((resolve) => setTimeout(resolve, 100));
    const victim = rpc(ws.apiKey, toolCall(1));
    await new Promise((resolve) => setTimeout(resolve, 100));
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
    } finally {
      await stdio.close();
    }
  });
});
