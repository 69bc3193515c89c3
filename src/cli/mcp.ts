/**
 * `postwise mcp`: a stdio MCP server for clients that launch their servers as processes, relaying every JSON-RPC
 * message unchanged to the remote server's Streamable HTTP endpoint (`<base>/mcp`) and back. It relays rather than
 * serves, so whatever the remote offers (tools, ping, notifications, protocol versions) passes through as it is: a
 * 2025 client's session, and a 2026-07-28 client's stateless requests (the SDK's HTTP transport writes each one's
 * headers from its body) and listens (a cancelled one's stream is closed, which is how HTTP ends it).
 * stdout carries MCP messages only; everything else goes to `verbose` (stderr), and no header value is ever shown.
 */
import {
  isJSONRPCErrorResponse,
  isJSONRPCNotification,
  isJSONRPCRequest,
  isJSONRPCResultResponse,
  ProtocolErrorCode,
  SdkHttpError,
  StreamableHTTPClientTransport,
  type JSONRPCMessage,
  type RequestId,
} from '@modelcontextprotocol/client';
import { StdioServerTransport } from '@modelcontextprotocol/server/stdio';

export interface McpBridgeOptions {
  /** The server's origin (and path prefix, if any), without /mcp. */
  baseUrl: string;
  /** Sent with every request (the x-api-key header); never printed. */
  headers: Record<string, string>;
  /** Diagnostics, one line each (stderr); stdout is the MCP channel's alone. */
  verbose?: (line: string) => void;
}

/** How long answers to requests still in flight are awaited once stdin has closed (`echo '…' | postwise mcp` reads them). */
const DRAIN_MS = 30_000;
/** Enough of an HTTP error body to say what went wrong, not a whole page. */
const MAX_DETAIL = 500;

export async function runMcpBridge(options: McpBridgeOptions): Promise<void> {
  const log = options.verbose ?? (() => {});
  const endpoint = new URL(`${options.baseUrl.replace(/\/+$/, '')}/mcp`);
  const redact = redactor([...Object.values(options.headers), ...[endpoint.password, endpoint.username].flatMap(bothForms)]);
  // Messages name the endpoint without credentials, query or fragment.
  const shown = `${endpoint.origin}${endpoint.pathname}`;

  const remote = new StreamableHTTPClientTransport(endpoint, { requestInit: { headers: { ...options.headers } } });
  const local = new StdioServerTransport();

  /** Requests from the local client not yet answered (each gets exactly one answer, the remote's or ours), and how to stop each. */
  const pending = new Map<RequestId, AbortController>();
  /** Ids of `initialize` requests, whose result fixes the protocol version later requests must name. */
  const initializing = new Set<RequestId>();
  /** Sends to the remote not yet settled (notifications and responses included), so a close does not cut them off. */
  let inflight = 0;
  let onIdle: (() => void) | undefined;
  const checkIdle = () => {
    if (inflight === 0 && pending.size === 0) onIdle?.();
  };

  const answerLocally = (id: RequestId, error: unknown) => {
    const { message, status } = describe(error, shown);
    const text = redact(message);
    log(`postwise mcp: request ${String(id)} failed: ${text}`);
    void local.send({ jsonrpc: '2.0', id, error: { code: ProtocolErrorCode.InternalError, message: text, ...(status ? { data: { status } } : {}) } });
  };

  local.onmessage = (message: JSONRPCMessage) => {
    const request = isJSONRPCRequest(message) ? message : undefined;
    const stop = new AbortController();
    if (request) {
      pending.set(request.id, stop);
      if (request.method === 'initialize') initializing.add(request.id);
    }
    // A cancelled request is answered by no one: its HTTP request (a 2026 listen's stream) is closed, and not waited for.
    const cancelled = isJSONRPCNotification(message) && message.method === 'notifications/cancelled' ? (message.params?.requestId as RequestId | undefined) : undefined;
    if (cancelled !== undefined) {
      pending.get(cancelled)?.abort();
      pending.delete(cancelled);
    }
    inflight++;
    // A stream that ends without the answer (a server that went away, a proxy that cut an idle listen) is answered here.
    const onRequestStreamEnd = () => {
      if (request && !stop.signal.aborted && pending.delete(request.id)) answerLocally(request.id, new Error(`${shown} ended the answer's stream before answering`));
    };
    remote
      .send(message, { requestSignal: stop.signal, onRequestStreamEnd })
      .catch((error: unknown) => {
        // A request the remote never answered (unreachable, HTTP error) is answered here, or the client would wait forever.
        if (request && !stop.signal.aborted && pending.delete(request.id)) {
          initializing.delete(request.id);
          answerLocally(request.id, error);
        } else if (!stop.signal.aborted) {
          log(`postwise mcp: could not relay a message: ${redact(describe(error, shown).message)}`);
        }
      })
      .finally(() => {
        inflight--;
        checkIdle();
      });
  };

  remote.onmessage = (message: JSONRPCMessage) => {
    if (isJSONRPCResultResponse(message) || isJSONRPCErrorResponse(message)) {
      const id = message.id as RequestId;
      pending.delete(id);
      // Set before the client sees the result, so its next request already carries mcp-protocol-version.
      if (initializing.delete(id) && isJSONRPCResultResponse(message) && typeof message.result.protocolVersion === 'string') {
        remote.setProtocolVersion(message.result.protocolVersion);
      }
    }
    void local.send(message);
    checkIdle();
  };

  // Out-of-band reports (a failed send is also thrown to the catch above, where it is answered): diagnostics only.
  remote.onerror = (error) => log(`postwise mcp: remote: ${redact(describe(error, shown).message)}`);
  local.onerror = (error) => log(`postwise mcp: stdin: ${redact(error.message)}`);

  let finish!: () => void;
  const finished = new Promise<void>((resolve) => (finish = resolve));
  let closing = false;
  const shutdown = async (why: string) => {
    if (closing) return;
    closing = true;
    log(`postwise mcp: ${why}; closing`);
    // Answers still on their way are delivered first: a client may close stdin right after its last request.
    if (why === 'stdin closed' && (inflight > 0 || pending.size > 0)) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, DRAIN_MS);
        onIdle = () => {
          clearTimeout(timer);
          resolve();
        };
      });
    }
    try {
      // A stateful server frees the session at once; a stateless one has none and nothing is sent.
      await remote.terminateSession();
    } catch (error) {
      log(`postwise mcp: could not end the remote session: ${redact(describe(error, shown).message)}`);
    }
    await remote.close().catch(() => {});
    await local.close().catch(() => {});
    finish();
  };

  // StdioServerTransport does not watch for the end of stdin: that is the client going away.
  process.stdin.once('end', () => void shutdown('stdin closed'));
  process.stdin.once('close', () => void shutdown('stdin closed'));
  // A client that stopped reading must not crash the process with an unhandled EPIPE.
  process.stdout.on('error', (error) => void shutdown(`stdout failed (${error.message})`));

  await remote.start();
  await local.start();
  log(`postwise mcp: relaying stdio to ${shown}`);
  await finished;
}

/** What a failed exchange with the remote comes to, in words a user can act on. */
function describe(error: unknown, shown: string): { message: string; status?: number } {
  if (error instanceof SdkHttpError && error.status !== undefined && error.status > 0) {
    const detail = bodyDetail(error.message);
    const hint = error.status === 401 ? ' (check the API key: --api-key, POSTWISE_API_KEY or the profile)' : '';
    return { message: `${shown} answered HTTP ${error.status}${detail ? `: ${detail}` : ''}${hint}`, status: error.status };
  }
  if (error instanceof Error) {
    // fetch says only "fetch failed"; the reason (ECONNREFUSED, ENOTFOUND, a TLS failure) is its cause.
    const cause = error.cause instanceof Error ? error.cause : undefined;
    if (error.name === 'TypeError' && cause) return { message: `could not reach ${shown}: ${causeText(cause)}` };
    return { message: error.message };
  }
  return { message: String(error) };
}

function causeText(cause: Error): string {
  // An AggregateError (every address of a name refused) has an empty message and its reasons inside.
  if (!cause.message && cause instanceof AggregateError && cause.errors[0] instanceof Error) return causeText(cause.errors[0]);
  return cause.message || (cause as { code?: string }).code || cause.name;
}

/** The message of an HTTP error body: REST's `{ code, message }`, a JSON-RPC error, or the text itself. */
function bodyDetail(errorMessage: string): string {
  const marker = 'Error POSTing to endpoint: ';
  const at = errorMessage.indexOf(marker);
  const text = (at >= 0 ? errorMessage.slice(at + marker.length) : errorMessage.replace(/^Streamable HTTP error: /, '')).trim();
  let detail = text;
  try {
    const body = JSON.parse(text) as { message?: unknown; error?: { message?: unknown } };
    const message = body.error?.message ?? body.message;
    if (typeof message === 'string') detail = message;
  } catch {
    // Not JSON: the text as it came.
  }
  return detail.length > MAX_DETAIL ? `${detail.slice(0, MAX_DETAIL)}…` : detail;
}

/** A URL part as it is written and as it reads decoded (a malformed escape has only the first). */
function bothForms(part: string): string[] {
  try {
    return [part, decodeURIComponent(part)];
  } catch {
    return [part];
  }
}

/** Replaces every occurrence of a secret (a header value, a password in the URL) in a text shown to anyone. */
function redactor(secrets: string[]): (text: string) => string {
  // Values this short are no secrets worth the name, and hiding them would garble every message.
  const hidden = [...new Set(secrets.filter((secret) => secret.length >= 4))].sort((a, b) => b.length - a.length);
  return (text) => hidden.reduce((result, secret) => result.split(secret).join('[redacted]'), text);
}
