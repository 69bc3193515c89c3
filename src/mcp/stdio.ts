/**
 * `npm run mcp:stdio`: the same tools over stdio, for MCP clients that launch their servers as processes.
 * The key comes from POSTWISE_API_KEY and is checked on every call, so a revocation counts at once.
 * The database is DATABASE_URL, or the embedded Postgres under DATA_DIR (joined when a server runs it).
 * Only MCP messages go to stdout; logs go to stderr.
 */
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { loadConfig } from '../process/config.js';
import { openCore } from '../service/core.js';
import { createLogger } from '../process/logger.js';
import { exitOnStartupFailure, orExit } from '../process/startup.js';
import { createMcpServer, invalidParams, withoutTask } from './server.js';
import { newSessionId, NotificationStreams } from './subscriptions.js';

const apiKey = process.env.POSTWISE_API_KEY;
if (!apiKey) {
  console.error('Set POSTWISE_API_KEY to an API key of the workspace (npm run admin -- create-key ...).');
  process.exit(2);
}

const config = orExit(loadConfig);
const logger = createLogger(config.logLevel === 'info' ? 'warn' : config.logLevel);
const core = await openCore(config, logger).catch(exitOnStartupFailure);
// One session for the process: its subscriptions are announced as notifications on stdout from the first subscribe on.
const session = newSessionId();
const streams = new NotificationStreams(core.app.db, logger);
let announcing = false;
const { server } = createMcpServer(core.operations, core.pipeline, () => core.authenticate(apiKey), core.app.db, {
  sessionOf: () => session,
  onSubscribed: async (sessionId, principal) => {
    if (announcing) return;
    announcing = true;
    await streams.attach(sessionId, principal, {
      send: (uri) => void server.notification({ method: 'notifications/resources/updated', params: { uri } }),
      end: () => {},
    });
  },
});
const transport = new StdioServerTransport();

let closing = false;
const shutdown = async () => {
  if (closing) return;
  closing = true;
  streams.closeAll();
  await core.app.db`DELETE FROM mcp_subscriptions WHERE session_id = ${session}`.catch(() => undefined);
  await server.close();
  await core.close();
  process.exit(0);
};
transport.onclose = () => void shutdown();
process.stdin.on('end', () => void shutdown());
for (const signal of ['SIGTERM', 'SIGINT'] as const) process.on(signal, () => void shutdown());
await server.connect(transport);
// Requests whose params the SDK would refuse as an internal error are answered here, as over HTTP; a tool call's task
// metadata is dropped, as the HTTP transport ignores it.
const deliver = transport.onmessage!;
transport.onmessage = (message) => {
  const refused = invalidParams(message);
  if (refused) void transport.send(refused);
  else deliver(withoutTask(message));
};
