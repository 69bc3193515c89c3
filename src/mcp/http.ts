import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import {
  isJSONRPCRequest,
  JSONRPCMessageSchema,
  SUPPORTED_PROTOCOL_VERSIONS,
  type JSONRPCMessage,
  type RequestId,
} from '@modelcontextprotocol/sdk/types.js';
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
    if (!('id' in message) || isJSONRPCRequest(message)) return;
    const reply = this.waiting.get(message.id as RequestId);
    this.waiting.delete(message.id as RequestId);
    reply?.(message);
  }

  deliver(message: JSONRPCMessage, principal: Principal): Promise<JSONRPCMessage> | undefined {
    const authInfo = { token: '', clientId: principal.kind, scopes: [], extra: { principal } };
    if (!isJSONRPCRequest(message)) {
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
    const parsed = (batch ? (req.body as unknown[]) : [req.body]).map((message) => JSONRPCMessageSchema.safeParse(message));
    if (parsed.length === 0 || parsed.some((result) => !result.success)) {
      return rpcError(res, 400, -32600, 'Invalid request: the body must be a JSON-RPC 2.0 message');
    }
    const principal = res.locals.principal as Principal;
    const replies = await Promise.all(parsed.map((result) => transport.deliver(result.data!, principal)));
    const answers = replies.filter((reply) => reply !== undefined);
    if (answers.length === 0) return res.status(202).end();
    return res.json(batch ? answers : answers[0]);
  };
}
