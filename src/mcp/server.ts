import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import {
  CallToolRequestSchema,
  ErrorCode,
  InitializeRequestSchema,
  ListResourcesRequestSchema,
  ListResourceTemplatesRequestSchema,
  ListToolsRequestSchema,
  PingRequestSchema,
  ReadResourceRequestSchema,
  SubscribeRequestSchema,
  UnsubscribeRequestSchema,
  type CallToolRequest,
  type CallToolResult,
  type JSONRPCErrorResponse,
  type JSONRPCMessage,
} from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import type { Database } from '../db/index.js';
import type { Principal } from '../auth/principal.js';
import type { Operation } from '../registry/operation.js';
import type { Pipeline } from '../registry/pipeline.js';
import { VERSION } from '../process/version.js';
import { toolsOf } from './tools.js';
import { EVENTS_URI, isResourceUri, SCHEDULE_URI_TEMPLATE, scheduleIdOf, subscribe, unsubscribe } from './subscriptions.js';

export const SERVER_INFO = { name: 'postwise', version: VERSION };

/** What a tool call needs to know of the transport that brought it: who calls. Null answers UNAUTHORIZED. */
export type PrincipalOf = (authInfo: { extra?: Record<string, unknown> } | undefined) => Promise<Principal | null>;

/**
 * Where subscriptions live for a transport: over HTTP, the session the request names (its Mcp-Session-Id); over stdio,
 * the process's one session, whose notifications start at its first subscribe (`onSubscribed`).
 */
export interface Sessions {
  sessionOf: (authInfo: { extra?: Record<string, unknown> } | undefined) => string | undefined;
  onSubscribed?: (sessionId: string, principal: Principal) => Promise<void>;
}

const sessionsOverHttp: Sessions = { sessionOf: (authInfo) => authInfo?.extra?.sessionId as string | undefined };

/** A tools/call's params, checked (invalidParams), answered as the tool's result; throws the protocol's errors. */
export type CallTool = (params: CallToolRequest['params'], authInfo: { extra?: Record<string, unknown> } | undefined) => Promise<CallToolResult>;

/**
 * The server, and its tools/call handler on its own: the HTTP transport answers tools/call (the hot path of every
 * agent) with it directly, without the SDK's per-request dispatch (src/mcp/http.ts), and the SDK serves the rest.
 */
export interface McpServer {
  server: Server;
  callTool: CallTool;
}

/**
 * One long-lived MCP server for the process. Every call goes through the same pipeline as REST, so a tool's
 * answer is the REST body: as `structuredContent` and as JSON text, or, for an error, the same
 * `{ code, message }` with `isError: true`.
 */
export function createMcpServer(operations: readonly Operation[], pipeline: Pipeline, principalOf: PrincipalOf, db: Database, sessions = sessionsOverHttp): McpServer {
  const tools = toolsOf(operations);
  // Only the listed tools can be called: an internal operation's name is as unknown as a name nothing has.
  const byName = new Map(tools.map((tool) => [tool.name, operations.find((operation) => operation.id === tool.name)!]));
  const server = new Server(SERVER_INFO, { capabilities: { tools: { listChanged: false }, resources: { subscribe: true, listChanged: false } } });
  const operation = (id: string) => operations.find((candidate) => candidate.id === id)!;

  server.setRequestHandler(ListResourcesRequestSchema, () => ({
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
  }));
  server.setRequestHandler(ListResourceTemplatesRequestSchema, () => ({
    resourceTemplates: [
      {
        uriTemplate: SCHEDULE_URI_TEMPLATE,
        name: 'schedule',
        title: 'A schedule, inside its post',
        description: 'What getSchedule answers for it. Subscribe to be told when it is scheduled, publishing, published, failed, retried or deleted.',
        mimeType: 'application/json',
      },
    ],
  }));
  /** The principal of a resource request, and the session it came in, or the protocol error to throw. */
  const caller = async (extra: { authInfo?: { extra?: Record<string, unknown> } }) => {
    const principal = await principalOf(extra.authInfo);
    if (!principal) throw Object.assign(new Error('A valid API key is required'), { code: ErrorCode.InvalidRequest });
    return { principal, sessionId: sessions.sessionOf(extra.authInfo) };
  };
  const unknownResource = (uri: string) => Object.assign(new Error(`Resource not found: ${uri}`), { code: -32002, data: { uri } });
  /** The post of a schedule of this workspace, or undefined. */
  const postOf = async (principal: Principal, scheduleId: string) =>
    (await db<{ postId: string }[]>`SELECT post_id FROM schedules WHERE id = ${scheduleId} AND organization_id = ${principal.workspaceId}`)[0]?.postId;

  server.setRequestHandler(ReadResourceRequestSchema, async (request, extra) => {
    const { principal } = await caller(extra);
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
    if (!outcome.ok) throw Object.assign(new Error(`${outcome.body.code}: ${outcome.body.message}`), { code: ErrorCode.InvalidRequest });
    return { contents: [{ uri, mimeType: 'application/json', text: JSON.stringify(outcome.body) }] };
  });
  const subscription = (change: typeof subscribe) => async (request: { params: { uri: string } }, extra: { authInfo?: { extra?: Record<string, unknown> } }) => {
    const { principal, sessionId } = await caller(extra);
    const { uri } = request.params;
    if (!sessionId) {
      throw Object.assign(new Error('Subscriptions need a session: send the Mcp-Session-Id this server gave at initialize (over Streamable HTTP), and open GET /mcp to receive notifications'), {
        code: ErrorCode.InvalidRequest,
      });
    }
    const scheduleId = scheduleIdOf(uri);
    if (!isResourceUri(uri) || (scheduleId && !(await postOf(principal, scheduleId)))) throw unknownResource(uri);
    await change(db, sessionId, principal, uri);
    if (change === subscribe) await sessions.onSubscribed?.(sessionId, principal);
    return {};
  };
  server.setRequestHandler(SubscribeRequestSchema, subscription(subscribe));
  server.setRequestHandler(UnsubscribeRequestSchema, subscription(unsubscribe));

  server.setRequestHandler(ListToolsRequestSchema, () => ({ tools }));
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
      throw Object.assign(new Error(`Unknown tool: ${params.name}`), { code: ErrorCode.InvalidParams });
    }
    if (!outcome.ok) return errorResult(outcome.body);
    const structured = Array.isArray(outcome.body) ? { items: outcome.body } : (outcome.body as Record<string, unknown>);
    return { content: [{ type: 'text', text: JSON.stringify(structured) }], structuredContent: structured };
  };
  server.setRequestHandler(CallToolRequestSchema, (request, extra) => callTool(request.params, extra.authInfo));
  return { server, callTool };
}

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
  return { jsonrpc: '2.0', id: message.id, error: { code: ErrorCode.InvalidParams, message: `Invalid params: ${problems.join('; ')}` } };
}

/**
 * A tools/call without its task metadata (`params.task`), as the specification (2025-11-25, Tasks) has a server that
 * declares no tasks process it: normally, ignoring that metadata. The SDK's server would refuse it instead. Other
 * messages are left as they are.
 */
export function withoutTask(message: JSONRPCMessage): JSONRPCMessage {
  if (!('method' in message && message.method === 'tools/call' && message.params && 'task' in message.params)) return message;
  const { task: _ignored, ...params } = message.params;
  return { ...message, params };
}

function errorResult(body: { code: string; message: string }): CallToolResult {
  return { content: [{ type: 'text', text: JSON.stringify(body) }], isError: true };
}
