/**
 * The composition root. `npm start` runs the API, MCP and the worker in one process; `npm run api` (--api)
 * and `npm run worker` (--worker) run them apart, against the same DATABASE_URL.
 */
import { join } from 'node:path';
import { bootstrapIfEmpty } from './admin/first-workspace.js';
import { loadConfig } from './process/config.js';
import { firstRunSetupLink } from './auth/sessions.js';
import { createLogger } from './process/logger.js';
import { startService } from './service/start.js';
import { exitOnStartupFailure, orExit } from './process/startup.js';

const args = new Set(process.argv.slice(2));
const roles = args.has('--api') || args.has('--worker') ? { api: args.has('--api'), worker: args.has('--worker') } : { api: true, worker: true };
const config = orExit(loadConfig);
const logger = createLogger(config.logLevel);

// Handlers go first, so a signal during start-up still stops what was started (the embedded Postgres too).
// Repeated signals are ignored: a terminal or a supervisor often sends one to each process of the group,
// and npm passes its own on as well; shutdown bounds itself (DRAIN_MS in src/service/start.ts).
let signalled = false;
const stopSignal = new Promise<NodeJS.Signals>((resolve) => {
  for (const signal of ['SIGTERM', 'SIGINT', 'SIGHUP'] as const) {
    process.on(signal, () => {
      signalled = true;
      resolve(signal);
    });
  }
});

// What was started is stopped again before this rejects (src/service/start.ts), the embedded Postgres included.
const service = await startService(config, logger, roles).catch(exitOnStartupFailure);
if (!signalled) await announce();

const signal = await stopSignal;
logger.info('shutting down', { signal });
await service.stop().then(
  () => process.exit(0),
  (error: unknown) => {
    logger.error('shutdown failed', { error });
    process.exit(1);
  },
);

async function announce() {
  // Not in DATA_DIR (run as root): deleting DATA_DIR leaves it behind, so say where it is.
  const cluster = service.core.relocatedCluster ? [`  cluster    ${service.core.relocatedCluster} (linked from ${join(config.dataDir, 'postgres')})`] : [];
  if (!service.url) return console.log(['Postwise worker running', ...cluster].join('\n'));
  const firstStart = await bootstrapIfEmpty(service.core.db);
  const lines = [
    `Postwise ${roles.worker ? 'API, MCP and worker' : 'API and MCP'} running`,
    `  base URL   ${service.url}/api/v1`,
    `  OpenAPI    ${service.url}/api/v1/openapi.json`,
    `  MCP        ${service.url}/mcp`,
    `  dashboard  ${service.url}/`,
    // The command line's sign-in, ready to paste: the key (or, with --email, a member's password) is read from stdin.
    `  CLI        npx postwise login --base-url ${service.url}`,
    ...cluster,
  ];
  if (firstStart) {
    lines.push(
      '',
      'First start: a workspace was created. Its API key is shown this once and stored only as a hash:',
      `  workspaceId  ${firstStart.workspaceId}`,
      `  userId       ${firstStart.userId}`,
      `  apiKey       ${firstStart.apiKey}`,
    );
  }
  // Until somebody has a password, each start prints a fresh one-time link to set the owner's (src/auth/sessions.ts).
  const setupLink = await firstRunSetupLink(service.core.db, service.core.app.publicUrl);
  if (setupLink) lines.push('', 'Sign in to the dashboard: set the owner\'s password at this one-time link (valid 24 hours):', `  ${setupLink}`);
  console.log(lines.join('\n'));
}
