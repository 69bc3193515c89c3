import type { Server } from 'node:http';
import express from 'express';
import { openCore, type Core } from './core.js';
import { VERSION } from '../process/version.js';
import type { Config } from '../process/config.js';
import { answerClientErrors, createHttpApp } from '../http/app.js';
import { connectPages } from '../http/connect-pages.js';
import { dashboardPages } from '../http/dashboard.js';
import { forgeryRefusal, sessionOf, sessionRoutes } from '../http/sign-in.js';
import { openApiDocument } from '../http/openapi.js';
import type { Logger } from '../process/logger.js';
import { connectMcpOverHttp, mcpOriginGuard, principalOfHttpCall } from '../mcp/http.js';
import { createMcpServer } from '../mcp/server.js';
import { StartupError } from '../process/startup.js';
import { authorizationServer } from '../oauth/provider.js';
import { bearerAuthenticator, noCredentialsChallenge } from '../oauth/bearer.js';
import { oauthOffered } from '../oauth/resource.js';
import { oauthRoutes } from '../http/oauth.js';
import { startWorker, type Worker } from '../worker/index.js';

export interface Service {
  core: Core;
  /** The base URL, when this process serves HTTP. */
  url: string | undefined;
  /** Stops accepting, lets in-flight requests and jobs finish, then closes the database (and an embedded one). */
  stop(): Promise<void>;
}

/** How long shutdown waits for in-flight requests before it closes their connections. */
const DRAIN_MS = 10_000;

export async function startService(config: Config, logger: Logger, roles: { api: boolean; worker: boolean }): Promise<Service> {
  const core = await openCore(config, logger);
  let server: Server | undefined;
  let runner: Worker | undefined;
  /** Run as the server stops, before it waits for its connections: what would hold one open (MCP notification streams). */
  const beforeClose: (() => void)[] = [];
  try {
    if (roles.api) server = await serveHttp(core, config, beforeClose);
    const address = server?.address();
    // Without PUBLIC_URL, the links this service hands out point where it listens (the port may have been 0).
    if (!config.publicUrl && address && typeof address === 'object') core.app.publicUrl = `http://${config.host}:${address.port}`;
    if (roles.worker) runner = await startWorker(core.app, core.databaseUrl);
  } catch (error) {
    await closeServer(server);
    await core.close();
    throw error;
  }
  const address = server?.address();
  return {
    core,
    url: address && typeof address === 'object' ? `http://${config.host}:${address.port}` : undefined,
    async stop() {
      for (const close of beforeClose) close();
      await closeServer(server);
      await runner?.stop();
      await core.close();
    },
  };
}

async function serveHttp(core: Core, config: Config, beforeClose: (() => void)[]): Promise<Server> {
  // The MCP server and the OpenAPI document are built once here, never per request.
  const mcpServer = createMcpServer(core.operations, core.pipeline, principalOfHttpCall, core.app.db);
  const mcp = await connectMcpOverHttp(mcpServer, { db: core.app.db, logger: core.app.logger, rateLimitOf: (principal) => core.pipeline.rateLimitOf(principal) });
  beforeClose.push(mcp.close);
  const publicUrl = () => core.app.publicUrl;
  const pages = express.Router();
  const oauth = oauthOffered(config.publicUrl ?? `http://${config.host}`)
    ? authorizationServer({ db: core.app.db, logger: core.app.logger, secrets: core.app.secrets, publicUrl, trustProxy: Boolean(config.trustProxy), allowHosts: config.mediaFetchAllowHosts, accessTokenSeconds: config.oauthAccessTokenSeconds })
    : undefined;
  if (oauth) {
    pages.use(oauthRoutes({
      db: core.app.db,
      server: oauth,
      publicUrl,
      sessionOf: (req) => sessionOf(core.app.db, req),
      forgeryRefusal: (req, session) => forgeryRefusal(req, publicUrl(), session),
    }));
  } else {
    core.app.logger.info('OAuth for hosted agents is off: it needs PUBLIC_URL on https (or the service on a loopback address); API keys work as always');
  }
  pages.use(sessionRoutes({ db: core.app.db, publicUrl }), connectPages(core.app), await dashboardPages(core.app));
  const bearer = oauth && bearerAuthenticator(core.app.db, oauth, publicUrl);
  const app = createHttpApp({
    authenticateKey: core.authenticate,
    authenticateSession: (req) => sessionOf(core.app.db, req),
    forgeryRefusal: (req, session) => forgeryRefusal(req, publicUrl(), session),
    trustProxy: config.trustProxy,
    logger: core.app.logger,
    operations: core.operations,
    pipeline: core.pipeline,
    openApiJson: JSON.stringify(openApiDocument(core.operations, VERSION)),
    mcp,
    oauth: bearer && {
      authenticate: (header, surface) => bearer(header, surface),
      challenge: (surface) => noCredentialsChallenge(publicUrl(), surface),
    },
    mcpGuard: mcpOriginGuard({
      bindHost: config.host,
      publicUrl,
      configuredPublicUrl: config.publicUrl,
      allowedOrigins: config.allowedOrigins,
    }),
    pages,
  });
  return new Promise((resolve, reject) => {
    const server = app.listen(config.port, config.host, (error?: Error) => (error ? reject(listenFailure(error, config)) : resolve(server)));
    answerClientErrors(server);
  });
}

/** Why the port could not be had, in the words of the variables that set it. */
function listenFailure(error: Error, config: Config): Error {
  const code = (error as NodeJS.ErrnoException).code;
  if (code === 'EADDRINUSE') return new StartupError(`PORT ${config.port} is in use on ${config.host}; set PORT to a free port (or 0 for any)`);
  if (code === 'EACCES') return new StartupError(`PORT ${config.port} needs privileges this user lacks; set PORT to 1024 or above`);
  if (code === 'EADDRNOTAVAIL' || code === 'ENOTFOUND') return new StartupError(`HOST ${config.host} is not an address of this machine; set HOST (127.0.0.1, or 0.0.0.0 for all)`);
  return error;
}

function closeServer(server: Server | undefined): Promise<void> {
  if (!server?.listening) return Promise.resolve();
  return new Promise((resolve) => {
    const force = setTimeout(() => server.closeAllConnections(), DRAIN_MS).unref();
    server.close(() => {
      clearTimeout(force);
      resolve();
    });
    server.closeIdleConnections();
  });
}
