import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import qs from 'qs';
import { CliFailure, EXIT, exitCodeOf } from './failure.js';

/** Who the client acts as: an API key or an app sign-in (public operations), or a dashboard session (every operation of the member). */
export type Credentials = { apiKey: string } | { session: { token: string; csrfToken: string } } | { oauth: TokenSource } | undefined;

/** The access token of an app sign-in (`postwise login --web`, src/cli/oauth.ts), renewed as it lapses. */
export interface TokenSource {
  /** The token to send now: renewed first when it is about to lapse. */
  token(): Promise<string>;
  /** A new token after the server refused `rejected` (401 invalid_token); throws, saying to sign in again, when there is none. */
  refresh(rejected: string): Promise<string>;
  /** The failure for a token refused even once renewed. */
  refused(): CliFailure;
}

export interface ClientOptions {
  baseUrl: string;
  credentials: Credentials;
  /** How many times a 429 (after its Retry-After) or a lost connection of a repeatable request is retried. */
  retries: number;
  /** Trace lines for --verbose, on stderr; never given a key, a token or a signed URL. */
  trace?: (line: string) => void;
}

export interface Answer {
  status: number;
  headers: Headers;
  text: string;
  json: unknown;
}

export interface Call {
  method: string;
  /** Below /api/v1 (`/posts`), or from the server's root when it starts with `/auth/` or `/api/`. */
  path: string;
  query?: Record<string, unknown>;
  body?: unknown;
  /** Sent as Idempotency-Key, the same on every retry, so a retried create makes one resource. */
  idempotencyKey?: string;
}

const SECRET_HEADERS = new Set(['x-api-key', 'cookie', 'x-csrf-token', 'set-cookie', 'authorization']);
const MAX_RETRY_AFTER_SECONDS = 60;

export const newIdempotencyKey = () => randomUUID();

export function urlOf(baseUrl: string, path: string, query?: Record<string, unknown>): string {
  const search = query && Object.keys(query).length ? `?${qs.stringify(query, { arrayFormat: 'repeat', encodeValuesOnly: true })}` : '';
  const prefix = path.startsWith('/auth/') || path.startsWith('/api/') ? '' : '/api/v1';
  return `${baseUrl.replace(/\/$/, '')}${prefix}${path}${search}`;
}

/** Sends one call, retrying 429s and lost connections of repeatable calls; answers whatever status came back. */
export async function send(options: ClientOptions, call: Call): Promise<Answer> {
  const url = urlOf(options.baseUrl, call.path, call.query);
  const headers: Record<string, string> = { accept: 'application/json' };
  if (call.body !== undefined) headers['content-type'] = 'application/json';
  if (call.idempotencyKey) headers['idempotency-key'] = call.idempotencyKey;
  if (options.credentials && 'apiKey' in options.credentials) headers['x-api-key'] = options.credentials.apiKey;
  if (options.credentials && 'session' in options.credentials) {
    headers.cookie = `postwise_session=${options.credentials.session.token}`;
    headers['x-csrf-token'] = options.credentials.session.csrfToken;
  }
  // A GET, or a create under its key, may be sent again when its answer was lost; anything else might act twice.
  const repeatable = call.method === 'GET' || call.idempotencyKey !== undefined;
  const oauth = options.credentials && 'oauth' in options.credentials ? options.credentials.oauth : undefined;
  let renewed = false;
  for (let attempt = 0; ; attempt++) {
    if (oauth) headers.authorization = `Bearer ${await oauth.token()}`;
    options.trace?.(`> ${call.method} ${url}`);
    for (const [name, value] of Object.entries(headers)) options.trace?.(`> ${name}: ${SECRET_HEADERS.has(name) ? '(hidden)' : value}`);
    let response: Response;
    try {
      response = await fetch(url, { method: call.method, headers, body: call.body === undefined ? undefined : JSON.stringify(call.body) });
    } catch (error) {
      const reason = (error as { cause?: { code?: string; message?: string } }).cause;
      const refused = reason?.code === 'ECONNREFUSED' || reason?.code === 'ENOTFOUND' || reason?.code === 'EAI_AGAIN';
      if (repeatable && !refused && attempt < options.retries) {
        options.trace?.(`< no answer (${reason?.code ?? String(error)}); sending again`);
        await sleep(250 * 2 ** attempt);
        continue;
      }
      throw new CliFailure(
        'UNREACHABLE',
        refused
          ? `Could not reach ${options.baseUrl} (${reason?.code}): is the server running? Set --base-url or POSTWISE_BASE_URL`
          : `The connection to ${options.baseUrl} was lost (${reason?.code ?? reason?.message ?? String(error)})${repeatable ? '' : '; the request may have been carried out'}`,
        EXIT.unreachable,
      );
    }
    const text = await response.text();
    options.trace?.(`< ${response.status} ${response.statusText}`);
    for (const [name, value] of response.headers) options.trace?.(`< ${name}: ${SECRET_HEADERS.has(name) ? '(hidden)' : value}`);
    // A refused access token (lapsed early, or the clock off) is renewed and the call sent once more: a 401 is answered
    // before anything is done, so even a create is sent again safely. Refused once renewed, the sign-in is over.
    if (oauth && response.status === 401 && /\binvalid_token\b/.test(response.headers.get('www-authenticate') ?? '')) {
      if (renewed) throw oauth.refused();
      renewed = true;
      options.trace?.('< the access token was refused; renewing it and sending again');
      await oauth.refresh(headers.authorization!.slice('Bearer '.length));
      attempt--;
      continue;
    }
    if (response.status === 429 && attempt < options.retries) {
      const wait = Number(response.headers.get('retry-after') ?? '1');
      if (Number.isFinite(wait) && wait <= MAX_RETRY_AFTER_SECONDS) {
        options.trace?.(`< rate limited; retrying in ${wait} s (${attempt + 1} of ${options.retries})`);
        await sleep(Math.max(wait, 0) * 1000);
        continue;
      }
    }
    let json: unknown;
    try {
      json = text ? JSON.parse(text) : undefined;
    } catch {
      json = undefined;
    }
    return { status: response.status, headers: response.headers, text, json };
  }
}

/** The answer's body when it succeeded; otherwise the failure, with the server's code and message. */
export function succeeded(answer: Answer): Answer {
  if (answer.status < 400) return answer;
  const body = answer.json as { code?: string; message?: string } | undefined;
  const code = body?.code ?? `HTTP_${answer.status}`;
  throw new CliFailure(code, body?.message ?? (answer.text.slice(0, 300) || `The server answered ${answer.status}`), exitCodeOf(answer.status, code));
}
