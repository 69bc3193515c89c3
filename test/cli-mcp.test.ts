/**
 * `postwise mcp`, the real binary run as an MCP client launches it: a stdio server relaying to the service's /mcp.
 */
import { StdioClientTransport } from "@modelcontextprotocol/client/stdio";
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import type { Transport, JSONRPCMessage } from "@modelcontextprotocol/client";
import { createServer, request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, eventually, startTestService, type TestService, type Workspace } from './support/service.js';

const root = fileURLToPath(new URL('..', import.meta.url));

let service: TestService;
let ws: Workspace;
let configHome: string;

beforeAll(async () => {
  service = await startTestService();
  ws = await service.workspace();
  // No profile of the machine's user may stand in for the environment's key.
  configHome = await mkdtemp(join(tmpdir(), 'postwise-cli-mcp-'));
});
afterAll(async () => {
  await service?.stop();
  if (configHome) await rm(configHome, { recursive: true, force: true });
});

/**
 * The stdio client's transport, keeping everything the bridge writes: each message read from its stdout, what
 * stdout held that was no MCP message (errors), its stderr, and when the process exited.
 */
class Recorded implements Transport {
  onmessage?: Transport['onmessage'];
  onclose?: () => void;
  onerror?: (error: Error) => void;
  readonly stdout: string[] = [];
  readonly errors: Error[] = [];
  private stderrText = '';
  closeCalledAt: number | undefined;
  exitedAt: number | undefined;
  readonly inner: StdioClientTransport;

  constructor(base: string, key: string) {
    const env = Object.fromEntries(Object.entries(process.env).filter((entry): entry is [string, string] => entry[1] !== undefined));
    this.inner = new StdioClientTransport({
      command: process.execPath,
      args: ['bin/postwise.mjs', 'mcp'],
      cwd: root,
      env: { ...env, POSTWISE_BASE_URL: base, POSTWISE_API_KEY: key, XDG_CONFIG_HOME: configHome },
      stderr: 'pipe',
    });
    this.inner.stderr!.on('data', (chunk: Buffer) => (this.stderrText += chunk.toString()));
    this.inner.onmessage = (message) => {
      this.stdout.push(JSON.stringify(message));
      this.onmessage?.(message);
    };
    this.inner.onerror = (error) => {
      this.errors.push(error);
      this.onerror?.(error);
    };
    this.inner.onclose = () => {
      this.exitedAt = Date.now();
      this.onclose?.();
    };
  }

  get stderr() {
    return this.stderrText;
  }

  start() {
    return this.inner.start();
  }
  send(message: JSONRPCMessage) {
    return this.inner.send(message);
  }
  close() {
    this.closeCalledAt ??= Date.now();
    return this.inner.close();
  }

  /** Resolves once the process has exited (the client's close waits 2 s for that before it sends SIGTERM). */
  async exited(timeoutMs = 5000) {
    const started = Date.now();
    while (this.exitedAt === undefined && Date.now() - started < timeoutMs) await new Promise((resolve) => setTimeout(resolve, 20));
    return this.exitedAt;
  }
}

const newClient = () => new Client({ name: 'cli-mcp-test', version: '1.0.0' });

async function throughBridge(base: string, key: string) {
  const transport = new Recorded(base, key);
  const client = newClient();
  await client.connect(transport, { timeout: 20_000 });
  return { client, transport };
}

/**
 * A pass-through HTTP proxy in front of the service, noting every request's method, headers and body, and the bodies
 * of those the client closed before their answer had ended (`cut`), which it cuts upstream too.
 */
async function recordingProxy(target: string) {
  const seen: { method: string; headers: IncomingHttpHeaders; body: string }[] = [];
  const cut: string[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      seen.push({ method: req.method!, headers: req.headers, body: body.toString() });
      const upstream = httpRequest(new URL(req.url!, target), { method: req.method, headers: req.headers }, (answer) => {
        res.writeHead(answer.statusCode!, answer.headers);
        answer.pipe(res);
      });
      upstream.on('error', () => res.destroy());
      res.once('close', () => {
        if (res.writableFinished) return;
        cut.push(body.toString());
        upstream.destroy();
      });
      upstream.end(body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    base: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    seen,
    cut,
    close: () => {
      server.closeAllConnections();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** A port nothing listens on: taken from the system, then let go. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

describe('postwise mcp (stdio bridge to /mcp)', () => {
  it('offers exactly what /mcp offers, and sends the key and the negotiated protocol version with every request', async () => {
    const directTransport = new StreamableHTTPClientTransport(new URL(`${service.base}/mcp`), { requestInit: { headers: { 'x-api-key': ws.apiKey } } });
    const direct = newClient();
    await direct.connect(directTransport);
    const proxy = await recordingProxy(service.base);
    const { client, transport } = await throughBridge(proxy.base, ws.apiKey);
    try {
      const bridged = (await client.listTools()).tools;
      const straight = (await direct.listTools()).tools;
      expect(bridged.map((tool) => tool.name)).toEqual(straight.map((tool) => tool.name));
      expect(bridged.map((tool) => [tool.name, tool.inputSchema])).toEqual(straight.map((tool) => [tool.name, tool.inputSchema]));
      // A relay, not a copy: everything else about each tool, and the server itself, is the same too.
      expect(bridged).toEqual(straight);
      expect(client.getServerVersion()).toEqual(direct.getServerVersion());
      expect(client.getServerCapabilities()).toEqual(direct.getServerCapabilities());
      await expect(client.ping()).resolves.toEqual({});

      const version = directTransport.protocolVersion;
      expect(version).toBeTruthy();
      const [initialize, ...later] = proxy.seen;
      expect(JSON.parse(initialize!.body).method).toBe('initialize');
      expect(initialize!.headers['mcp-protocol-version']).toBeUndefined();
      expect(later.map((request) => JSON.parse(request.body || '{}').method)).toEqual(expect.arrayContaining(['notifications/initialized', 'tools/list', 'ping']));
      for (const request of later) expect(request.headers['mcp-protocol-version'], request.body).toBe(version);
      for (const request of proxy.seen) expect(request.headers['x-api-key']).toBe(ws.apiKey);

      // stdout held MCP messages only.
      expect(transport.errors).toEqual([]);
    } finally {
      await client.close();
      await direct.close();
      await proxy.close();
    }
  });

  it('calls tools as the key\'s workspace: the current user is REST\'s, and a post it creates is there over REST', async () => {
    const sky = await ws.admin('createIntegration', { platform: 'BLUESKY', name: 'Sky' });
    const { client, transport } = await throughBridge(service.base, ws.apiKey);
    try {
      const me = await client.callTool({ name: 'getCurrentUser', arguments: {} });
      const rest = await call(`${service.api}/users/me`, { key: ws.apiKey });
      expect(rest.status).toBe(200);
      expect(me.isError ?? false).toBe(false);
      expect(me.structuredContent).toEqual(rest.json);

      const content = 'Drafted through postwise mcp';
      const created = await client.callTool({
        name: 'createPost',
        arguments: { rows: [{ content }], shared: { selectedIntegrations: [sky.id] }, postAction: 'DRAFT' },
      });
      expect(created.isError ?? false, JSON.stringify(created.content)).toBe(false);
      const { postId, scheduleCount } = created.structuredContent as { postId: string; scheduleCount: number };
      expect(scheduleCount).toBe(1);
      const post = await call(`${service.api}/posts/${postId}`, { key: ws.apiKey });
      expect(post.status).toBe(200);
      expect(post.json).toEqual(expect.objectContaining({ id: postId, content, organizationId: ws.workspaceId }));
      expect(post.json.schedules).toEqual([expect.objectContaining({ status: 'DRAFT', integration: expect.objectContaining({ id: sky.id }) })]);

      // A tool's own refusal passes through as the tool result it is.
      const invalid = await client.callTool({ name: 'getUsage', arguments: { days: 91 } });
      expect(invalid.isError).toBe(true);
      expect(transport.errors).toEqual([]);
    } finally {
      await client.close();
    }
  });

  it('relays a 2026-07-28 client too: stateless requests with their headers, and a listen told of changes, closed when the client cancels it', async () => {
    const proxy = await recordingProxy(service.base);
    const transport = new Recorded(proxy.base, ws.apiKey);
    const client = new Client({ name: 'cli-mcp-test', version: '1.0.0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
    const updated: string[] = [];
    client.setNotificationHandler('notifications/resources/updated', (n) => void updated.push(n.params.uri));
    await client.connect(transport, { timeout: 20_000 });
    try {
      expect(client.getNegotiatedProtocolVersion()).toBe('2026-07-28');
      const me = await client.callTool({ name: 'getCurrentUser', arguments: {} });
      expect(me.structuredContent).toEqual((await call(`${service.api}/users/me`, { key: ws.apiKey })).json);
      const called = proxy.seen.find((request) => request.body.includes('"tools/call"'))!;
      expect(called.headers).toMatchObject({ 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call', 'mcp-name': 'getCurrentUser', 'x-api-key': ws.apiKey });
      expect(called.headers['mcp-session-id']).toBeUndefined();

      const listen = await client.listen({ resourceSubscriptions: ['postwise://events'] });
      const sky = await ws.admin('createIntegration', { platform: 'BLUESKY', name: 'Heard' });
      const draft = await call(`${service.api}/posts`, {
        method: 'POST',
        key: ws.apiKey,
        body: { rows: [{ content: 'Heard through the bridge' }], shared: { selectedIntegrations: [sky.id] }, postAction: 'DRAFT' },
      });
      expect(draft.status, draft.text).toBe(201);
      await eventually(async () => updated, (uris) => uris.includes('postwise://events'), 20_000);
      expect(updated).toContain('postwise://events');
      await listen.close();
      expect(await listen.closed).toBe('local');
      // The bridge closed the listen's HTTP request: the one request cut before its answer ended.
      await eventually(async () => proxy.cut, (cut) => cut.length > 0, 10_000);
      expect(proxy.cut.map((body) => JSON.parse(body).method)).toEqual(['subscriptions/listen']);
      expect(transport.errors).toEqual([]);
    } finally {
      await client.close();
      await proxy.close();
    }
    // Nothing was left waiting for an answer: the bridge exits as soon as its client goes.
    expect(await transport.exited()).toBeDefined();
  });

  it('answers with an error naming no key when the key is wrong', async () => {
    const wrongKey = `${ws.apiKey.slice(0, -6)}zzzzzz`;
    expect(wrongKey).not.toBe(ws.apiKey);

    // Through the SDK's client: initialize fails, and says why.
    const transport = new Recorded(service.base, wrongKey);
    const client = newClient();
    const refusal = await client.connect(transport, { timeout: 20_000 }).then(
      () => undefined,
      (error: Error) => error,
    );
    expect(refusal?.message).toMatch(/401/);
    expect(refusal?.message).toMatch(/API key/);
    await client.close();
    await transport.exited();

    // Over raw stdio: a call without initialize (the server is stateless) is answered too, with the request's id.
    const raw = new Recorded(service.base, wrongKey);
    const answers = new Map<unknown, JSONRPCMessage>();
    raw.onmessage = (message) => void ('id' in message && answers.set(message.id, message));
    await raw.start();
    await raw.send({ jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: 'getCurrentUser', arguments: {} } });
    await eventually(async () => answers.has(7), Boolean, 20_000);
    const answer = answers.get(7) as { error?: { code: number; message: string } } | undefined;
    expect(answer?.error?.code).toBe(-32603);
    expect(answer?.error?.message).toMatch(/HTTP 401/);
    await raw.close();

    for (const run of [transport, raw]) {
      const written = `${run.stdout.join('\n')}\n${run.stderr}`;
      expect(written).not.toContain(wrongKey);
      expect(written).not.toContain(ws.apiKey);
      expect(run.errors).toEqual([]);
    }
    expect(`${refusal?.message}`).not.toContain(wrongKey);
  });

  it('fails initialize at once when the server cannot be reached, and exits when the client closes', async () => {
    const port = await closedPort();
    const transport = new Recorded(`http://127.0.0.1:${port}`, ws.apiKey);
    const client = newClient();
    const started = Date.now();
    // The SDK's own timeout bounds a hang; the bridge's answer must come well before it.
    const failure = await client.connect(transport, { timeout: 15_000 }).then(
      () => undefined,
      (error: Error) => error,
    );
    expect(Date.now() - started).toBeLessThan(15_000);
    expect(failure?.message).toMatch(/could not reach http:\/\/127\.0\.0\.1:\d+\/mcp/);
    expect(failure?.message).toMatch(/ECONNREFUSED/);
    expect(failure?.message).not.toContain(ws.apiKey);

    // The client closes (connect's failure already did); the bridge sees stdin end and exits on its own, before
    // the client's close would resort to SIGTERM (2 s).
    await client.close();
    await transport.close();
    const exitedAt = await transport.exited();
    expect(exitedAt).toBeDefined();
    expect(exitedAt! - transport.closeCalledAt!).toBeLessThan(1900);
    expect(`${transport.stdout.join('\n')}\n${transport.stderr}`).not.toContain(ws.apiKey);
    expect(transport.errors).toEqual([]);
  });
});
