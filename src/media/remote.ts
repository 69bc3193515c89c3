import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import http, { type IncomingHttpHeaders, type IncomingMessage } from 'node:http';
import https from 'node:https';
import { isIP, type LookupFunction } from 'node:net';
import { fileTypeFromBuffer } from 'file-type';
import ipaddr from 'ipaddr.js';

/**
 * The guarded fetcher behind `POST /uploads/from-url`: it reads a file from a URL a caller names without letting
 * that caller reach anything but the public internet (SSRF).
 *
 * - Only `http:` and `https:`, without credentials in the URL.
 * - Every address is checked where the connection is made: an IP literal before any socket exists, a host name
 *   inside the socket's own DNS lookup (every address the name resolves to must be public), so a name that
 *   resolves once to a public address and then to a private one (DNS rebinding) has no window between check
 *   and connect. Public means ipaddr.js classes it `unicast` after unwrapping IPv4-mapped IPv6, and for IPv6
 *   also inside 2000::/3, the only global unicast space IANA allocates (ipaddr.js calls the deprecated
 *   IPv4-compatible `::a.b.c.d` unicast).
 * - At most `maxRedirects` redirects, each hop checked like the first.
 * - The body is capped while it streams: a Content-Length over the cap is refused before the body is read,
 *   a body that grows past it is cut off; one deadline covers every hop.
 * - Nothing is kept: each request has its own connection (no agent pool), closed on every outcome.
 *
 * `allowHosts` (from `MEDIA_FETCH_ALLOW_HOSTS`, empty by default) names hosts trusted whatever they resolve to,
 * for tests and self-hosting: `host` (any port) or `host:port`, e.g. `127.0.0.1:9000`, `[::1]:8080`, `assets.lan`.
 */

export interface RemoteFetchOptions {
  /** The largest body accepted, in bytes. */
  maxBytes: number;
  /** One deadline for the whole fetch, every hop and the body; default 15 s. */
  timeoutMs?: number;
  /** Redirects followed at most; default 3. */
  maxRedirects?: number;
  /** Cancels the fetch; it then rejects with the signal's reason, not a RemoteFetchError. */
  signal?: AbortSignal;
  /** Hosts reached even when their address is not public (see above); default none. */
  allowHosts?: readonly string[];
  /** The Accept header; default `image/*` (import from URL). */
  accept?: string;
}

export interface RemoteFile {
  bytes: Buffer;
  /** As the server declared it (the header, unparsed); not to be trusted, see `detectImageType`. */
  contentType: string | null;
  /** The URL the bytes came from, after redirects. */
  finalUrl: string;
  /** The response's headers (a client metadata document's Cache-Control sets how long it is kept). */
  headers: IncomingHttpHeaders;
}

/** Why a fetch was refused or failed; the message says the same in words, naming the host, never the whole URL. */
export type RemoteFetchReason =
  | 'INVALID_URL' // not an absolute URL, or it carries credentials
  | 'SCHEME_NOT_ALLOWED' // anything but http: and https:
  | 'ADDRESS_NOT_PUBLIC' // a literal or resolved address that is loopback, private, link-local, CGNAT, multicast…
  | 'TOO_MANY_REDIRECTS'
  | 'TOO_LARGE' // Content-Length or the streamed body over maxBytes
  | 'TIMEOUT'
  | 'UPSTREAM_STATUS' // the server answered something other than 2xx or a followable redirect
  | 'UNREACHABLE' // no such host, connection refused or reset, not HTTP
  | 'NOT_AN_IMAGE'; // fetchRemoteImage only: the bytes are not JPEG, PNG, WebP or GIF

export class RemoteFetchError extends Error {
  constructor(
    readonly reason: RemoteFetchReason,
    message: string,
  ) {
    super(message);
    this.name = 'RemoteFetchError';
  }
}

const DEFAULT_TIMEOUT_MS = 15_000;
const DEFAULT_MAX_REDIRECTS = 3;
const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308]);
const IPV6_GLOBAL_UNICAST = ipaddr.parseCIDR('2000::/3');

/** Fetches `url` with GET under the guard above. Refusals and failures reject with a RemoteFetchError. */
export async function fetchRemoteFile(url: string, options: RemoteFetchOptions): Promise<RemoteFile> {
  const allowed = (options.allowHosts ?? []).map(parseAllowHost);
  const maxRedirects = options.maxRedirects ?? DEFAULT_MAX_REDIRECTS;
  const deadline = AbortSignal.timeout(options.timeoutMs ?? DEFAULT_TIMEOUT_MS);
  const signal = options.signal ? AbortSignal.any([options.signal, deadline]) : deadline;
  let target = checkedUrl(url);
  try {
    for (let redirects = 0; ; redirects++) {
      const response = await open(target, allowed.some((entry) => entry.matches(target)), signal, {
        method: 'GET',
        headers: { accept: options.accept ?? 'image/*', 'user-agent': 'Postwise-media-import' },
      });
      const status = response.statusCode ?? 0;
      if (REDIRECT_STATUSES.has(status) && response.headers.location !== undefined) {
        response.destroy();
        if (redirects >= maxRedirects) {
          throw new RemoteFetchError('TOO_MANY_REDIRECTS', `The URL redirects more than ${maxRedirects} times.`);
        }
        target = checkedUrl(response.headers.location, target);
        continue;
      }
      if (status < 200 || status > 299) {
        response.destroy();
        throw new RemoteFetchError('UPSTREAM_STATUS', `${target.host} answered HTTP ${status}.`);
      }
      const bytes = await readCapped(response, options.maxBytes, target);
      return { bytes, contentType: response.headers['content-type'] ?? null, finalUrl: target.href, headers: response.headers };
    }
  } catch (error) {
    if (error instanceof RemoteFetchError) throw error;
    if (options.signal?.aborted) throw options.signal.reason;
    if (deadline.aborted) throw new RemoteFetchError('TIMEOUT', `${target.host} did not send the file within ${options.timeoutMs ?? DEFAULT_TIMEOUT_MS} ms.`);
    const code = (error as NodeJS.ErrnoException).code;
    throw new RemoteFetchError('UNREACHABLE', `${target.host} could not be fetched${code ? ` (${code})` : ''}.`);
  }
}

export type ImageMediaType = 'image/jpeg' | 'image/png' | 'image/webp' | 'image/gif';

/** The image type the bytes really are (their magic numbers, read by file-type), or null for anything else. */
export async function detectImageType(bytes: Uint8Array): Promise<ImageMediaType | null> {
  const mime = (await fileTypeFromBuffer(bytes))?.mime;
  switch (mime) {
    case 'image/jpeg':
    case 'image/png':
    case 'image/webp':
    case 'image/gif':
      return mime;
    case 'image/apng': // an animated PNG is a PNG (its first frame is what a PNG reader shows)
      return 'image/png';
    default:
      return null;
  }
}

/** `fetchRemoteFile`, then refuses with NOT_AN_IMAGE unless the bytes are a JPEG, PNG, WebP or GIF. */
export async function fetchRemoteImage(url: string, options: RemoteFetchOptions): Promise<RemoteFile & { mediaType: ImageMediaType }> {
  const file = await fetchRemoteFile(url, options);
  const mediaType = await detectImageType(file.bytes);
  if (!mediaType) {
    throw new RemoteFetchError('NOT_AN_IMAGE', `${new URL(file.finalUrl).host} did not send a JPEG, PNG, WebP or GIF image.`);
  }
  return { ...file, mediaType };
}

/** True when connecting to `address` (an IP literal) reaches the public internet only. */
export function isPublicAddress(address: string): boolean {
  if (!ipaddr.isValid(address)) return false;
  const parsed = ipaddr.process(address); // IPv4-mapped IPv6 becomes the IPv4 address it carries
  if (parsed.range() !== 'unicast') return false;
  return parsed.kind() === 'ipv4' || parsed.match(IPV6_GLOBAL_UNICAST);
}

/**
 * One `MEDIA_FETCH_ALLOW_HOSTS` entry: `host` or `host:port`, an IPv6 address in brackets. The host is normalized
 * as a URL's is (case, numeric IPv4 forms), so `127.1` allows what `http://127.1/` reaches.
 */
export function parseAllowHost(entry: string): { hostname: string; port: number | null; matches(url: URL): boolean } {
  const match = /^(\[[^\]]+\]|[^:[\]/@]+)(?::(\d{1,5}))?$/.exec(entry.trim());
  let hostname: string | undefined;
  try {
    if (match) hostname = new URL(`http://${match[1]}`).hostname;
  } catch {
    hostname = undefined;
  }
  const port = match?.[2] === undefined ? null : Number(match[2]);
  if (!hostname || (port !== null && port > 65535)) throw new Error(`"${entry}" is not a host or host:port`);
  return {
    hostname,
    port,
    matches: (url) => url.hostname === hostname && (port === null || effectivePort(url) === port),
  };
}

function effectivePort(url: URL): number {
  return url.port ? Number(url.port) : url.protocol === 'https:' ? 443 : 80;
}

/** Parses a URL (a redirect's Location relative to the hop it came from) and checks what can be checked before connecting. */
function checkedUrl(raw: string, base?: URL): URL {
  let url: URL;
  try {
    url = new URL(raw, base);
  } catch {
    throw new RemoteFetchError('INVALID_URL', 'The URL is not a valid absolute URL.');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new RemoteFetchError('SCHEME_NOT_ALLOWED', `Only http and https URLs can be fetched, not ${url.protocol.slice(0, -1)}.`);
  }
  if (url.username || url.password) throw new RemoteFetchError('INVALID_URL', 'The URL must not carry a user name or password.');
  return url;
}

function notPublic(host: string, address: string): RemoteFetchError {
  const shown = host === address || host === `[${address}]` ? host : `${host} (${address})`;
  return new RemoteFetchError('ADDRESS_NOT_PUBLIC', `${shown} is not a public internet address; only public hosts can be fetched.`);
}

/**
 * The lookup each guarded socket resolves its host with: every address the name has must be public, or the
 * connection fails before it is attempted. Node calls it with `all: true` when it may try several addresses.
 */
const publicOnlyLookup: LookupFunction = (hostname, options, callback) => {
  dnsLookup(hostname, { ...options, all: true }, (error, addresses: LookupAddress[]) => {
    if (error) return callback(error, '', 0);
    const refused = addresses.find((entry) => !isPublicAddress(entry.address));
    if (refused || addresses.length === 0) return callback(notPublic(hostname, refused?.address ?? 'no address'), '', 0);
    if (options.all) return callback(null, addresses);
    callback(null, addresses[0]!.address, addresses[0]!.family);
  });
};

/**
 * One request under the guard (see above) that follows no redirect, as a webhook delivery is sent: answers the status
 * and the first `excerptBytes` of the body as text. Refusals and failures reject with a RemoteFetchError, as
 * fetchRemoteFile's do.
 */
export async function sendGuarded(
  url: string,
  request: { method: string; headers: Record<string, string>; body: string; timeoutMs: number; allowHosts?: readonly string[]; excerptBytes: number },
): Promise<{ status: number; excerpt: string }> {
  const target = checkedUrl(url);
  const deadline = AbortSignal.timeout(request.timeoutMs);
  try {
    const trusted = (request.allowHosts ?? []).map(parseAllowHost).some((entry) => entry.matches(target));
    const response = await open(target, trusted, deadline, request);
    let excerpt = Buffer.alloc(0);
    try {
      for await (const chunk of response as AsyncIterable<Buffer>) {
        excerpt = Buffer.concat([excerpt, chunk]);
        if (excerpt.length >= request.excerptBytes) break;
      }
    } finally {
      response.destroy();
    }
    return { status: response.statusCode ?? 0, excerpt: excerpt.subarray(0, request.excerptBytes).toString('utf8') };
  } catch (error) {
    if (error instanceof RemoteFetchError) throw error;
    if (deadline.aborted) throw new RemoteFetchError('TIMEOUT', `${target.host} did not answer within ${request.timeoutMs} ms.`);
    const code = (error as NodeJS.ErrnoException).code;
    throw new RemoteFetchError('UNREACHABLE', `${target.host} could not be reached${code ? ` (${code})` : ''}.`);
  }
}

/** What `requestGuarded` answers: whatever the status, with the headers and the body read (capped). */
export interface GuardedAnswer {
  status: number;
  headers: IncomingHttpHeaders;
  bytes: Buffer;
}

/**
 * Any one request under the guard, following no redirect (a 3xx is answered as it is), the body capped at `maxBytes`:
 * for talking to a server a caller named (a Mastodon instance at connect time). Refusals and failures reject with a
 * RemoteFetchError, as fetchRemoteFile's do.
 */
export async function requestGuarded(
  url: string,
  request: { method: string; headers?: Record<string, string>; body?: string; maxBytes: number; timeoutMs: number; allowHosts?: readonly string[]; signal?: AbortSignal },
): Promise<GuardedAnswer> {
  const target = checkedUrl(url);
  const deadline = AbortSignal.timeout(request.timeoutMs);
  const signal = request.signal ? AbortSignal.any([request.signal, deadline]) : deadline;
  try {
    const trusted = (request.allowHosts ?? []).map(parseAllowHost).some((entry) => entry.matches(target));
    const response = await open(target, trusted, signal, { method: request.method, headers: request.headers ?? {}, ...(request.body !== undefined && { body: request.body }) });
    const bytes = await readCapped(response, request.maxBytes, target);
    return { status: response.statusCode ?? 0, headers: response.headers, bytes };
  } catch (error) {
    if (error instanceof RemoteFetchError) throw error;
    if (request.signal?.aborted) throw request.signal.reason;
    if (deadline.aborted) throw new RemoteFetchError('TIMEOUT', `${target.host} did not answer within ${request.timeoutMs} ms.`);
    const code = (error as NodeJS.ErrnoException).code;
    throw new RemoteFetchError('UNREACHABLE', `${target.host} could not be reached${code ? ` (${code})` : ''}.`);
  }
}

/**
 * `requestGuarded` in `fetch`'s shape, for libraries that take a fetch (oauth4webapi's `customFetch`): every request
 * they make goes through the guard.
 */
export function guardedFetch(options: { maxBytes: number; timeoutMs: number; allowHosts?: readonly string[] }) {
  return async (input: URL | string | Request, init: RequestInit = {}): Promise<Response> => {
    const body = init.body === undefined || init.body === null ? undefined : init.body instanceof URLSearchParams ? init.body.toString() : String(init.body);
    const answer = await requestGuarded(input instanceof Request ? input.url : String(input), {
      ...options,
      method: init.method ?? 'GET',
      headers: Object.fromEntries(new Headers(init.headers).entries()),
      ...(body !== undefined && { body }),
      ...(init.signal ? { signal: init.signal } : {}),
    });
    const headers = new Headers();
    for (const [name, value] of Object.entries(answer.headers)) {
      if (typeof value === 'string') headers.set(name, value);
      else if (Array.isArray(value)) for (const one of value) headers.append(name, one);
    }
    const nullBody = answer.status === 204 || answer.status === 304;
    return new Response(nullBody ? null : new Uint8Array(answer.bytes), { status: answer.status, headers });
  };
}

/** One request on its own connection; resolves with the response head. */
function open(
  url: URL,
  trusted: boolean,
  signal: AbortSignal,
  { method, headers, body }: { method: string; headers: Record<string, string>; body?: string },
): Promise<IncomingMessage> {
  const literal = url.hostname.replace(/^\[(.*)\]$/, '$1');
  // Node connects to an IP literal without a lookup, so a literal is checked here, before any socket exists.
  if (!trusted && isIP(literal) && !isPublicAddress(literal)) return Promise.reject(notPublic(url.hostname, literal));
  return new Promise((resolve, reject) => {
    const request = (url.protocol === 'https:' ? https : http).request(url, {
      method,
      agent: false,
      signal,
      ...(trusted ? {} : { lookup: publicOnlyLookup }),
      headers: { 'accept-encoding': 'identity', connection: 'close', ...headers },
    });
    request.once('response', resolve);
    request.on('error', reject); // kept: an error after the response has nothing left to settle
    request.end(body);
  });
}

/** The body, refused as soon as it is known to exceed `maxBytes`; the connection is closed either way. */
async function readCapped(response: IncomingMessage, maxBytes: number, url: URL): Promise<Buffer> {
  const tooLarge = () => new RemoteFetchError('TOO_LARGE', `The file at ${url.host} is larger than ${maxBytes} bytes.`);
  try {
    const declared = Number(response.headers['content-length']);
    if (Number.isFinite(declared) && declared > maxBytes) throw tooLarge();
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of response as AsyncIterable<Buffer>) {
      size += chunk.length;
      if (size > maxBytes) throw tooLarge();
      chunks.push(chunk);
    }
    return Buffer.concat(chunks, size);
  } finally {
    response.destroy();
  }
}
