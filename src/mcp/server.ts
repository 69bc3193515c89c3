import {
  isJSONRPCErrorResponse,
  ProtocolError,
  ProtocolErrorCode,
  ResourceNotFoundError,
  Server,
  type CallToolRequest,
  type CallToolResult,
  type JSONRPCErrorResponse,
  type JSONRPCMessage,
  type ReadResourceRequest,
  type ReadResourceResult,
  type ServerContext,
} from '@modelcontextprotocol/server';
import {
  CallToolRequestSchema,
  InitializeRequestSchema,
  ListResourcesRequestSchema,
  ListResourceTemplatesRequestSchema,
  ListToolsRequestSchema,
  PingRequestSchema,
  ReadResourceRequestSchema,
  SubscribeRequestSchema,
  UnsubscribeRequestSchema,
} from '@modelcontextprotocol/core';
import type { z } from 'zod';
import type { Database } from '../db/index.js';
import type { Principal } from '../auth/principal.js';
import type { Operation } from '../registry/operation.js';
import type { Pipeline } from '../registry/pipeline.js';
import { VERSION } from '../process/version.js';
import { toolsOf } from './tools.js';
import { EVENTS_URI, isResourceUri, SCHEDULE_URI_TEMPLATE, scheduleIdOf, subscribe, unsubscribe } from './subscriptions.js';

export const SERVER_INFO = { name: 'postwise', version: VERSION };

/** The stateless protocol served beside the 2025 ones (docs/mcp.md#protocol-versions). */
export const MODERN_VERSION = '2026-07-28';

/** Who a request comes from, as the transport that brought it says (`authInfo.extra`). Null answers UNAUTHORIZED. */
export type PrincipalOf = (authInfo: AuthInfo | undefined) => Promise<Principal | null>;
type AuthInfo = { extra?: Record<string, unknown> };

/**
 * Where subscriptions live for a transport: over HTTP, the session the request names (its Mcp-Session-Id); over stdio,
 * the process's one session, whose notifications start at its first subscribe (`onSubscribed`).
 */
export interface Sessions {
  sessionOf: (authInfo: AuthInfo | undefined) => string | undefined;
  onSubscribed?: (sessionId: string, principal: Principal) => Promise<void>;
}

const sessionsOverHttp: Sessions = { sessionOf: (authInfo) => authInfo?.extra?.sessionId as string | undefined };

/** A tools/call's params, checked (invalidParams), answered as the tool's result; throws the protocol's errors. */
export type CallTool = (params: CallToolRequest['params'], authInfo: AuthInfo | undefined) => Promise<CallToolResult>;

/** Which protocol a server instance speaks: the 2025 versions (begun by initialize) or 2026-07-28 (per request). */
export type Era = 'legacy' | 'modern';

/**
 * The MCP server, built once: `serverFor(era)` makes an SDK `Server` that only wires the handlers made here to it
 * (the 2026 transport needs a fresh instance per request, so that must cost next to nothing), and `callTool` is the
 * tools/call handler on its own, which the 2025 HTTP transport calls directly (src/mcp/http.ts).
 */
export interface McpServer {
  serverFor: (era: Era) => Server;
  callTool: CallTool;
}

/**
 * The answer of every tool goes through the same pipeline as REST, so it is the REST body: as `structuredContent`
 * and as JSON text, or, for an error, the same `{ code, message }` with `isError: true`.
 */
export function createMcpServer(operations: readonly Operation[], pipeline: Pipeline, principalOf: PrincipalOf, db: Database, sessions = sessionsOverHttp): McpServer {
  const tools = toolsOf(operations);
  // Only the listed tools can be called: an internal operation's name is as unknown as a name nothing has.
  const byName = new Map(tools.map((tool) => [tool.name, operations.find((operation) => operation.id === tool.name)!]));
  const operation = (id: string) => operations.find((candidate) => candidate.id === id)!;

  const listResources = () => ({
    resources: [
      {
        uri: EVENTS_URI,
        name: 'events',
        title: 'The workspace\'s events',
        description:
          'Every change that matters (the listEvents tool\'s feed). Subscribe to be told, on the stream GET /mcp opens, each time events are ' +
          'written; read it for the events of the last 24 hours, or page the feed with listEvents and a cursor (which always works).',
        mimeType: 'application/json',
      },
    ],
  });
  const listResourceTemplates = () => ({
    resourceTemplates: [
      {
        uriTemplate: SCHEDULE_URI_TEMPLATE,
        name: 'schedule',
        title: 'A schedule, inside its post',
        description: 'What getSchedule answers for it. Subscribe to be told when it is scheduled, publishing, published, failed, retried or deleted.',
        mimeType: 'application/json',
      },
    ],
  });
  /** The principal of a resource request, and the session it came in, or the protocol error to throw. */
  const caller = async (ctx: ServerContext) => {
    const principal = await principalOf(ctx.http?.authInfo);
    if (!principal) throw new ProtocolError(ProtocolErrorCode.InvalidRequest, 'A valid API key is required');
    return { principal, sessionId: sessions.sessionOf(ctx.http?.authInfo) };
  };
  // The SDK sends -32602 (2026-07-28's code) with `data.uri`; the 2025 transports turn it back into -32002 (resourceNotFound).
  const unknownResource = (uri: string) => new ResourceNotFoundError(uri);
  /** The post of a schedule of this workspace, or undefined. */
  const postOf = async (principal: Principal, scheduleId: string) =>
    (await db<{ postId: string }[]>`SELECT post_id FROM schedules WHERE id = ${scheduleId} AND organization_id = ${principal.workspaceId}`)[0]?.postId;

  const readResource = async (request: ReadResourceRequest, ctx: ServerContext): Promise<ReadResourceResult> => {
    const { principal } = await caller(ctx);
    const { uri } = request.params;
    const scheduleId = scheduleIdOf(uri);
    const postId = scheduleId && (await postOf(principal, scheduleId));
    if (uri !== EVENTS_URI && !postId) throw unknownResource(uri);
    // Read through the pipeline, as the tools are: the same rate limit, the same answers.
    const outcome = postId
      ? await pipeline.run({ operation: operation('getSchedule'), principal, surface: 'mcp', input: { kind: 'arguments', value: { id: scheduleId, postId } } })
      : await pipeline.run({
          operation: operation('listEvents'),
          principal,
          surface: 'mcp',
          input: { kind: 'arguments', value: { since: new Date(Date.now() - 86_400_000).toISOString(), limit: 100 } },
        });
    if (!outcome.ok) throw new ProtocolError(ProtocolErrorCode.InvalidRequest, `${outcome.body.code}: ${outcome.body.message}`);
    return { contents: [{ uri, mimeType: 'application/json', text: JSON.stringify(outcome.body) }] };
  };
  const subscription = (change: typeof subscribe) => async (request: { params: { uri: string } }, ctx: ServerContext) => {
    const { principal, sessionId } = await caller(ctx);
    const { uri } = request.params;
    if (!sessionId) {
      throw new ProtocolError(
        ProtocolErrorCode.InvalidRequest,
        'Subscriptions need a session: send the Mcp-Session-Id this server gave at initialize (over Streamable HTTP), and open GET /mcp to receive notifications',
      );
    }
    const scheduleId = scheduleIdOf(uri);
    if (!isResourceUri(uri) || (scheduleId && !(await postOf(principal, scheduleId)))) throw unknownResource(uri);
    await change(db, sessionId, principal, uri);
    if (change === subscribe) await sessions.onSubscribed?.(sessionId, principal);
    return {};
  };
  const subscribeResource = subscription(subscribe);
  const unsubscribeResource = subscription(unsubscribe);

  const callTool: CallTool = async (params, authInfo) => {
    const principal = await principalOf(authInfo);
    if (!principal) return errorResult({ code: 'UNAUTHORIZED', message: 'A valid API key is required' });
    const operation = byName.get(params.name);
    const outcome = await pipeline.run({
      operation,
      principal,
      surface: 'mcp',
      input: { kind: 'arguments', value: params.arguments ?? {} },
    });
    // An unknown tool is a protocol error, as the specification says (still counted, and rate-limited, as a call),
    // worded as its example is: McpError would prefix "MCP error -32602: ", which clients prefix again.
    if (!operation && !outcome.ok && outcome.body.code === 'NOT_FOUND') {
      throw new ProtocolError(ProtocolErrorCode.InvalidParams, `Unknown tool: ${params.name}`);
    }
    if (!outcome.ok) return errorResult(outcome.body);
    const structured = Array.isArray(outcome.body) ? { items: outcome.body } : (outcome.body as Record<string, unknown>);
    return { content: [{ type: 'text', text: JSON.stringify(structured) }], structuredContent: structured };
  };

  const serverFor = (era: Era) => {
    const server = new Server(SERVER_INFO, {
      capabilities: { tools: { listChanged: false }, resources: { subscribe: true, listChanged: false } },
      cacheHints: CACHE_HINTS,
    });
    server.setRequestHandler('tools/list', () => ({ tools }));
    server.setRequestHandler('tools/call', (request, ctx) => callTool(request.params, ctx.http?.authInfo));
    server.setRequestHandler('resources/list', listResources);
    server.setRequestHandler('resources/templates/list', listResourceTemplates);
    server.setRequestHandler('resources/read', readResource);
    // 2026-07-28 has no resources/subscribe: a client listens instead (subscriptions/listen, served by the transport).
    if (era === 'legacy') {
      server.setRequestHandler('resources/subscribe', subscribeResource);
      server.setRequestHandler('resources/unsubscribe', unsubscribeResource);
    }
    return server;
  };
  return { serverFor, callTool };
}

/**
 * How long a 2026-07-28 client may keep an answer: the tools and resources offered are the same for every key and
 * change only with a new version of the server; what a resource holds depends on the key and changes any time.
 */
const CACHE_HINTS = {
  'server/discover': { ttlMs: 3_600_000, cacheScope: 'public' },
  'tools/list': { ttlMs: 3_600_000, cacheScope: 'public' },
  'resources/list': { ttlMs: 3_600_000, cacheScope: 'public' },
  'resources/templates/list': { ttlMs: 3_600_000, cacheScope: 'public' },
  'resources/read': { ttlMs: 0, cacheScope: 'private' },
} as const;

/** The requests this server answers, each with the SDK's own schema for it. */
const requestSchemas = new Map<string, z.ZodType>(
  [
    InitializeRequestSchema,
    PingRequestSchema,
    ListToolsRequestSchema,
    CallToolRequestSchema,
    ListResourcesRequestSchema,
    ListResourceTemplatesRequestSchema,
    ReadResourceRequestSchema,
    SubscribeRequestSchema,
    UnsubscribeRequestSchema,
  ].map((schema) => [schema.shape.method.value, schema]),
);

/**
 * The SDK answers a request whose params break its schema (a tools/call whose `arguments` is not an object)
 * with -32603 and a raw validation dump, as if the server had failed. Every transport checks requests here
 * first, so the client gets -32602 (invalid params) with a message that names the field.
 */
export function invalidParams(message: JSONRPCMessage): JSONRPCErrorResponse | undefined {
  // Both transports hand over valid messages only: one with a method and an id is a request (no second parse).
  if (!('method' in message && 'id' in message)) return undefined;
  const parsed = requestSchemas.get(message.method)?.safeParse(message);
  if (!parsed || parsed.success) return undefined;
  const problems = parsed.error.issues.map((issue) => `${issue.path.join('.')}: ${issue.message.replace('expected record', 'expected object')}`);
  return { jsonrpc: '2.0', id: message.id, error: { code: ProtocolErrorCode.InvalidParams, message: `Invalid params: ${problems.join('; ')}` } };
}

/**
 * The SDK answers a resource that is not there with 2026-07-28's code on every version (-32602 with `data.uri`);
 * 2025-11-25 and 2025-06-18 say -32002, which their clients look for.
 */
export function in2025Words(message: JSONRPCMessage): JSONRPCMessage {
  if (!isJSONRPCErrorResponse(message) || message.error.code !== ProtocolErrorCode.InvalidParams) return message;
  const data = message.error.data as { uri?: unknown } | undefined;
  if (typeof data?.uri !== 'string' || Object.keys(data).length !== 1) return message;
  return { ...message, error: { ...message.error, code: -32002 } };
}

function errorResult(body: { code: string; message: string }): CallToolResult {
  return { content: [{ type: 'text', text: JSON.stringify(body) }], isError: true };
}
