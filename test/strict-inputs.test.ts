import { spawn } from 'node:child_process';
import { Socket } from 'node:net';
import { createInterface } from 'node:readline';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, startTestService, type TestService, type Workspace } from './support/service.js';

/** Inputs are validated as each surface's published schema says: REST reads text, MCP and JSON bodies are strict. */

let service: TestService;
let ws: Workspace;

beforeAll(async () => {
  service = await startTestService();
  ws = await service.workspace();
});
afterAll(() => service?.stop());

const rpc = (body: unknown) => call(`${service.base}/mcp`, { method: 'POST', key: ws.apiKey, body });
const toolCall = (name: string, args: unknown) => rpc({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name, arguments: args } });
const toolError = (answer: { json: any }) => {
  expect(answer.json.result.isError).toBe(true);
  return JSON.parse(answer.json.result.content[0].text);
};

describe('MCP tools/call arguments', () => {
  it('that are not an object answer -32602 (invalid params) naming the field, over HTTP', async () => {
    for (const args of ['text', null, [], 5, true]) {
      const answer = await toolCall('getUsage', args);
      expect(answer.status).toBe(200);
      expect(answer.json.id).toBe(1);
      expect(answer.json.error.code).toBe(-32602);
      expect(answer.json.error.message).toMatch(/^Invalid params: params\.arguments: .*expected object/);
      expect(answer.json.error.message).not.toMatch(/\n|"code":/);
    }
  });

  it('that are not an object answer -32602 over stdio too', async () => {
    const env = { ...process.env, DATABASE_URL: service.databaseUrl, POSTWISE_API_KEY: ws.apiKey, LOG_LEVEL: 'warn' };
    const child = spawn(process.execPath, ['--import', 'tsx', 'src/mcp/stdio.ts'], { env, stdio: ['pipe', 'pipe', 'inherit'] });
    try {
      const lines = createInterface({ input: child.stdout! })[Symbol.asyncIterator]();
      child.stdin!.write(`${JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: 'getUsage', arguments: 'text' } })}\n`);
      const answer = JSON.parse((await lines.next()).value);
      expect(answer).toEqual({ jsonrpc: '2.0', id: 7, error: { code: -32602, message: expect.stringMatching(/^Invalid params: params\.arguments: /) } });
      child.stdin!.write(`${JSON.stringify({ jsonrpc: '2.0', id: 8, method: 'tools/call', params: { name: 'getUsage', arguments: { days: 2 } } })}\n`);
      expect(JSON.parse((await lines.next()).value).result.structuredContent.windowDays).toBe(2);
    } finally {
      child.kill('SIGTERM');
    }
  });

  it('are validated strictly: what the published inputSchema forbids is a tool error, never coerced', async () => {
    for (const [tool, args, field] of [
      ['getUsage', { days: '63' }, 'days'],
      ['getUsage', { days: true }, 'days'],
      ['getUsage', { days: [63] }, 'days'],
      ['listTags', { limit: '85' }, 'limit'],
      ['listTags', { limit: true }, 'limit'],
      ['listUsageEvents', { cursor: true }, 'cursor'],
    ] as const) {
      const body = toolError(await toolCall(tool, args));
      expect(body.code).toBe('VALIDATION_ERROR');
      expect(body.message).toMatch(new RegExp(`^${field}: must be a number`));
    }
    const answer = await toolCall('getUsage', { days: 63 });
    expect(answer.json.result.structuredContent.windowDays).toBe(63);
  });
});

describe('REST query text', () => {
  it('is read as the declared type, and text that is not one is refused naming the field', async () => {
    expect((await call(`${service.api}/usage?days=63`, { key: ws.apiKey })).json.windowDays).toBe(63);
    for (const days of ['abc', '6.5', 'true', '', '0x10']) {
      const answer = await call(`${service.api}/usage?days=${days}`, { key: ws.apiKey });
      expect(answer.status).toBe(400);
      expect(answer.json.code).toBe('VALIDATION_ERROR');
      expect(answer.json.message).toMatch(/^query\.days: /);
    }
    const repeated = await call(`${service.api}/usage?days=3&days=4`, { key: ws.apiKey });
    expect(repeated.status).toBe(400);
    expect(repeated.json.message).toBe('query.days: must be a number, not a list');
    const object = await call(`${service.api}/usage?days[a]=3`, { key: ws.apiKey });
    expect(object.json.message).toBe('query.days: must be a number, not an object');
  });

  it('does not let a query reach Object.prototype', async () => {
    const answer = await call(`${service.api}/tags?__proto__[limit]=1&constructor[prototype][limit]=1`, { key: ws.apiKey });
    expect(answer.status).toBe(200);
    expect(({} as Record<string, unknown>).limit).toBeUndefined();
  });
});

describe('a request line and headers over 16 KiB', () => {
  it('answer 431 with the error body, over REST and MCP, and the client reads it', async () => {
    const longQuery = await call(`${service.api}/tags?search=${'x'.repeat(20_000)}`, { key: ws.apiKey });
    expect(longQuery.status).toBe(431);
    expect(longQuery.json).toEqual({ code: 'REQUEST_HEADERS_TOO_LARGE', message: expect.stringMatching(/16 KiB/) });
    const longHeader = await call(`${service.base}/mcp`, { method: 'POST', key: ws.apiKey, headers: { 'x-filler': 'y'.repeat(20_000) }, body: {} });
    expect(longHeader.status).toBe(431);
    expect(longHeader.json.code).toBe('REQUEST_HEADERS_TOO_LARGE');
  });

  it('are declared on every operation of the OpenAPI document', async () => {
    const doc = (await call(`${service.api}/openapi.json`)).json;
    for (const item of Object.values<any>(doc.paths)) {
      for (const operation of Object.values<any>(item)) {
        expect(operation.responses['431'].content['application/json'].schema.properties.code.enum).toEqual(['REQUEST_HEADERS_TOO_LARGE']);
      }
    }
  });

  it('leave the server answering the next request on a new connection', async () => {
    const raw = await new Promise<string>((resolve, reject) => {
      const socket = new Socket();
      let received = '';
      socket.on('data', (chunk) => (received += chunk));
      socket.on('close', () => resolve(received));
      socket.on('error', reject);
      const { port } = new URL(service.base);
      socket.connect(Number(port), '127.0.0.1', () => {
        socket.write(`GET /api/v1/tags HTTP/1.1\r\nHost: x\r\nx-api-key: ${ws.apiKey}\r\nx-filler: ${'z'.repeat(40_000)}\r\n\r\n`);
        socket.end();
      });
    });
    expect(raw).toMatch(/^HTTP\/1\.1 431 /);
    expect(raw).toMatch(/"code":"REQUEST_HEADERS_TOO_LARGE"/);
    expect((await call(`${service.api}/users/me`, { key: ws.apiKey })).status).toBe(200);
  });
});

describe('bodies', () => {
  it('sent with a GET are not read', async () => {
    const answer = await call(`${service.api}/users/me`, { method: 'GET', key: ws.apiKey, headers: { 'content-type': 'text/plain' } });
    expect(answer.status).toBe(200);
  });

  it('are declared on every operation that reads one: fields, or no fields (no body, or {})', async () => {
    const doc = (await call(`${service.api}/openapi.json`)).json;
    for (const [path, item] of Object.entries<any>(doc.paths)) {
      for (const [method, operation] of Object.entries<any>(item)) {
        if (method === 'get') {
          expect(operation.requestBody, `${method} ${path}`).toBeUndefined();
          continue;
        }
        expect(operation.requestBody.content['application/json'].schema, `${method} ${path}`).toBeDefined();
        for (const status of ['400', '413', '415']) expect(operation.responses[status], `${method} ${path} ${status}`).toBeDefined();
      }
    }
  });
});
