/**
 * `npm run mcp:stdio`: the same tools over stdio, for MCP clients that launch their servers as processes.
 * The key comes from POSTWISE_API_KEY and is checked on every call, so a revocation counts at once.
 * The database is DATABASE_URL, or the embedded Postgres under DATA_DIR (joined when a server runs it).
 * Only MCP messages go to stdout; logs go to stderr.
 *
 * Both protocols, as over HTTP: the client's first message chooses for the whole connection (the SDK's serveStdio).
 * A 2025 client's `initialize` begins the process's one session, whose subscriptions are announced from its first
 * subscribe on; a 2026-07-28 client listens (`subscriptions/listen`) and is told of its workspace's changes.
 */
import type { JSONRPCMessage, Server, Transport } from '@modelcontextprotocol/server';
import { serveStdio, StdioServerTransport } from '@modelcontextprotocol/server/stdio';
import { loadConfig } from '../process/config.js';
import { openCore } from '../service/core.js';
import { createLogger } from '../process/logger.js';
import { exitOnStartupFailure, orExit } from '../process/startup.js';
import { createMcpServer, in2025Words, invalidParams, type Era } from './server.js';
import { newSessionId, NotificationStreams } from './subscriptions.js';

const apiKey = process.env.POSTWISE_API_KEY;
if (!apiKey) {
  console.error('Set POSTWISE_API_KEY to an API key of the workspace (npm run admin -- create-key ...).');
  process.exit(2);
}

const config = orExit(loadConfig);
const logger = createLogger(config.logLevel === 'info' ? 'warn' : config.logLevel);
const core = await openCore(config, logger).catch(exitOnStartupFailure);
const principal = () => core.authenticate(apiKey);
const session = newSessionId();
const streams = new NotificationStreams(core.app.db, logger);
/** The server the connection is pinned to, and its protocol, once the client's first message has chosen them. */
let server: Server | undefined;
let era: Era | undefined;
let announcing = false;
/**
 * From the first subscribe (2025) or the first listen the SDK acknowledged (2026) on, the workspace's changes become
 * notifications on stdout: for a 2025 session those it subscribed to, for 2026 every one, which the SDK's listen router
 * sends to the listens that asked for it.
 */
const announce = async (sessionId: string | undefined) => {
  const caller = await principal();
  if (announcing || !caller) return;
  announcing = true;
  streams.attach(sessionId, caller, { send: (uri) => void server?.sendResourceUpdated({ uri }), end: () => {} });
};
const announceListens = () => void announce(undefined).catch((error: unknown) => logger.warn('could not start MCP notifications', { error }));
const mcp = createMcpServer(core.operations, core.pipeline, principal, core.app.db, {
  sessionOf: () => session,
  onSubscribed: (sessionId) => announce(sessionId),
});

/**
 * The SDK's stdio transport, with what the HTTP transport does too: requests whose params break the SDK's schema are
 * answered here in words that name the field (invalidParams: every 2025 request, a 2026 tools/call), a 2025 client
 * gets -32002 for a missing resource, and an acknowledged listen starts the announcements.
 */
class Stdio implements Transport {
  private readonly inner = new StdioServerTransport();
  onclose?: Transport['onclose'];
  onerror?: Transport['onerror'];

  constructor(private readonly onEnd: () => void) {}

  set onmessage(deliver: Transport['onmessage']) {
    this.inner.onmessage = (message) => {
      // Every request of a 2025 connection (and a first message, before the SDK has chosen), and a 2026 tools/call.
      const refused = era !== 'modern' || ('method' in message && message.method === 'tools/call') ? invalidParams(message) : undefined;
      if (refused) return void this.inner.send(refused);
      deliver?.(message);
    };
  }

  async start() {
    this.inner.onclose = () => {
      this.onclose?.();
      this.onEnd();
    };
    this.inner.onerror = (error) => this.onerror?.(error);
    await this.inner.start();
  }
  send(message: JSONRPCMessage) {
    // Only the SDK's listen router acknowledges a listen, and only on a 2026 connection.
    if ('method' in message && message.method === 'notifications/subscriptions/acknowledged') announceListens();
    return this.inner.send(era === 'legacy' ? in2025Words(message) : message);
  }
  close() {
    return this.inner.close();
  }
}

const transport = new Stdio(() => void shutdown());
const handle = serveStdio(
  (context) => {
    era = context.era;
    return (server = mcp.serverFor(context.era));
  },
  { legacy: 'serve', transport, onerror: (error) => logger.warn('MCP over stdio', { error: error.message }) },
);

let closing = false;
const shutdown = async () => {
  if (closing) return;
  closing = true;
  streams.closeAll();
  await core.app.db`DELETE FROM mcp_subscriptions WHERE session_id = ${session}`.catch(() => undefined);
  await handle.close();
  await core.close();
  process.exit(0);
};
process.stdin.on('end', () => void shutdown());
for (const signal of ['SIGTERM', 'SIGINT'] as const) process.on(signal, () => void shutdown());
