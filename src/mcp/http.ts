import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { SUPPORTED_PROTOCOL_VERSIONS, type JSONRPCMessage, type RequestId } from '@modelcontextprotocol/sdk/types.js';
import type { Request, Response } from 'express';
import type { Principal } from '../registry/context.js';

/**
 * Streamable HTTP, stateless, answered as JSON. The SDK's own transport must be built anew, with a new
 * server, for every request in stateless mode, and that setup costs more than the call it serves. Here one
 * long-lived server is connected to this transport, which hands it each HTTP request's messages under ids
 * of its own (so concurrent clients' ids cannot collide) and routes each response back to its request.
 */
class RequestTransport implements Transport {
  onmessage?: Transport['onmessage'];
  onclose?: () => void;
  onerror?: (error: Error) => void;
  private nextId = 0;
  private readonly waiting = new Map<RequestId, (message: JSONRPCMessage) => void>();

  async start() {}
  async close() {
    this.onclose?.();
  }

  /** Responses go to the HTTP request that waits for them; a stateless server has nowhere to send anything else. */
  async send(message: JSONRPCMessage) {
    if (!('id' in message) || 'method' in message) return;
    const reply = this.waiting.get(message.id as RequestId);
    this.waiting.delete(message.id as RequestId);
    reply?.(message);
  }

  deliver(message: JSONRPCMessage, principal: Principal): Promise<JSONRPCMessage> | undefined {
    const authInfo = { token: '', clientId: principal.kind, scopes: [], extra: { principal } };
    if (!isRequest(message)) {
      this.onmessage?.(message, { authInfo });
      return undefined;
    }
    const id = ++this.nextId;
    return new Promise((resolve) => {
      this.waiting.set(id, (reply) => resolve({ ...reply, id: message.id } as JSONRPCMessage));
      this.onmessage?.({ ...message, id }, { authInfo });
    });
  }
}

/**
 * The envelope checks the transport relies on, done by hand because they run on every request: the SDK's own
 * guards are zod parses, and the server validates each request's params against its method's schema anyway.
 */
function isMessage(value: unknown): value is JSONRPCMessage {
  if (typeof value !== 'object' || value === null || (value as { jsonrpc?: unknown }).jsonrpc !== '2.0') return false;
  const { id, method } = value as { id?: unknown; method?: unknown };
  const validId = typeof id === 'string' || (typeof id === 'number' && Number.isInteger(id));
  if (method !== undefined) return typeof method === 'string' && (id === undefined || validId);
  return validId && ('result' in value || 'error' in value);
}

const isRequest = (message: JSONRPCMessage): message is JSONRPCMessage & { id: RequestId; method: string } =>
  'method' in message && 'id' in message;

const rpcError = (res: Response, status: number, code: number, message: string) =>
  res.status(status).json({ jsonrpc: '2.0', error: { code, message }, id: null });

/** The Express handler for POST /mcp; authentication has already put the principal in `res.locals`. */
export async function connectMcpOverHttp(server: Server) {
  const transport = new RequestTransport();
  await server.connect(transport);

  return async (req: Request, res: Response) => {
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
      return rpcError(res, 400, -32600, 'Invalid request: the body must be a JSON-RPC 2.0 message');
    }
    const principal = res.locals.principal as Principal;
    const replies = await Promise.all(messages.map((message) => transport.deliver(message, principal)));
    const answers = replies.filter((reply) => reply !== undefined);
    if (answers.length === 0) return res.status(202).end();
    return res.json(batch ? answers : answers[0]);
  };
}
