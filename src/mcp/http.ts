import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import {
  ErrorCode,
  isJSONRPCErrorResponse,
  isJSONRPCNotification,
  isJSONRPCRequest,
  isJSONRPCResultResponse,
  SUPPORTED_PROTOCOL_VERSIONS,
  type CallToolRequest,
  type JSONRPCErrorResponse,
  type JSONRPCMessage,
  type RequestId,
} from '@modelcontextprotocol/sdk/types.js';
import { hostHeaderValidation } from '@modelcontextprotocol/sdk/server/middleware/hostHeaderValidation.js';
import type { Request, RequestHandler, Response } from 'express';
import ipaddr from 'ipaddr.js';
import { sendJson, sendJsonText } from '../http/json.js';
import { setRateLimitHeaders } from '../http/rate-limit-headers.js';
import type { Logger } from '../process/logger.js';
import type { Principal } from '../auth/principal.js';
import type { RateLimitState } from '../registry/rate-limit.js';
import type { Database } from '../db/index.js';
import { invalidParams, type CallTool, type McpServer, type PrincipalOf } from './server.js';
import { endSession, isSessionId, newSessionId, NotificationStreams } from './subscriptions.js';

type Reply = (message: JSONRPCMessage | undefined) => void;

/**
 * Streamable HTTP, stateless, answered as JSON. The SDK's own transport must be built anew, with a new
 * server, for every request in stateless mode, and that setup costs more than the call it serves. Here one
 * long-lived server is connected to this transport, which hands it each HTTP request's messages under ids
 * of its own (so concurrent clients' ids cannot collide) and routes each response back to its request.
 *
 * A tools/call is answered by the server's tool handler directly: the SDK would check the message's type three times
 * more, parse the request and the result again and give the call an AbortController, a good part of what MCP adds to
 * a call over REST (docs/benchmarks.md), for the same answer. invalidParams has checked its params with the SDK's
 * schema by then. Its task metadata, if any, is ignored (withoutTask in src/mcp/server.ts says why).
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
    if ('id' in message && !('method' in message)) this.settle(message.id as RequestId, message);
  }

  /**
   * Hands one HTTP request's messages to the server: `answers` resolves with the responses to its requests. A
   * client can cancel only requests of its own HTTP request (ids are its own there); `abandon`, for a client
   * that went away, cancels what is still running, so nothing waits for an answer no one will read.
   */
  exchange(messages: JSONRPCMessage[], principal: Principal, sessionId: string | undefined): { answers: Promise<JSONRPCMessage[]>; abandon: () => void } {
    const authInfo = { token: '', clientId: principal.kind, scopes: [], extra: { principal, sessionId } };
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
  const code = Number.isSafeInteger(error.code) ? (error.code as number) : ErrorCode.InternalError;
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
 * host (a name rebound to 127.0.0.1) is refused with 403 as well (the SDK's own middleware).
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
  const hostCheck = loopback
    ? hostHeaderValidation([...new Set([...LOOPBACK_HOSTNAMES, boundName, ...(configuredPublicUrl ? [new URL(configuredPublicUrl).hostname] : [])])])
    : undefined;
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
    if (hostCheck) return hostCheck(req, res, next);
    next();
  };
}

/**
 * The Express handler for POST /mcp; authentication has already put the principal in `res.locals`. Tool calls
 * count against the rate limit (in the pipeline); the answer carries the RateLimit headers of the caller's
 * bucket as it stands after them (`rateLimitOf`).
 */
export async function connectMcpOverHttp(
  { server, callTool }: McpServer,
  { db, logger, rateLimitOf }: { db: Database; logger: Logger; rateLimitOf: (principal: Principal) => RateLimitState | undefined },
) {
  const transport = new RequestTransport(callTool);
  server.onerror = (error) => logger.warn('MCP server error', { error });
  await server.connect(transport);
  const streams = new NotificationStreams(db, logger);
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
    await streams.open(sessionId, res.locals.principal as Principal, res);
  };
  /** DELETE /mcp with a session: its subscriptions end (the client is done with the session). */
  const end = async (req: Request, res: Response) => {
    const sessionId = sessionOf(req);
    if (!sessionId) return noSession(res);
    await endSession(db, sessionId, res.locals.principal as Principal);
    res.status(200).end();
  };

  const post = async (req: Request, res: Response) => {
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
  return { post, stream, end, close: () => streams.closeAll() };
}
