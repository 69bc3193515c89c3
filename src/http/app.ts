import type { Server } from 'node:http';
import type { Duplex } from 'node:stream';
import express, { type NextFunction, type Request, type RequestHandler, type Response } from 'express';
import { parse as parseQuery } from 'qs';
import type { Authenticate } from '../auth/api-keys.js';
import type { Logger } from '../process/logger.js';
import type { Principal } from '../auth/principal.js';
import type { SessionPrincipal } from '../auth/sessions.js';
import { INTERNAL_MESSAGE, NOT_FOUND_MESSAGE, statusOf, type ErrorCode } from '../registry/errors.js';
import type { Operation } from '../registry/operation.js';
import type { Outcome, Pipeline } from '../registry/pipeline.js';
import type { Surface } from '../registry/usage.js';
import type { BearerOutcome } from '../oauth/bearer.js';
import { sendJson } from './json.js';
import { retryAfterSeconds, setRateLimitHeaders } from './rate-limit-headers.js';

export interface HttpDependencies {
  authenticateKey: Authenticate;
  /** The dashboard session a request's cookie names (src/http/sign-in.ts), for calls without a key. */
  authenticateSession: (req: Request) => Promise<SessionPrincipal | null>;
  /** Why a session's request may not act (cross-site, or without its csrf token), or null. */
  forgeryRefusal: (req: Request, session: SessionPrincipal) => string | null;
  logger: Logger;
  operations: readonly Operation[];
  pipeline: Pipeline;
  /** The OpenAPI document, serialized once. */
  openApiJson: string;
  /** POST /mcp; GET /mcp (a session's notification stream) and DELETE /mcp (its end), from src/mcp. */
  mcp: { post: RequestHandler; stream: RequestHandler; end: RequestHandler };
  /** What every request to /mcp passes first, before its key is read (src/mcp/http.ts: mcpOriginGuard). */
  mcpGuard: RequestHandler;
  /** TRUST_PROXY (src/process/config.ts). */
  trustProxy: boolean | number | string;
  /**
   * OAuth (src/oauth), where the service offers it (HTTPS, or a loopback address): a bearer token's caller, and the
   * challenge a 401 carries (where to find the authorization server). Without it, only keys and sessions.
   */
  oauth?: { authenticate(header: string, surface: Surface): Promise<BearerOutcome>; challenge(surface: Surface): string };
  /** Pages outside /api/v1 and the registry (the dashboard, its sign-in endpoints, the connect pages), served as they are. */
  pages?: RequestHandler;
}

const BODY_LIMIT = '1mb';
const KEY_REQUIRED = 'A valid API key is required in the x-api-key header';
const KEY_OR_TOKEN_REQUIRED = `${KEY_REQUIRED}, or an OAuth access token (Authorization: Bearer; the WWW-Authenticate header says where to get one)`;

/**
 * REST under /api/v1 and MCP at /mcp, both generated from the registry. Order matters: authentication comes
 * before body parsing and routing, so a caller without a valid key learns nothing about what exists.
 */
export function createHttpApp({ authenticateKey, authenticateSession, forgeryRefusal, trustProxy, logger, operations, pipeline, openApiJson, mcp, mcpGuard, oauth, pages }: HttpDependencies) {
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  app.set('trust proxy', trustProxy);
  // Repeated keys make arrays and `a[b]=c` makes objects (see src/registry/text-input.ts for the rest);
  // qs refuses keys that would reach Object.prototype, and the bounds keep a query cheap to read.
  app.set('query parser', (query: string) => parseQuery(query, { depth: 2, arrayLimit: 100, parameterLimit: 1000 }));

  /**
   * Puts the caller and the surface in `res.locals`, or answers 401. A request with `x-api-key` is judged by its key
   * alone; else one with `Authorization: Bearer` by its OAuth access token alone (for this surface's resource); REST
   * without either may come from a dashboard session (its cookie), whose state-changing requests must also pass the
   * forgery check. A 401 says, in its header, where an OAuth client gets a token, and in words that a key works too.
   */
  const authenticate =
    (surface: Surface): RequestHandler =>
    async (req, res, next) => {
      const key = req.header('x-api-key');
      const authorization = key === undefined ? req.header('authorization') : undefined;
      let session: SessionPrincipal | null = null;
      let principal: Principal | null;
      if (oauth && authorization !== undefined && /^bearer\s/i.test(authorization)) {
        const outcome = await oauth.authenticate(authorization, surface);
        if ('challenge' in outcome) {
          res.set('www-authenticate', outcome.challenge);
          return void sendError(res, 'UNAUTHORIZED', `${outcome.description}. ${KEY_OR_TOKEN_REQUIRED}`);
        }
        principal = outcome.principal;
      } else {
        session = key === undefined && surface === 'api' ? await authenticateSession(req) : null;
        principal = session ?? (await authenticateKey(key));
      }
      if (!principal) {
        if (!oauth) return void sendError(res, 'UNAUTHORIZED', KEY_REQUIRED);
        res.set('www-authenticate', oauth.challenge(surface));
        return void sendError(res, 'UNAUTHORIZED', KEY_OR_TOKEN_REQUIRED);
      }
      const refusal = session && forgeryRefusal(req, session);
      if (refusal) return void sendError(res, 'CSRF_REJECTED', refusal);
      res.locals.principal = principal;
      res.locals.surface = surface;
      next();
    };
  const readJson = express.json({ limit: BODY_LIMIT, strict: false });
  /** Reads a JSON body for the methods that carry one, on every path alike, so how a body is refused reveals no route. */
  const readBody: RequestHandler = (req, res, next) => {
    if (req.method === 'GET' || req.method === 'HEAD') return next();
    const hasBody = req.headers['transfer-encoding'] !== undefined || Number(req.headers['content-length'] ?? 0) > 0;
    if (hasBody && !req.is('application/json')) return next(new Refusal('UNSUPPORTED_MEDIA_TYPE', 'The request body must be application/json'));
    readJson(req, res, next);
  };

  app.get('/api/v1/openapi.json', (_req, res) => {
    res.type('application/json').send(openApiJson);
  });

  // The key is checked before any route is matched: matching decodes path parameters, and how that fails
  // must not tell a caller without a key which paths exist.
  app.use('/api/v1', authenticate('api'));
  // A router for each first segment (/posts, /tags...): a request is matched against its own resource's few routes,
  // not against every operation's in turn (that walk was a measurable part of a call's CPU: docs/benchmarks.md).
  const routers = new Map<string, express.Router>();
  for (const operation of routeOrder(operations)) {
    const resource = operation.path.split('/')[1]!;
    let router = routers.get(resource);
    if (!router) {
      routers.set(resource, (router = express.Router()));
      app.use(`/api/v1/${resource}`, router);
    }
    const route = operation.path.slice(resource.length + 1).replace(/\{(\w+)\}/g, ':$1') || '/';
    router[operation.method.toLowerCase() as 'get'](route, readBody, async (req: Request, res: Response) => {
      send(res, await pipeline.run({
        operation,
        principal: res.locals.principal as Principal,
        surface: 'api',
        input: { kind: 'parts', path: req.params, query: req.query, body: req.body, idempotencyKey: req.header('idempotency-key') },
      }));
    });
  }
  app.use('/api/v1', readBody, async (_req: Request, res: Response) => {
    send(res, await pipeline.run({ operation: undefined, principal: res.locals.principal as Principal, surface: 'api', input: { kind: 'arguments', value: {} } }));
  });

  app.use('/mcp', mcpGuard);
  app.post('/mcp', authenticate('mcp'), readBody, mcp.post);
  app.get('/mcp', authenticate('mcp'), mcp.stream);
  app.delete('/mcp', authenticate('mcp'), mcp.end);
  app.all('/mcp', authenticate('mcp'), (_req, res) => {
    sendJson(res.set('allow', 'POST'), 405, { jsonrpc: '2.0', error: { code: -32000, message: 'Method not allowed: POST /mcp, and GET or DELETE with an Mcp-Session-Id' }, id: null });
  });

  if (pages) app.use(pages);
  app.use((_req: Request, res: Response) => sendError(res, 'NOT_FOUND', NOT_FOUND_MESSAGE));
  app.use(async (error: unknown, req: Request, res: Response, _next: NextFunction) => {
    const refusal = requestRefusal(error);
    const principal = res.locals.principal as Principal | undefined;
    const surface = res.locals.surface as Surface | undefined;
    if (refusal && principal && surface) {
      // Answered (and counted) as the pipeline answers everything else, in the surface's own shape.
      const outcome = await pipeline.refuse(principal, surface, refusal.code, refusal.message);
      if (surface === 'api') return send(res, outcome);
      setRateLimitHeaders(res, outcome.rateLimit);
      const { code, message } = outcome.body as { code: ErrorCode; message: string };
      return sendJson(res, outcome.status, { jsonrpc: '2.0', error: { code: code === 'RATE_LIMITED' ? -32000 : -32700, message }, id: null });
    }
    if (refusal) return sendError(res, refusal.code, refusal.message);
    logger.error('request failed', { method: req.method, path: req.path, error });
    if (res.headersSent) return void res.end();
    sendError(res, 'INTERNAL', INTERNAL_MESSAGE);
  });
  return app;
}

/** Node's limit on the request line and headers together (its default `maxHeaderSize`), in the error message. */
const HEADER_LIMIT = '16 KiB';

/**
 * Node answers a request line and headers over its limit with a bare 431 and drops the connection; this
 * answers with the error body every operation declares, and reads what the client still sends before
 * closing, so the answer is not lost to a reset. Other unreadable requests are not HTTP, and are closed.
 */
export function answerClientErrors(server: Server) {
  server.on('clientError', (error: NodeJS.ErrnoException, socket: Duplex) => {
    if (!socket.writable) return void socket.destroy();
    if (error.code !== 'HPE_HEADER_OVERFLOW') return void socket.end('HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n');
    const body = JSON.stringify({
      code: 'REQUEST_HEADERS_TOO_LARGE',
      message: `The request line and headers together exceed ${HEADER_LIMIT}; send long values in a JSON body, or fewer query parameters`,
    });
    socket.end(
      `HTTP/1.1 431 Request Header Fields Too Large\r\nContent-Type: application/json; charset=utf-8\r\n` +
        `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
    socket.resume();
    setTimeout(() => socket.destroy(), 5000).unref();
  });
}

function send(res: Response, outcome: Outcome) {
  setRateLimitHeaders(res, outcome.rateLimit);
  if (outcome.rateLimit && !outcome.ok && outcome.body.code === 'RATE_LIMITED') res.set('Retry-After', retryAfterSeconds(outcome.rateLimit));
  sendJson(res, outcome.status, outcome.body);
}

function sendError(res: Response, code: ErrorCode, message: string) {
  sendJson(res, statusOf(code), { code, message });
}

class Refusal extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
  ) {
    super(message);
  }
}

/**
 * The 4xx answer for a request that could not be read: a body refused by our check or by Express's JSON
 * parser, or a path whose escapes do not decode (it can name nothing, so it is the generic 404).
 */
function requestRefusal(error: unknown): Refusal | undefined {
  if (error instanceof Refusal) return error;
  if (error instanceof URIError) return new Refusal('NOT_FOUND', NOT_FOUND_MESSAGE);
  const { type, status } = (error ?? {}) as { type?: string; status?: number };
  if (type === 'encoding.unsupported' || type === 'charset.unsupported' || status === 415) {
    return new Refusal('UNSUPPORTED_MEDIA_TYPE', 'The request body must be UTF-8 JSON, uncompressed or gzip, deflate or br');
  }
  if (type === 'entity.too.large' || status === 413) return new Refusal('PAYLOAD_TOO_LARGE', `The request body is larger than ${BODY_LIMIT}`);
  if (type === 'entity.parse.failed') return new Refusal('INVALID_JSON', 'The request body is not valid JSON');
  if (typeof status === 'number' && status >= 400 && status < 500) {
    return new Refusal('INVALID_JSON', 'The request body could not be read (is its Content-Encoding right?)');
  }
  return undefined;
}

/** Literal path segments before parameters, so `/tags/{id}` can never shadow a later `/tags/search`. */
function routeOrder(operations: readonly Operation[]): Operation[] {
  const rank = (path: string) => path.split('/').map((segment) => (segment.startsWith('{') ? '1' : '0')).join('');
  return [...operations].sort((a, b) => rank(a.path).localeCompare(rank(b.path)));
}
