import { Readable } from 'node:stream';
import type { ReadableStream as WebReadableStream } from 'node:stream/web';
import {
  createMcpHandler,
  isJSONRPCErrorResponse,
  isJSONRPCNotification,
  isJSONRPCRequest,
  isJSONRPCResultResponse,
  classifyInboundRequest,
  isLegacyRequest,
  PROTOCOL_VERSION_META_KEY,
  SERVER_INFO_META_KEY,
  ProtocolErrorCode,
  SUPPORTED_PROTOCOL_VERSIONS,
  validateHostHeader,
  type CallToolRequest,
  type JSONRPCErrorResponse,
  type JSONRPCMessage,
  type RequestId,
  type Transport,
} from '@modelcontextprotocol/server';
import { toWebRequest } from '@modelcontextprotocol/node';
import type { Request, RequestHandler, Response } from 'express';
import ipaddr from 'ipaddr.js';
import { sendJson, sendJsonText } from '../http/json.js';
import { setRateLimitHeaders } from '../http/rate-limit-headers.js';
import type { Logger } from '../process/logger.js';
import type { Principal } from '../auth/principal.js';
import type { RateLimitState } from '../registry/rate-limit.js';
import type { Database } from '../db/index.js';
import { in2025Words, invalidParams, MODERN_VERSION, SERVER_INFO, type CallTool, type McpServer, type PrincipalOf } from './server.js';
import { endSession, isSessionId, newSessionId, NotificationStreams, WorkspaceEventBus } from './subscriptions.js';

type Reply = (message: JSONRPCMessage | undefined) => void;

/** Open 2026 listens a workspace may hold on one process (the SDK's limit, 1024, is for all of them together). */
const LISTENS_PER_WORKSPACE = 32;

/**
 * Streamable HTTP for 2025 clients, stateless, answered as JSON. The SDK's own transport must be built anew, with a
 * new server, for every request in stateless mode, and that setup costs more than the call it serves. Here one
 * long-lived server is connected to this transport, which hands it each HTTP request's messages under ids
 * of its own (so concurrent clients' ids cannot collide) and routes each response back to its request.
 *
 * A tools/call is answered by the server's tool handler directly: the SDK would check the message's type three times
 * more, parse the request and the result again and give the call an AbortController, a good part of what MCP adds to
 * a call over REST (docs/benchmarks.md), for the same answer. invalidParams has checked its params with the SDK's
 * schema by then; task metadata (`params.task`) is ignored, as a server that declares no tasks must.
 */
class RequestTransport implements Transport {
  onmessage?: Transport['onmessage'];
  onclose?: () => void;
  onerror?: (error: Error) => void;
  private lastId = 0;
  private readonly waiting = new Map<RequestId, Reply>();

  constructor(private readonly callTool: CallTool) {}

  async start() {}
  async close() {
    this.onclose?.();
  }

  /** Responses go to the HTTP request that waits for them; a stateless server has nowhere to send anything else. */
  async send(message: JSONRPCMessage) {
    if ('id' in message && !('method' in message)) this.settle(message.id as RequestId, in2025Words(message));
  }

  /**
   * Hands one HTTP request's messages to the server: `answers` resolves with the responses to its requests. A
   * client can cancel only requests of its own HTTP request (ids are its own there); `abandon`, for a client
   * that went away, cancels what is still running, so nothing waits for an answer no one will read.
   */
  exchange(messages: JSONRPCMessage[], principal: Principal, sessionId: string | undefined): { answers: Promise<JSONRPCMessage[]>; abandon: () => void } {
    const authInfo = authInfoOf(principal, sessionId);
    const ours = new Map<RequestId, number>();
    const replies: Promise<JSONRPCMessage | undefined>[] = [];
    for (const message of messages) {
      const refused = invalidParams(message);
      if (refused) {
        replies.push(Promise.resolve(refused));
      } else if ('method' in message && 'id' in message) {
        const id = ++this.lastId;
        ours.set(message.id, id);
        replies.push(new Promise((resolve) => this.waiting.set(id, (reply) => resolve(reply && ({ ...reply, id: message.id } as JSONRPCMessage)))));
        if (message.method === 'tools/call') {
          this.callTool(message.params as CallToolRequest['params'], authInfo).then(
            (result) => this.settle(id, { jsonrpc: '2.0', id, result }),
            (error: { code?: unknown; message?: string; data?: unknown }) => this.settle(id, errorResponse(id, error)),
          );
        } else {
          this.onmessage?.({ ...message, id }, { authInfo });
        }
      } else if ('method' in message && message.method === 'notifications/cancelled') {
        const { requestId, reason } = (message.params ?? {}) as { requestId?: RequestId; reason?: unknown };
        const id = requestId === undefined ? undefined : ours.get(requestId);
        if (id !== undefined) this.cancel(id, typeof reason === 'string' ? reason : undefined);
      } else if ('method' in message) {
        this.onmessage?.(message, { authInfo });
      }
      // A response from the client answers nothing: this server never asks clients anything.
    }
    return {
      answers: Promise.all(replies).then((answered) => answered.filter((reply) => reply !== undefined)),
      abandon: () => ours.forEach((id) => this.cancel(id, 'the HTTP client went away')),
    };
  }

  private cancel(id: number, reason = 'cancelled by the client') {
    if (!this.waiting.has(id)) return;
    this.onmessage?.({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: id, reason } });
    this.settle(id, undefined);
  }

  private settle(id: RequestId, message: JSONRPCMessage | undefined) {
    const reply = this.waiting.get(id);
    this.waiting.delete(id);
    reply?.(message);
  }
}

/** A handler's failure as the SDK's Protocol answers it: its code when it has one, else an internal error. */
function errorResponse(id: RequestId, error: { code?: unknown; message?: string; data?: unknown }): JSONRPCErrorResponse {
  const code = Number.isSafeInteger(error.code) ? (error.code as number) : ProtocolErrorCode.InternalError;
  return { jsonrpc: '2.0', id, error: { code, message: error.message ?? 'Internal error', ...(error.data !== undefined && { data: error.data }) } };
}

/**
 * Exactly what the SDK's server will take: anything else it would drop without an answer, leaving the HTTP
 * request waiting, so it is refused here at once.
 */
const isMessage = (value: unknown): value is JSONRPCMessage =>
  isJSONRPCRequest(value) || isJSONRPCNotification(value) || isJSONRPCResultResponse(value) || isJSONRPCErrorResponse(value);

/** Request ids must be unique within one HTTP request, or responses and cancellations could not be told apart. */
function uniqueIds(messages: JSONRPCMessage[]): boolean {
  const ids = messages.filter((message) => 'method' in message && 'id' in message).map((message) => (message as { id: RequestId }).id);
  return new Set(ids).size === ids.length;
}

/**
 * The JSON text of an answer. A tool's result carries its answer twice, as `structuredContent` and as that object's
 * JSON text in `content` (the specification's advice, for clients that read only text: src/mcp/server.ts makes both
 * from one body), so the object is written as that text instead of being serialised a second time (a third of what
 * a page of posts took to serialise: docs/benchmarks.md).
 */
function answerText(message: JSONRPCMessage): string {
  const result = 'result' in message ? (message.result as { structuredContent?: unknown; content?: { type: string; text?: string }[] }) : undefined;
  const [only, ...more] = result?.content ?? [];
  if (!result?.structuredContent || only?.type !== 'text' || typeof only.text !== 'string' || more.length) return JSON.stringify(message);
  const { structuredContent: _written, ...rest } = result;
  const withoutIt = JSON.stringify(rest);
  return `{"jsonrpc":"2.0","id":${JSON.stringify((message as { id: RequestId }).id)},"result":${withoutIt.slice(0, -1)},"structuredContent":${only.text}}}`;
}

/**
 * Whether a POST might be a 2026-07-28 request: its body (or a message of its batch) claims a version in `_meta`, or
 * its MCP-Protocol-Version header is not one of 2025's. A request that is neither is a 2025 one, as the SDK's own
 * isLegacyRequest would say; the rest are asked of it. This spares a 2025 call the web Request the SDK's check needs
 * (it tripled the cost of a small call: docs/benchmarks.md).
 */
function mayBe2026(req: Request): boolean {
  const version = req.header('mcp-protocol-version');
  if (version !== undefined && !SUPPORTED_PROTOCOL_VERSIONS.includes(version)) return true;
  const claims = (message: unknown) => {
    const meta = (message as { params?: { _meta?: Record<string, unknown> } } | null)?.params?._meta;
    return typeof meta === 'object' && meta !== null && PROTOCOL_VERSION_META_KEY in meta;
  };
  return Array.isArray(req.body) ? req.body.some(claims) : claims(req.body);
}

/**
 * A 2026-07-28 tools/call the SDK would dispatch: its own classifier finds the envelope well formed and the revision
 * the one served, and the version, method and name headers equal the body (the check the SDK makes next). Anything
 * else is undefined, and the SDK answers it, refusals included. Params the SDK's schema would refuse are `refused`
 * here in words that name the field, as for a 2025 client, where the SDK would refuse them next.
 */
function plain2026ToolCall(req: Request): { params: CallToolRequest['params']; id: RequestId; refused: JSONRPCErrorResponse | undefined } | undefined {
  const route = classifyInboundRequest({
    httpMethod: 'POST',
    protocolVersionHeader: req.header('mcp-protocol-version'),
    mcpMethodHeader: req.header('mcp-method'),
    mcpNameHeader: req.header('mcp-name'),
    body: req.body,
  });
  if (route.kind !== 'modern' || route.messageKind !== 'request' || route.classification.revision !== MODERN_VERSION) return undefined;
  const { message } = route;
  const name = message.params?.name;
  if (message.method !== 'tools/call' || typeof name !== 'string') return undefined;
  if (req.header('mcp-protocol-version') !== MODERN_VERSION || req.header('mcp-method') !== 'tools/call' || req.header('mcp-name') !== name) return undefined;
  return { params: message.params as CallToolRequest['params'], id: message.id, refused: invalidParams(message) };
}

/** What the SDK carries to a handler of who calls (`ctx.http.authInfo`): the key was checked before, so no token. */
/** What the SDK carries of the caller (the token itself is never handed on): a connected app's name and scopes, else the kind. */
const authInfoOf = (principal: Principal, sessionId?: string) => ({
  token: '',
  clientId: principal.kind === 'connection' ? principal.appName : principal.kind,
  scopes: principal.kind === 'connection' ? [...principal.scopes] : [],
  extra: { principal, sessionId },
});

/** Who makes a tool call that came over HTTP: the transport hands the authenticated principal along. */
export const principalOfHttpCall: PrincipalOf = async (authInfo) => (authInfo?.extra?.principal as Principal | undefined) ?? null;

const rpcError = (res: Response, status: number, code: number, message: string) => sendJson(res, status, { jsonrpc: '2.0', error: { code, message }, id: null });

/** The names a loopback address goes by in a URL. */
const LOOPBACK_HOSTNAMES = ['localhost', '127.0.0.1', '[::1]'];

const isLoopback = (host: string) => host === 'localhost' || (ipaddr.isValid(host) && ipaddr.parse(host).range() === 'loopback');

/**
 * DNS-rebinding protection for /mcp, as the Streamable HTTP transport requires, before the key is read: a request
 * whose `Origin` is neither the public URL's origin nor in ALLOWED_ORIGINS is refused with 403 (a request without
 * `Origin`, as non-browser clients send, is served). On a loopback bind, a page of a loopback origin (any port) is
 * also allowed, and a `Host` that is neither a loopback name, the bound address nor the public URL's
 * host (a name rebound to 127.0.0.1) is refused with 403 as well (the SDK's own check).
 */
export function mcpOriginGuard({ bindHost, publicUrl, configuredPublicUrl, allowedOrigins }: {
  bindHost: string;
  /** The public URL as it stands when a request comes (with PORT=0, known only once listening). */
  publicUrl: () => string;
  /** PUBLIC_URL, if set. */
  configuredPublicUrl: string | undefined;
  allowedOrigins: string[];
}): RequestHandler {
  const loopback = isLoopback(bindHost);
  const boundName = ipaddr.isValid(bindHost) && ipaddr.parse(bindHost).kind() === 'ipv6' ? `[${bindHost}]` : bindHost;
  const hostnames = loopback ? [...new Set([...LOOPBACK_HOSTNAMES, boundName, ...(configuredPublicUrl ? [new URL(configuredPublicUrl).hostname] : [])])] : undefined;
  const allowed = (origin: string) => {
    let url: URL;
    try {
      url = new URL(origin);
    } catch {
      return false; // `null` (a sandboxed page, a file) among others
    }
    if (url.origin === new URL(publicUrl()).origin || allowedOrigins.includes(url.origin)) return true;
    // A page served from this machine is no rebound name: loopback origins pass on any port, as the SDK's Host check does.
    return loopback && LOOPBACK_HOSTNAMES.includes(url.hostname);
  };
  return (req, res, next) => {
    const origin = req.header('origin');
    if (origin !== undefined && !allowed(origin)) {
      return void rpcError(res, 403, -32000, `Forbidden: Origin ${origin} may not call this server; add it to ALLOWED_ORIGINS to allow its pages`);
    }
    const host = hostnames && validateHostHeader(req.header('host'), hostnames);
    if (host && !host.ok) return void rpcError(res, 403, -32000, host.message);
    next();
  };
}

/**
 * The Express handlers for /mcp; authentication has already put the principal in `res.locals`. A POST is served by
 * what it is: one carrying 2026-07-28's `_meta` (or its version header) by the SDK's per-request transport, anything
 * else (initialize, and every request of a 2025 session) by RequestTransport above; GET and DELETE are 2025 session
 * operations. Tool calls count against the rate limit (in the pipeline); the answer carries the RateLimit headers
 * of the caller's bucket as it stands after them (`rateLimitOf`).
 */
export async function connectMcpOverHttp(
  { serverFor, callTool }: McpServer,
  { db, logger, rateLimitOf }: { db: Database; logger: Logger; rateLimitOf: (principal: Principal) => RateLimitState | undefined },
) {
  const server = serverFor('legacy');
  const transport = new RequestTransport(callTool);
  server.onerror = (error) => logger.warn('MCP server error', { error });
  await server.connect(transport);
  const streams = new NotificationStreams(db, logger);
  const bus = new WorkspaceEventBus(streams);
  const modern = createMcpHandler(() => serverFor('modern'), {
    legacy: 'reject',
    bus,
    // A client's malformed request is its own affair (it is told why); only what needs a look is a warning.
    onerror: (error) => logger.debug('MCP 2026 request refused or failed', { error: error.message }),
  });
  /** The request's Mcp-Session-Id: undefined when absent, null when it is not one a server could have given. */
  const sessionOf = (req: Request) => {
    const header = req.header('mcp-session-id');
    return header === undefined ? undefined : isSessionId(header) ? header : null;
  };
  const noSession = (res: Response) =>
    // The header before the answer: set after it, it threw (headers already sent), and the error was logged.
    rpcError(res.set('allow', 'POST'), 405, -32000, 'Method not allowed without a session: initialize over POST /mcp, then send the Mcp-Session-Id it answered');

  /**
   * GET /mcp with a session: the server-to-client stream, where the session's subscribed resources are announced
   * (notifications/resources/updated). Without one, 405: a client that subscribed to nothing needs no stream.
   */
  const stream = async (req: Request, res: Response) => {
    const sessionId = sessionOf(req);
    if (sessionId === null) return rpcError(res, 400, -32000, 'Bad request: Mcp-Session-Id must be visible ASCII characters');
    if (!sessionId) return noSession(res);
    if (!/text\/event-stream|\*\/\*/.test(req.header('accept') ?? '')) return rpcError(res, 406, -32000, 'Not acceptable: GET /mcp answers text/event-stream');
    streams.open(sessionId, res.locals.principal as Principal, res);
  };
  /** DELETE /mcp with a session: its subscriptions end (the client is done with the session). */
  const end = async (req: Request, res: Response) => {
    const sessionId = sessionOf(req);
    if (!sessionId) return noSession(res);
    await endSession(db, sessionId, res.locals.principal as Principal);
    res.status(200).end();
  };

  /**
   * A 2026-07-28 tools/call that passes every check the SDK would make, answered by the tool handler directly, as a
   * 2025 one is (RequestTransport): the SDK's per-request server tripled the cost of a small call (docs/benchmarks.md).
   * Its answer is the SDK's, field for field (test/mcp-2026.test.ts compares them).
   */
  const call2026 = async ({ params, id, refused }: NonNullable<ReturnType<typeof plain2026ToolCall>>, res: Response) => {
    const principal = res.locals.principal as Principal;
    let answer: JSONRPCMessage;
    try {
      if (refused) answer = refused;
      else {
        const result = await callTool(params, authInfoOf(principal));
        answer = { jsonrpc: '2.0', id, result: { ...result, resultType: 'complete', _meta: { [SERVER_INFO_META_KEY]: SERVER_INFO } } };
      }
    } catch (error) {
      answer = errorResponse(id, error as { code?: unknown; message?: string });
    }
    if (res.destroyed) return;
    setRateLimitHeaders(res, rateLimitOf(principal));
    sendJsonText(res, 200, answerText(answer));
  };

  /** A 2026-07-28 request: the SDK checks its envelope and headers, answers it, and holds a listen's stream open. */
  const post2026 = async (web: globalThis.Request, req: Request, res: Response, cancel: AbortController) => {
    const principal = res.locals.principal as Principal;
    // The SDK's own limit counts every workspace's listens together: one key could take them all.
    if ((req.body as { method?: unknown }).method === 'subscriptions/listen' && bus.listening(principal.workspaceId) >= LISTENS_PER_WORKSPACE) {
      const id = (req.body as { id?: RequestId }).id ?? null;
      const message = `Subscription limit reached: this workspace has ${LISTENS_PER_WORKSPACE} listens open here; close one first`;
      return sendJson(res, 200, { jsonrpc: '2.0', id, error: { code: ProtocolErrorCode.InternalError, message } });
    }
    const answer = await bus.as(principal, () => modern.fetch(web, { authInfo: authInfoOf(principal), parsedBody: req.body }));
    if (res.destroyed) return void cancel.abort();
    setRateLimitHeaders(res, rateLimitOf(principal));
    res.status(answer.status);
    answer.headers.forEach((value, name) => res.setHeader(name, value));
    if (!answer.body) return void res.end();
    // A listen's stream flows as it comes; any other answer is one JSON text, written at once.
    if (answer.headers.get('content-type')?.startsWith('text/event-stream')) {
      // A client that goes cancels the stream, which is how the SDK learns a listen has ended (and lets it go).
      const stream = Readable.fromWeb(answer.body as WebReadableStream);
      res.once('close', () => stream.destroy());
      return void stream.pipe(res);
    }
    res.end(await answer.text());
  };

  const post2025 = async (req: Request, res: Response) => {
    const version = req.header('mcp-protocol-version');
    if (version !== undefined && !SUPPORTED_PROTOCOL_VERSIONS.includes(version)) {
      return rpcError(res, 400, -32000, `Unsupported MCP protocol version ${version}; supported: ${SUPPORTED_PROTOCOL_VERSIONS.join(', ')}`);
    }
    const accept = req.header('accept');
    if (accept && !/application\/json|\*\/\*/.test(accept)) {
      return rpcError(res, 406, -32000, 'Not acceptable: this server answers application/json');
    }
    const batch = Array.isArray(req.body);
    const messages = (batch ? (req.body as unknown[]) : [req.body]) as JSONRPCMessage[];
    if (messages.length === 0 || !messages.every(isMessage)) {
      return rpcError(res, 400, -32600, 'Invalid request: the body must be a JSON-RPC 2.0 message (or a batch of them) as MCP defines it');
    }
    if (!uniqueIds(messages)) return rpcError(res, 400, -32600, 'Invalid request: request ids must be unique within a batch');
    const principal = res.locals.principal as Principal;
    let sessionId = sessionOf(req);
    if (sessionId === null) return rpcError(res, 400, -32000, 'Bad request: Mcp-Session-Id must be visible ASCII characters');
    // A session is handed out at initialize; it costs nothing unless the client subscribes (src/mcp/subscriptions.ts).
    if (!sessionId && messages.some((message) => 'method' in message && 'id' in message && message.method === 'initialize')) {
      sessionId = newSessionId();
      res.set('mcp-session-id', sessionId);
    }
    const { answers: pending, abandon } = transport.exchange(messages, principal, sessionId);
    res.once('close', abandon);
    const answers = await pending;
    if (res.destroyed) return;
    setRateLimitHeaders(res, rateLimitOf(principal));
    if (answers.length === 0) return res.status(202).end();
    sendJsonText(res, 200, batch ? `[${answers.map(answerText).join(',')}]` : answerText(answers[0]!));
  };

  const post = async (req: Request, res: Response) => {
    if (!mayBe2026(req)) return post2025(req, res);
    const direct = plain2026ToolCall(req);
    if (direct) return call2026(direct, res);
    // Closing the response is how a 2026 client cancels a call or ends a listen.
    const cancel = new AbortController();
    // Only a response that ends unfinished is a cancel (aborting after every answer cost a good part of a call).
    res.once('close', () => res.writableFinished || cancel.abort());
    const web = await toWebRequest(req, req.body, { signal: cancel.signal });
    if (await isLegacyRequest(web, req.body)) return post2025(req, res);
    return post2026(web, req, res, cancel);
  };
  return {
    post,
    stream,
    end,
    /** Ends every stream: 2025 sessions' GET /mcp and 2026 listens (each with its closing result). */
    close: () => {
      streams.closeAll();
      void modern.close().catch((error: unknown) => logger.warn('closing MCP listens failed', { error }));
    },
  };
}
