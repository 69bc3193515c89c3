import { createHash, randomBytes } from 'node:crypto';
import express, { type NextFunction, type Request, type Response } from 'express';
import { fileTypeFromBuffer } from 'file-type';
import qs from 'qs';
import sharp from 'sharp';
import { escapeHtml, flatHeaders, htmlPage, startLoopbackApp } from './loopback-app.js';

/**
 * A strict fake of one Mastodon instance on loopback (plain http: the service reaches it through
 * MEDIA_FETCH_ALLOW_HOSTS), written from Mastodon's public documentation (docs.joinmastodon.org, the
 * mastodon/documentation repository: methods/apps, methods/oauth, spec/oauth, api/oauth-scopes, methods/instance,
 * methods/accounts, methods/media, methods/statuses, api/rate-limits, api/guidelines, entities/*) and, where the docs
 * are silent, from Mastodon's code as bench/.tmp/mastodon-research.md cites it (Doorkeeper's OAuth behaviour,
 * PostStatusService, StatusLengthValidator, the statuses controller). Every rule below names where it comes from.
 *
 * It checks what a client sends (method, path, token and scopes, form/JSON/multipart fields, the Idempotency-Key) and
 * answers as Mastodon does, errors as `{ error, error_description? }` (entities/Error). Where Mastodon silently drops
 * what a client sent (an unknown parameter, `media_ids` that is not an array), the fake refuses it instead, saying so,
 * so that a client's mistake shows in a test rather than as a post quietly missing its images.
 *
 * Not modelled: polls, scheduled statuses, quotes, video and audio, follows (private statuses are seen by their owner
 * only), federation. A server that calls itself GoToSocial, Pleroma or Akkoma (`software`) still behaves as Mastodon.
 */

// --- Types ---

export type Visibility = 'public' | 'unlisted' | 'private' | 'direct';

/** The instance's limits, as `configuration.statuses` and `configuration.media_attachments` of /api/v2/instance name them. */
export interface FakeLimits {
  max_characters: number;
  characters_reserved_per_url: number;
  max_media_attachments: number;
  description_limit: number;
  supported_mime_types: string[];
  image_size_limit: number;
  image_matrix_limit: number;
}

export interface FakeAccount {
  id: string;
  username: string;
  displayName: string;
  /** `source.privacy`: the visibility a status gets when the request names none (PostStatusService). */
  privacy: Visibility;
  /** `source.language`: the posting language used when a status names none or an unknown one. */
  language: string | null;
  /** `source.sensitive`: whether media are marked sensitive when the request does not say. */
  sensitive: boolean;
  /** A disabled login: every token of the account is answered 403 "Your login is currently disabled". */
  disabled: boolean;
  createdAt: Date;
}

/** An app registered with POST /api/v1/apps (Doorkeeper::Application). */
export interface FakeApp {
  id: string;
  clientId: string;
  clientSecret: string;
  name: string;
  website: string | null;
  redirectUris: string[];
  scopes: string[];
  createdAt: Date;
}

/** An access token: a user's (authorization_code) or the app's own (client_credentials, `accountId` null). */
export interface FakeToken {
  value: string;
  clientId: string;
  accountId: string | null;
  scopes: string[];
  createdAt: Date;
  revokedAt: Date | null;
}

export interface FakeMedia {
  id: string;
  accountId: string;
  /** Mastodon turns an animated GIF into `gifv` (a video, processed asynchronously). */
  type: 'image' | 'gifv';
  /** The type read from the bytes. */
  mimeType: string;
  bytes: Buffer;
  width: number;
  height: number;
  description: string | null;
  focus: { x: number; y: number } | null;
  /** When processing ends: until then `url` is null, GET /api/v1/media/:id answers 206 and a status cannot take it. */
  readyAt: number;
  statusId: string | null;
}

export interface FakeStatus {
  id: string;
  accountId: string;
  /** The text as written (`/source`), after Mastodon's strip. */
  text: string;
  spoilerText: string;
  visibility: Visibility;
  sensitive: boolean;
  language: string;
  inReplyToId: string | null;
  inReplyToAccountId: string | null;
  mediaIds: string[];
  /** The app that made it (`application` of the Status entity); `Web` for statuses made with `postAs`. */
  application: { name: string; website: string | null };
  createdAt: Date;
  /** The Idempotency-Key it was made with, if any. */
  idempotencyKey: string | null;
}

/** A request the fake received, for assertions: the body as parsed (a file as `{ filename, type, size }`). */
export interface FakeRequest {
  method: string;
  path: string;
  query: Record<string, unknown>;
  headers: Record<string, string>;
  body: unknown;
  /** The answer's status; absent while unanswered, and for a dropped connection. */
  status?: number;
  at: Date;
}

/**
 * A fault the next request to an endpoint meets, before anything else is checked (a proxy or Rack::Attack answering),
 * or `drop`: the request is carried out (the status made, the token revoked…) and the connection is cut unanswered.
 * Without `html` the answer is Mastodon's JSON; `html: true` answers an HTML page, as a proxy or Rails' 500 page does.
 * `answer`: none, the request answered as usual (to let requests through before a fault meant for a later one).
 */
export type MastodonFault = { status: 429 | 500 | 502 | 503; reset?: Date; html?: boolean } | 'drop' | 'answer';
export type FaultEndpoint = 'statuses' | 'media' | 'revoke' | 'token';

/** Rate-limit families (docs api/rate-limits.md; the statuses family is Mastodon's RateLimiter, 300 per 3 hours). */
export type RateFamily = 'api' | 'media' | 'deletes' | 'statuses';

export interface FakeMastodonOptions {
  limits?: Partial<FakeLimits>;
  /** What NodeInfo and the instance document call the server ('mastodon', 'gotosocial', 'pleroma', 'akkoma'…). */
  software?: string;
  /** Its version; default 4.4.3 (4.2.12 with `pkce: false`). */
  version?: string;
  /**
   * true (default): Mastodon 4.3+ — the OAuth metadata document offers S256 PKCE, apps take several redirect URIs.
   * false: before 4.3 — /.well-known/oauth-authorization-server answers 404, PKCE parameters are ignored, `redirect_uris`
   * must be one string, apps/verify_credentials needs `read`, there is no `profile` scope.
   */
  pkce?: boolean;
  /** false: GET /api/v2/instance answers 404 (before 4.0, and Akkoma), the client must read /api/v1/instance. */
  instanceV2?: boolean;
  /** How long an Idempotency-Key is kept (Mastodon: 1 hour). */
  idempotencyTtlMs?: number;
  /** The handles' domain (`@user@domain`, LOCAL_DOMAIN); default the fake's host. */
  domain?: string;
  /** The accounts on the instance; default ann (Ann Example) and bob (Bob Sample). */
  accounts?: { username: string; displayName?: string; privacy?: Visibility }[];
  /** Consent at once as this account (a username), or refuse (`deny`); default: show the consent page. */
  autoConsent?: string | 'deny' | null;
  /** How long an image upload takes to process (0: at once, 200 with its URL; more: 202, then 206 until ready). */
  processingMs?: number;
  rateLimits?: Partial<Record<RateFamily, { limit: number; periodMs: number }>>;
  /** Doorkeeper's `reuse_access_token` (Mastodon's config): the same account, app and scopes get the same token back. */
  reuseAccessTokens?: boolean;
}

export interface FakeMastodon {
  /** The instance's origin, `http://127.0.0.1:<port>`. */
  url: string;
  /** `127.0.0.1:<port>`: what MEDIA_FETCH_ALLOW_HOSTS names. */
  host: string;
  /** The handles' domain. */
  domain: string;
  software: string;
  version: string;
  /** The limits the instance documents and enforces; change them to make the instance change its mind. */
  limits: FakeLimits;
  idempotencyTtlMs: number;
  /** Processing time of the next image uploads (see the option). */
  processingMs: number;
  /** Answer an Idempotency-Key replay with 500 instead of the status (mastodon/mastodon#40399). */
  replayAnswers500: boolean;
  /** The accounts, by username. */
  accounts: Map<string, FakeAccount>;
  /** The registered apps, by client id. */
  apps: Map<string, FakeApp>;
  /** How many times POST /api/v1/apps registered an app. */
  registrations: number;
  /** Every token issued, by value. */
  tokens: Map<string, FakeToken>;
  /** The tokens revoked through POST /oauth/revoke. */
  revokedTokens: Set<string>;
  statuses: Map<string, FakeStatus>;
  media: Map<string, FakeMedia>;
  /** Every request received, in order. */
  requests: FakeRequest[];
  addAccount(username: string, displayName?: string): FakeAccount;
  /** The account signed in in the browser: the one the consent page authorizes. */
  signInAs(account: FakeAccount | string): void;
  /** Consent at once as `account` (GET /oauth/authorize redirects with a code), refuse at once (`deny`), or show the page (null). */
  autoConsent(account: FakeAccount | string | 'deny' | null): void;
  /** The instance forgets every app, and with them their codes and tokens (apps vacuumed before 4.3, or a rebuilt server). */
  forgetApps(): void;
  failNext(endpoint: FaultEndpoint, fault: MastodonFault): void;
  /** The next POST /api/v1/statuses waits, once checked and just before the status is made, until the function is called. */
  holdNext(endpoint: 'statuses'): () => void;
  /** The account's statuses that still exist, oldest first. */
  statusesOf(account: FakeAccount | string): FakeStatus[];
  /** A token for `account` without the OAuth dance, issued to a test app (for tests that start connected). */
  issueToken(account: FakeAccount | string, scopes?: string): string;
  /** A status the account wrote itself in Mastodon's web interface (application `Web`). */
  postAs(account: FakeAccount | string, text: string, options?: { visibility?: Visibility; inReplyToId?: string; spoilerText?: string }): FakeStatus;
  close(): Promise<void>;
}

// --- Constants from the documentation ---

/** api/oauth-scopes.md, and `scopes_supported` of the metadata document (4.3+; `profile` is 4.3+). */
const SCOPES = [
  'read', 'write', 'push', 'follow', 'profile',
  'read:accounts', 'read:blocks', 'read:bookmarks', 'read:favourites', 'read:filters', 'read:follows', 'read:lists',
  'read:mutes', 'read:notifications', 'read:search', 'read:statuses',
  'write:accounts', 'write:blocks', 'write:bookmarks', 'write:conversations', 'write:favourites', 'write:filters',
  'write:follows', 'write:lists', 'write:media', 'write:mutes', 'write:notifications', 'write:reports', 'write:statuses',
  'admin:read', 'admin:read:accounts', 'admin:read:reports', 'admin:read:domain_allows', 'admin:read:domain_blocks',
  'admin:read:ip_blocks', 'admin:read:email_domain_blocks', 'admin:read:canonical_email_blocks',
  'admin:write', 'admin:write:accounts', 'admin:write:reports', 'admin:write:domain_allows', 'admin:write:domain_blocks',
  'admin:write:ip_blocks', 'admin:write:email_domain_blocks', 'admin:write:canonical_email_blocks',
];

/** entities/Instance.md's example (mastodon.social). The fake processes only the image types. */
const DEFAULT_LIMITS: FakeLimits = {
  max_characters: 500,
  characters_reserved_per_url: 23,
  max_media_attachments: 4,
  description_limit: 1500,
  supported_mime_types: [
    'image/jpeg', 'image/png', 'image/gif', 'image/heic', 'image/heif', 'image/webp', 'image/avif',
    'video/webm', 'video/mp4', 'video/quicktime', 'video/ogg',
    'audio/wave', 'audio/wav', 'audio/x-wav', 'audio/ogg', 'audio/mpeg', 'audio/mp3', 'audio/webm', 'audio/flac', 'audio/aac', 'audio/mp4',
  ],
  image_size_limit: 16_777_216,
  image_matrix_limit: 33_177_600,
};

/** api/rate-limits.md: 300 per 5 minutes for everything, media uploads and status deletions 30 per 30 minutes. */
const DEFAULT_RATE_LIMITS: Record<RateFamily, { limit: number; periodMs: number }> = {
  api: { limit: 300, periodMs: 5 * 60_000 },
  media: { limit: 30, periodMs: 30 * 60_000 },
  deletes: { limit: 30, periodMs: 30 * 60_000 },
  statuses: { limit: 300, periodMs: 3 * 3600_000 },
};

const VISIBILITIES: Visibility[] = ['public', 'unlisted', 'private', 'direct'];
const OOB = 'urn:ietf:wg:oauth:2.0:oob';
/** Doorkeeper's default, kept by Mastodon: an authorization code lives 10 minutes. */
const CODE_TTL_MS = 10 * 60_000;
/** Mastodon's Doorkeeper config: `forbid_redirect_uri { |uri| %w(data vbscript javascript).include?(uri.scheme) }`. */
const FORBIDDEN_SCHEMES = ['data:', 'vbscript:', 'javascript:'];
/** Mastodon's ApplicationExtension: APP_NAME_LIMIT, APP_REDIRECT_URI_LIMIT. */
const APP_NAME_LIMIT = 60;
const APP_REDIRECT_URI_LIMIT = 2000;

// Doorkeeper's error descriptions (its en.yml, as docs methods/oauth.md quotes them).
const INVALID_CLIENT = 'Client authentication failed due to unknown client, no client authentication included, or unsupported authentication method.';
const INVALID_GRANT = 'The provided authorization grant is invalid, expired, revoked, does not match the redirection URI used in the authorization request, or was issued to another client.';
const INVALID_SCOPE = 'The requested scope is invalid, unknown, or malformed.';
const INVALID_REDIRECT = "The requested redirect uri is malformed or doesn't match client redirect URI.";
const ACCESS_DENIED = 'The resource owner or authorization server denied the request.';

// --- The fake ---

export async function startFakeMastodon(options: FakeMastodonOptions = {}): Promise<FakeMastodon> {
  const { app, server, host, url } = await startLoopbackApp();
  const pkce = options.pkce ?? true;
  const rateLimits = { ...DEFAULT_RATE_LIMITS, ...options.rateLimits };
  const reuseTokens = options.reuseAccessTokens ?? true;
  const avatar = await sharp({ create: { width: 4, height: 4, channels: 3, background: '#6364ff' } }).png().toBuffer();

  const codes = new Map<string, { clientId: string; accountId: string; redirectUri: string; scopes: string[]; challenge: string | null; expiresAt: number; used: boolean }>();
  const consentForms = new Map<string, string>(); // authenticity token → the signed-in account it was rendered for
  const idempotency = new Map<string, { statusId: string; expiresAt: number }>(); // `${account id}:${key}`
  const faults: Record<FaultEndpoint, MastodonFault[]> = { statuses: [], media: [], revoke: [], token: [] };
  const holds: Promise<void>[] = [];
  const rateCounts = new Map<string, number>();
  let signedIn: FakeAccount | undefined;
  let testApp: FakeApp | undefined;
  let appSequence = 0;
  let consent: FakeAccount | 'deny' | null = null;

  // Snowflake-like ids (Mastodon's: milliseconds << 16 | sequence): strings that sort as they were made.
  let lastId = 0n;
  const nextId = () => {
    const candidate = BigInt(Date.now()) << 16n;
    lastId = candidate > lastId ? candidate : lastId + 1n;
    return lastId.toString();
  };

  const fake: FakeMastodon = {
    url,
    host,
    domain: options.domain ?? host,
    software: options.software ?? 'mastodon',
    version: options.version ?? (pkce ? '4.4.3' : '4.2.12'),
    limits: { ...DEFAULT_LIMITS, ...options.limits },
    idempotencyTtlMs: options.idempotencyTtlMs ?? 3600_000,
    processingMs: options.processingMs ?? 0,
    replayAnswers500: false,
    accounts: new Map(),
    apps: new Map(),
    registrations: 0,
    tokens: new Map(),
    revokedTokens: new Set(),
    statuses: new Map(),
    media: new Map(),
    requests: [],
    addAccount(username, displayName) {
      const account: FakeAccount = { id: nextId(), username, displayName: displayName ?? username, privacy: 'public', language: null, sensitive: false, disabled: false, createdAt: new Date() };
      fake.accounts.set(username, account);
      signedIn ??= account;
      return account;
    },
    signInAs: (account) => void (signedIn = accountNamed(account)),
    autoConsent: (account) => void (consent = account === 'deny' || account === null ? account : accountNamed(account)),
    forgetApps() {
      // Doorkeeper's Application `has_many :access_grants, :access_tokens, dependent: :delete_all`.
      fake.apps.clear();
      for (const [value, token] of fake.tokens) if (!fake.apps.has(token.clientId)) fake.tokens.delete(value);
      codes.clear();
    },
    failNext: (endpoint, fault) => void faults[endpoint].push(fault),
    holdNext: () => {
      let release!: () => void;
      holds.push(new Promise<void>((resolve) => (release = resolve)));
      return release;
    },
    statusesOf: (account) => {
      const { id } = accountNamed(account);
      return [...fake.statuses.values()].filter((status) => status.accountId === id).sort(byId);
    },
    issueToken(account, scopes = 'read:accounts read:statuses write:statuses write:media') {
      // One app of the fake's own, registered again if the instance forgot it; it holds every scope but the admin ones.
      if (!testApp || !fake.apps.has(testApp.clientId)) testApp = registerApp('Test tokens', null, [OOB], knownScopes().filter((s) => !s.startsWith('admin')));
      return issue(testApp, accountNamed(account).id, scopes.split(' ')).value;
    },
    postAs(account, text, postOptions = {}) {
      const author = accountNamed(account);
      const parent = postOptions.inReplyToId ? fake.statuses.get(postOptions.inReplyToId) : undefined;
      return createStatus(author, {
        text, spoilerText: postOptions.spoilerText ?? '', visibility: postOptions.visibility ?? author.privacy, sensitive: false, language: 'en',
        parent, media: [], application: { name: 'Web', website: null }, idempotencyKey: null,
      });
    },
    close: () =>
      new Promise((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
  for (const account of options.accounts ?? [{ username: 'ann', displayName: 'Ann Example' }, { username: 'bob', displayName: 'Bob Sample' }]) {
    fake.addAccount(account.username, account.displayName).privacy = account.privacy ?? 'public';
  }
  if (options.autoConsent) fake.autoConsent(options.autoConsent);

  function accountNamed(account: FakeAccount | string): FakeAccount {
    const found = typeof account === 'string' ? fake.accounts.get(account) : account;
    if (!found) throw new Error(`No account ${String(account)} on the fake Mastodon`);
    return found;
  }
  const accountById = (id: string) => [...fake.accounts.values()].find((account) => account.id === id);

  // --- Plumbing: the request log, bodies, errors, faults, rate limits ---

  app.use((req, res, next) => {
    const entry: FakeRequest = { method: req.method, path: req.path, query: { ...(req.query as Record<string, unknown>) }, headers: flatHeaders(req.headers), body: undefined, at: new Date() };
    fake.requests.push(entry);
    res.locals.entry = entry;
    res.on('finish', () => (entry.status = res.statusCode));
    next();
  });

  /** Mastodon's API errors (entities/Error): `{ error, error_description? }`. */
  const fail = (res: Response, status: number, error: string, description?: string) =>
    void res.status(status).json(description === undefined ? { error } : { error, error_description: description });
  const notFound = (res: Response) => fail(res, 404, 'Record not found');

  /** Rails parses JSON, url-encoded forms (Rack's nested `a[]=` keys) and multipart alike into `params`. */
  const raw = express.raw({ type: () => true, limit: '120mb' });
  async function readBody(req: Request, res: Response): Promise<Body> {
    const body = await parseBody(req);
    (res.locals.entry as FakeRequest).body = body.files.size
      ? { ...body.params, ...Object.fromEntries([...body.files].map(([name, file]) => [name, { filename: file.name, type: file.type, size: file.size }])) }
      : body.params;
    return body;
  }

  /** Takes the endpoint's next fault: answers it (true), arranges a drop, or leaves the request alone (false). */
  function faulted(endpoint: FaultEndpoint, req: Request, res: Response): boolean {
    const fault = faults[endpoint].shift();
    if (!fault || fault === 'answer') return false;
    if (fault === 'drop') {
      // The request is carried out; whatever would be answered, the connection is cut instead.
      res.end = (() => (req.socket.destroy(), res)) as typeof res.end;
      return false;
    }
    if (fault.status === 429) {
      // Mastodon's Rack::Attack responder: the headers with Remaining 0 and {"error":"Too many requests"}.
      const family = endpoint === 'media' ? 'media' : 'api';
      rateHeaders(res, { limit: rateLimits[family].limit, remaining: 0, reset: fault.reset ?? windowEnd(family) });
    }
    const titles: Record<number, string> = { 429: 'Too many requests', 500: 'Internal Server Error', 502: 'Bad Gateway', 503: 'Service Unavailable' };
    if (fault.html) {
      res.status(fault.status).type('html').send(`<html><head><title>${fault.status} ${titles[fault.status]}</title></head><body><center><h1>${fault.status} ${titles[fault.status]}</h1></center><hr><center>nginx</center></body></html>`);
    } else if (fault.status === 503) {
      fail(res, 503, 'There was a temporary problem serving your request, please try again');
    } else {
      fail(res, fault.status, fault.status === 429 ? 'Too many requests' : titles[fault.status]!);
    }
    return true;
  }

  const windowEnd = (family: RateFamily) => {
    const { periodMs } = rateLimits[family];
    return new Date((Math.floor(Date.now() / periodMs) + 1) * periodMs);
  };
  /** Counts a request in a family's fixed window (Rack::Attack's), per account (or app, or address). */
  function hit(family: RateFamily, key: string) {
    const { limit, periodMs } = rateLimits[family];
    const start = Math.floor(Date.now() / periodMs) * periodMs;
    const id = `${family}:${key}:${start}`;
    const count = (rateCounts.get(id) ?? 0) + 1;
    rateCounts.set(id, count);
    return { limit, remaining: Math.max(0, limit - count), reset: new Date(start + periodMs), exceeded: count > limit };
  }
  /** api/rate-limits.md: the headers of the limit closest to being reached; the reset an ISO 8601 time with microseconds. */
  function rateHeaders(res: Response, state: { limit: number; remaining: number; reset: Date }) {
    res.set('X-RateLimit-Limit', String(state.limit));
    res.set('X-RateLimit-Remaining', String(state.remaining));
    res.set('X-RateLimit-Reset', state.reset.toISOString().replace(/\.(\d{3})Z$/, '.$1000Z'));
  }
  /** A family's limit on top of the general one: 429 when exceeded, else its headers when it is the closer one. */
  function limited(res: Response, family: RateFamily, key: string): boolean {
    const state = hit(family, key);
    const general = res.locals.rate as { remaining: number } | undefined;
    if (state.exceeded || !general || state.remaining < general.remaining) rateHeaders(res, state);
    if (state.exceeded) fail(res, 429, 'Too many requests');
    return state.exceeded;
  }

  // --- Tokens and scopes (Doorkeeper, as Mastodon's Api::BaseController uses it) ---

  type Caller = { token: FakeToken; app: FakeApp; account: FakeAccount | null };
  type Bearer = { kind: 'none' } | { kind: 'unknown' } | { kind: 'token'; token: FakeToken };

  /** Doorkeeper reads `Authorization: Bearer …`; a value it does not know is no token at all. */
  function bearerOf(req: Request): Bearer {
    const header = req.get('authorization');
    if (!header) return { kind: 'none' };
    const match = /^Bearer (\S+)$/i.exec(header.trim());
    const token = match ? fake.tokens.get(match[1]!) : undefined;
    return token ? { kind: 'token', token } : { kind: 'unknown' };
  }

  /** Every API request counts against the general limit (per account, app or address) and answers its headers. */
  app.use('/api', (req, res, next) => {
    const bearer = bearerOf(req);
    const key = bearer.kind === 'token' ? (bearer.token.accountId ?? `app:${bearer.token.clientId}`) : `ip:${req.ip}`;
    const state = hit('api', key);
    res.locals.rate = state;
    rateHeaders(res, state);
    if (state.exceeded) return fail(res, 429, 'Too many requests');
    next();
  });

  /** `read` covers `read:*` and `write` covers `write:*`: Mastodon's controllers list both (`doorkeeper_authorize! :read, :'read:statuses'`). */
  const accepts = (scope: string, ...more: string[]) => [scope.split(':')[0]!, scope, ...more];

  /**
   * `doorkeeper_authorize!(*scopes)` then `require_user!`: no or unknown token → 401 "The access token is invalid";
   * a revoked one → 401 "The access token was revoked" (Doorkeeper's invalid_token descriptions, which Mastodon answers
   * as `error`); none of the scopes → 403; an app token where a user is needed → 422; a disabled login → 403.
   */
  function authorize(req: Request, res: Response, scopes: string[] | null, needsUser = true): Caller | undefined {
    const bearer = bearerOf(req);
    if (bearer.kind !== 'token') return void fail(res, 401, 'The access token is invalid');
    return check(bearer.token, res, scopes, needsUser);
  }

  /**
   * `authorize_if_got_token!`: without a (known) token the request is anonymous (null); with one, it must be valid and
   * carry the scopes. Answers `undefined` when it answered the request.
   */
  function authorizeIfToken(req: Request, res: Response, scopes: string[]): Caller | null | undefined {
    const bearer = bearerOf(req);
    if (bearer.kind !== 'token') return null;
    return check(bearer.token, res, scopes, false);
  }

  function check(token: FakeToken, res: Response, scopes: string[] | null, needsUser: boolean): Caller | undefined {
    const tokenApp = fake.apps.get(token.clientId);
    if (!tokenApp) return void fail(res, 401, 'The access token is invalid');
    if (token.revokedAt) return void fail(res, 401, 'The access token was revoked');
    if (scopes && !token.scopes.some((scope) => scopes.includes(scope))) return void fail(res, 403, 'This action is outside the authorized scopes');
    const account = token.accountId ? (accountById(token.accountId) ?? null) : null;
    if (needsUser && !account) return void fail(res, 422, 'This method requires an authenticated user');
    if (account?.disabled) return void fail(res, 403, 'Your login is currently disabled');
    return { token, app: tokenApp, account };
  }

  function registerApp(name: string, website: string | null, redirectUris: string[], scopes: string[]): FakeApp {
    const registered: FakeApp = {
      id: String(++appSequence),
      clientId: randomBytes(32).toString('base64url'),
      clientSecret: randomBytes(32).toString('base64url'),
      name, website, redirectUris, scopes, createdAt: new Date(),
    };
    fake.apps.set(registered.clientId, registered);
    return registered;
  }

  /** A new token, or (reuse_access_token) the account's live one for the same app and the same scopes. */
  function issue(client: FakeApp, accountId: string | null, scopes: string[]): FakeToken {
    const same = (token: FakeToken) =>
      token.clientId === client.clientId && token.accountId === accountId && !token.revokedAt && token.scopes.length === scopes.length && scopes.every((s) => token.scopes.includes(s));
    const reused = reuseTokens ? [...fake.tokens.values()].find(same) : undefined;
    if (reused) return reused;
    const token: FakeToken = { value: randomBytes(32).toString('base64url'), clientId: client.clientId, accountId, scopes, createdAt: new Date(), revokedAt: null };
    fake.tokens.set(token.value, token);
    return token;
  }

  // --- The instance: documents a client reads before anything else ---

  const compatibleVersion = () => (fake.software === 'mastodon' ? fake.version : `4.2.0 (compatible; ${fake.software} ${fake.version})`);

  /** methods/instance.md#v2, entities/Instance.md. */
  app.get('/api/v2/instance', (_req, res) => {
    if (options.instanceV2 === false) return notFound(res);
    const l = fake.limits;
    res.json({
      domain: fake.domain,
      title: 'Fake Mastodon',
      version: compatibleVersion(),
      source_url: 'https://github.com/mastodon/mastodon',
      description: 'A strict fake Mastodon instance for tests',
      usage: { users: { active_month: fake.accounts.size } },
      thumbnail: { url: `${url}/packs/media/images/preview.png` },
      languages: ['en'],
      configuration: {
        urls: { streaming: `ws://${host}`, status: null, about: `${url}/about`, privacy_policy: `${url}/privacy-policy`, terms_of_service: null },
        accounts: { max_featured_tags: 10, max_pinned_statuses: 5 },
        statuses: { max_characters: l.max_characters, max_media_attachments: l.max_media_attachments, characters_reserved_per_url: l.characters_reserved_per_url },
        media_attachments: {
          // description_limit is 4.4.0+.
          ...(pkce ? { description_limit: l.description_limit } : {}),
          image_matrix_limit: l.image_matrix_limit,
          image_size_limit: l.image_size_limit,
          supported_mime_types: l.supported_mime_types,
          video_frame_rate_limit: 120,
          video_matrix_limit: 8_294_400,
          video_size_limit: 103_809_024,
        },
        polls: { max_options: 4, max_characters_per_option: 50, min_expiration: 300, max_expiration: 2_629_746 },
        translation: { enabled: false },
      },
      registrations: { enabled: false, approval_required: false, message: null },
      ...(pkce ? { api_versions: { mastodon: 6 } } : {}),
      contact: { email: `admin@${fake.domain}`, account: null },
      rules: [],
    });
  });

  /** methods/instance.md#v1, entities/V1_Instance.md; Pleroma and Akkoma add `max_toot_chars` (elk#2573). */
  app.get('/api/v1/instance', (_req, res) => {
    const l = fake.limits;
    res.json({
      uri: fake.domain,
      title: 'Fake Mastodon',
      short_description: 'A strict fake Mastodon instance for tests',
      description: '',
      email: `admin@${fake.domain}`,
      version: compatibleVersion(),
      urls: { streaming_api: `ws://${host}` },
      stats: { user_count: fake.accounts.size, status_count: fake.statuses.size, domain_count: 0 },
      thumbnail: `${url}/packs/media/images/preview.png`,
      languages: ['en'],
      registrations: false,
      approval_required: false,
      invites_enabled: false,
      ...(['pleroma', 'akkoma'].includes(fake.software) ? { max_toot_chars: l.max_characters } : {}),
      configuration: {
        accounts: { max_featured_tags: 10 },
        statuses: { max_characters: l.max_characters, max_media_attachments: l.max_media_attachments, characters_reserved_per_url: l.characters_reserved_per_url },
        media_attachments: {
          supported_mime_types: l.supported_mime_types,
          image_size_limit: l.image_size_limit,
          image_matrix_limit: l.image_matrix_limit,
          video_size_limit: 103_809_024,
          video_frame_rate_limit: 120,
          video_matrix_limit: 8_294_400,
        },
        polls: { max_options: 4, max_characters_per_option: 50, min_expiration: 300, max_expiration: 2_629_746 },
      },
      contact_account: null,
      rules: [],
    });
  });

  /** dev/routes.md: NodeInfo 2.0, which names the software and its version. */
  app.get('/.well-known/nodeinfo', (_req, res) => {
    res.json({ links: [{ rel: 'http://nodeinfo.diaspora.software/ns/schema/2.0', href: `${url}/nodeinfo/2.0` }] });
  });
  app.get('/nodeinfo/2.0', (_req, res) => {
    res.type('application/json; profile="http://nodeinfo.diaspora.software/ns/schema/2.0#"').send(JSON.stringify({
      version: '2.0',
      software: { name: fake.software, version: fake.version },
      protocols: ['activitypub'],
      services: { outbound: [], inbound: [] },
      usage: { users: { total: fake.accounts.size, activeMonth: fake.accounts.size, activeHalfyear: fake.accounts.size }, localPosts: fake.statuses.size },
      openRegistrations: false,
      metadata: { nodeName: 'Fake Mastodon' },
    }));
  });

  /** methods/oauth.md#authorization-server-metadata: 4.3.0+; "On Mastodon versions before 4.3.0 … 404 Not Found". */
  app.get('/.well-known/oauth-authorization-server', (_req, res) => {
    if (!pkce) return notFound(res);
    res.json({
      issuer: `${url}/`,
      service_documentation: 'https://docs.joinmastodon.org/',
      authorization_endpoint: `${url}/oauth/authorize`,
      token_endpoint: `${url}/oauth/token`,
      app_registration_endpoint: `${url}/api/v1/apps`,
      revocation_endpoint: `${url}/oauth/revoke`,
      userinfo_endpoint: `${url}/oauth/userinfo`,
      scopes_supported: SCOPES,
      response_types_supported: ['code'],
      response_modes_supported: ['query', 'fragment', 'form_post'],
      code_challenge_methods_supported: ['S256'],
      grant_types_supported: ['authorization_code', 'client_credentials'],
      token_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post'],
    });
  });

  // --- Apps (methods/apps.md) ---

  const knownScopes = () => (pkce ? SCOPES : SCOPES.filter((scope) => scope !== 'profile'));

  app.post('/api/v1/apps', raw, async (req, res) => {
    const { params } = await readBody(req, res);
    const unknown = Object.keys(params).filter((key) => !['client_name', 'redirect_uris', 'scopes', 'website'].includes(key));
    if (unknown.length) return fail(res, 422, `Unknown parameter ${unknown.join(', ')} (Mastodon would ignore it: the fake refuses it)`);
    const errors: string[] = [];
    const name = typeof params.client_name === 'string' ? params.client_name.trim() : '';
    // Doorkeeper::Application validates the name's presence; Mastodon limits it to 60 characters.
    if (!name) errors.push("Application name can't be blank");
    else if ([...name].length > APP_NAME_LIMIT) errors.push(`Application name is too long (maximum is ${APP_NAME_LIMIT} characters)`);
    // `redirect_uris`: a string (several separated by whitespace, as Doorkeeper stores them) or, since 4.3.0, an array.
    const given = params.redirect_uris;
    const uris = typeof given === 'string' ? given.split(/\s+/).filter(Boolean) : pkce && Array.isArray(given) && given.every((u) => typeof u === 'string') ? (given as string[]) : [];
    if (!uris.length) errors.push("Redirect URI can't be blank");
    for (const uri of uris) {
      const problem = redirectUriProblem(uri);
      if (problem) errors.push(`Redirect URI ${problem}`);
    }
    // `enforce_configured_scopes`: every scope must be one the server knows; none given means `read`.
    const scopes = typeof params.scopes === 'string' && params.scopes.trim() ? params.scopes.trim().split(/\s+/) : ['read'];
    if (scopes.some((scope) => !knownScopes().includes(scope))) errors.push("Scopes doesn't match configured on the server.");
    const website = typeof params.website === 'string' && params.website ? params.website : null;
    if (website && !/^https?:\/\/[^\s/]+/i.test(website)) errors.push('Application website is invalid');
    if (errors.length) return fail(res, 422, `Validation failed: ${[...new Set(errors)].join(', ')}`);
    fake.registrations++;
    const registered = registerApp(name, website, [...new Set(uris)], [...new Set(scopes)]);
    res.json({
      id: registered.id,
      name: registered.name,
      website: registered.website,
      ...(pkce ? { scopes: registered.scopes, redirect_uris: registered.redirectUris, client_secret_expires_at: 0 } : { vapid_key: 'BCk-QqERU0q-CfYZjcuB6lnyyOYfJ2AifKqfeGIm7Z-HiTU5T9eTG5GxVA0_OH5mMlI4UkkDTpaZwozy0TzdZ2M=' }),
      redirect_uri: registered.redirectUris.join('\n'),
      client_id: registered.clientId,
      client_secret: registered.clientSecret,
    });
  });

  /** methods/apps.md#verify_credentials: any valid token since 4.3.0 (before, it needed `read`); 401 once the app is gone. */
  app.get('/api/v1/apps/verify_credentials', (req, res) => {
    const caller = authorize(req, res, pkce ? null : ['read'], false);
    if (!caller) return;
    const a = caller.app;
    res.json({
      id: a.id,
      name: a.name,
      website: a.website,
      ...(pkce ? { scopes: a.scopes, redirect_uris: a.redirectUris, redirect_uri: a.redirectUris.join('\n') } : {}),
      vapid_key: 'BCk-QqERU0q-CfYZjcuB6lnyyOYfJ2AifKqfeGIm7Z-HiTU5T9eTG5GxVA0_OH5mMlI4UkkDTpaZwozy0TzdZ2M=',
    });
  });

  // --- OAuth (methods/oauth.md, spec/oauth.md; Doorkeeper's behaviour where the docs are silent) ---

  type PreAuth =
    | { ok: true; client: FakeApp; redirectUri: string; scopes: string[]; state: string | undefined; challenge: string | null }
    | { ok: false; page: { status: number; error: string; description: string } }
    | { ok: false; redirect: string };

  /**
   * Doorkeeper's pre-authorization, in its order. An unknown client or a redirect URI not registered cannot be sent
   * back anywhere safe: an error page, no redirect. The rest go back to the (checked) redirect URI with `error`.
   */
  function preAuthorize(q: Record<string, unknown>): PreAuth {
    const text = (key: string) => (typeof q[key] === 'string' ? (q[key] as string) : undefined);
    const clientId = text('client_id');
    if (!clientId) return { ok: false, page: { status: 400, error: 'invalid_request', description: 'Missing required parameter: client_id.' } };
    const client = fake.apps.get(clientId);
    if (!client) return { ok: false, page: { status: 401, error: 'invalid_client', description: INVALID_CLIENT } };
    const redirectUri = text('redirect_uri');
    if (!redirectUri) return { ok: false, page: { status: 400, error: 'invalid_request', description: 'Missing required parameter: redirect_uri.' } };
    // "Must match one of the redirect_uris declared during app registration": compared exactly.
    if (!client.redirectUris.includes(redirectUri)) return { ok: false, page: { status: 400, error: 'invalid_redirect_uri', description: INVALID_REDIRECT } };
    const state = text('state');
    const back = (error: string, description: string) => {
      if (redirectUri === OOB) return { ok: false as const, page: { status: 400, error, description } };
      const target = new URL(redirectUri);
      target.searchParams.set('error', error);
      target.searchParams.set('error_description', description);
      if (state !== undefined) target.searchParams.set('state', state);
      return { ok: false as const, redirect: target.toString() };
    };
    const responseType = text('response_type');
    if (!responseType) return back('invalid_request', 'Missing required parameter: response_type.');
    if (responseType !== 'code') return back('unsupported_response_type', 'The authorization server does not support this response type.');
    // "Must be a subset of scopes declared during app registration. If not provided, defaults to read." (spaces or pluses)
    const scopes = (text('scope') ?? 'read').split(/[\s+]+/).filter(Boolean);
    if (!scopes.length || scopes.some((scope) => !client.scopes.includes(scope) || !knownScopes().includes(scope))) return back('invalid_scope', INVALID_SCOPE);
    // 4.3.0+: "code_challenge_method: Must be S256" (Mastodon's OauthPreAuthorizationExtension: a challenge needs S256).
    // Before 4.3 the PKCE parameters are ignored.
    const challenge = pkce ? (text('code_challenge') ?? null) : null;
    if (challenge !== null && text('code_challenge_method') !== 'S256') return back('invalid_request', 'The code_challenge_method must be S256.');
    if (challenge === null && pkce && text('code_challenge_method') !== undefined) return back('invalid_request', 'Missing required parameter: code_challenge.');
    return { ok: true, client, redirectUri, scopes: [...new Set(scopes)], state, challenge };
  }

  /** The approval: a code for the account, single use, 10 minutes; back to the redirect URI with the code and the state. */
  function approve(res: Response, pre: Extract<PreAuth, { ok: true }>, account: FakeAccount) {
    const code = randomBytes(32).toString('base64url');
    codes.set(code, { clientId: pre.client.clientId, accountId: account.id, redirectUri: pre.redirectUri, scopes: pre.scopes, challenge: pre.challenge, expiresAt: Date.now() + CODE_TTL_MS, used: false });
    if (pre.redirectUri === OOB) return void res.type('html').send(page('Authorization code', `<p>Copy this authorization code and paste it to the application.</p><p><code>${escapeHtml(code)}</code></p>`));
    const target = new URL(pre.redirectUri);
    target.searchParams.set('code', code);
    if (pre.state !== undefined) target.searchParams.set('state', pre.state);
    res.redirect(302, target.toString());
  }

  function deny(res: Response, pre: Extract<PreAuth, { ok: true }>) {
    if (pre.redirectUri === OOB) return void res.status(400).type('html').send(errorPage('access_denied', ACCESS_DENIED));
    const target = new URL(pre.redirectUri);
    target.searchParams.set('error', 'access_denied');
    target.searchParams.set('error_description', ACCESS_DENIED);
    if (pre.state !== undefined) target.searchParams.set('state', pre.state);
    res.redirect(302, target.toString());
  }

  /** methods/oauth.md#authorize: "Displays an authorization form to the user. If approved, … redirect to the desired redirect_uri". */
  app.get('/oauth/authorize', (req, res) => {
    const pre = preAuthorize(req.query as Record<string, unknown>);
    if (!pre.ok) return 'page' in pre ? void res.status(pre.page.status).type('html').send(errorPage(pre.page.error, pre.page.description)) : res.redirect(302, pre.redirect);
    if (consent === 'deny') return deny(res, pre);
    if (consent) return approve(res, pre, consent);
    if (!signedIn) return void res.status(401).type('html').send(page('Log in', '<p>Nobody is signed in on this fake instance.</p>'));
    const csrf = randomBytes(24).toString('base64url');
    consentForms.set(csrf, signedIn.id);
    const hidden = (fields: Record<string, string | null | undefined>) =>
      Object.entries(fields).filter(([, value]) => value != null).map(([name, value]) => `<input type="hidden" name="${name}" value="${escapeHtml(value!)}">`).join('');
    const q = req.query as Record<string, string | undefined>;
    const fields = { authenticity_token: csrf, client_id: pre.client.clientId, redirect_uri: pre.redirectUri, state: pre.state, response_type: 'code', scope: pre.scopes.join(' '), code_challenge: q.code_challenge, code_challenge_method: q.code_challenge_method };
    res.type('html').send(page('Authorization required', `
      <p class="signed-in">Signed in as <strong>@${escapeHtml(signedIn.username)}@${escapeHtml(fake.domain)}</strong></p>
      <h2><strong>${escapeHtml(pre.client.name)}</strong> would like permission to access your account</h2>
      <p>It is a third-party application. If you do not trust it, then you should not authorize it.</p>
      <h3>Review permissions</h3>
      <ul class="permissions">${pre.scopes.map((scope) => `<li><code>${escapeHtml(scope)}</code></li>`).join('')}</ul>
      <form method="post" action="/oauth/authorize">${hidden(fields)}<button type="submit">Authorize</button></form>
      <form method="post" action="/oauth/authorize">${hidden({ ...fields, _method: 'delete' })}<button type="submit" class="negative">Deny</button></form>`));
  });

  /** The consent form: Doorkeeper checks the request again; `_method=delete` (Rails' method override) is Deny. */
  app.post('/oauth/authorize', raw, async (req, res) => {
    const { params } = await readBody(req, res);
    const csrf = typeof params.authenticity_token === 'string' ? params.authenticity_token : '';
    const accountId = consentForms.get(csrf);
    consentForms.delete(csrf);
    const account = accountId ? accountById(accountId) : undefined;
    // Rails' forgery protection: a form that was not rendered by the instance is refused.
    if (!account) return void res.status(422).type('html').send(page('The change you wanted was rejected', '<p>ActionController::InvalidAuthenticityToken</p>'));
    const pre = preAuthorize(params);
    if (!pre.ok) return 'page' in pre ? void res.status(pre.page.status).type('html').send(errorPage(pre.page.error, pre.page.description)) : res.redirect(302, pre.redirect);
    if (params._method === 'delete') return deny(res, pre);
    approve(res, pre, account);
  });

  /** RFC 6749 §4.1.3 and the docs' "Form data parameters": the token and revocation endpoints take url-encoded forms. */
  async function readForm(req: Request, res: Response): Promise<Record<string, unknown> | undefined> {
    const { params, kind } = await readBody(req, res);
    if (kind !== 'form') return void fail(res, 400, 'invalid_request', 'The request must be sent as application/x-www-form-urlencoded.');
    return params;
  }

  /**
   * Client authentication, `client_secret_basic` or `client_secret_post` (token_endpoint_auth_methods_supported):
   * a client using both at once is refused (RFC 6749 §2.3: "MUST NOT use more than one authentication method").
   */
  function clientOf(req: Request, res: Response, form: Record<string, unknown>): FakeApp | undefined {
    const header = req.get('authorization');
    let id: unknown = form.client_id;
    let secret: unknown = form.client_secret;
    if (header?.startsWith('Basic ')) {
      if (form.client_secret !== undefined) return void fail(res, 400, 'invalid_request', 'The client used more than one authentication method.');
      const decoded = Buffer.from(header.slice(6), 'base64').toString('utf8');
      const colon = decoded.indexOf(':');
      // RFC 6749 §2.3.1: the id and secret are form-url-encoded before base64.
      const formDecode = (value: string) => decodeURIComponent(value.replace(/\+/g, ' '));
      id = colon < 0 ? '' : formDecode(decoded.slice(0, colon));
      secret = colon < 0 ? '' : formDecode(decoded.slice(colon + 1));
      if (form.client_id !== undefined && form.client_id !== id) return void fail(res, 401, 'invalid_client', INVALID_CLIENT);
    }
    const client = typeof id === 'string' ? fake.apps.get(id) : undefined;
    if (!client || secret !== client.clientSecret) return void fail(res, 401, 'invalid_client', INVALID_CLIENT);
    return client;
  }

  /** methods/oauth.md#token. */
  app.post('/oauth/token', raw, async (req, res) => {
    if (faulted('token', req, res)) return;
    const form = await readForm(req, res);
    if (!form) return;
    // Doorkeeper's TokensController: tokens are never cached.
    res.set('Cache-Control', 'no-store').set('Pragma', 'no-cache');
    const grant = form.grant_type;
    if (typeof grant !== 'string' || !grant) return fail(res, 400, 'invalid_request', 'Missing required parameter: grant_type.');
    if (grant !== 'authorization_code' && grant !== 'client_credentials') return fail(res, 400, 'unsupported_grant_type', 'The authorization grant type is not supported by the authorization server.');
    const client = clientOf(req, res, form);
    if (!client) return;
    const answer = (token: FakeToken) =>
      // entities/Token: no expires_in, no refresh token: "Tokens will not expire automatically."
      res.json({ access_token: token.value, token_type: 'Bearer', scope: token.scopes.join(' '), created_at: Math.floor(token.createdAt.getTime() / 1000) });

    if (grant === 'client_credentials') {
      // "scope: … Must be a subset of the scopes requested at the time the application was created. If omitted, it defaults to read."
      const scopes = typeof form.scope === 'string' && form.scope.trim() ? form.scope.trim().split(/\s+/) : ['read'];
      if (scopes.some((scope) => !client.scopes.includes(scope))) return fail(res, 400, 'invalid_scope', INVALID_SCOPE);
      return answer(issue(client, null, [...new Set(scopes)]));
    }

    // authorization_code: code and redirect_uri required; code_verifier "Required if PKCE is used".
    for (const name of ['code', 'redirect_uri']) {
      if (typeof form[name] !== 'string' || !form[name]) return fail(res, 400, 'invalid_request', `Missing required parameter: ${name}.`);
    }
    const code = codes.get(form.code as string);
    const verifier = typeof form.code_verifier === 'string' && form.code_verifier ? form.code_verifier : null;
    if (code?.challenge && !verifier) return fail(res, 400, 'invalid_request', 'Missing required parameter: code_verifier.');
    // Unknown, used, expired, another client's, another redirect URI: all invalid_grant (Doorkeeper's
    // AuthorizationCodeRequest). A verifier must match the challenge (S256: BASE64URL(SHA256(verifier))), and one
    // sent for a code that had no challenge is refused too. Before 4.3, PKCE is not checked at all.
    const s256 = (value: string) => createHash('sha256').update(value).digest('base64url');
    const pkceOk = !pkce || (code?.challenge ? verifier !== null && s256(verifier) === code.challenge : verifier === null);
    if (!code || code.used || code.expiresAt < Date.now() || code.clientId !== client.clientId || code.redirectUri !== form.redirect_uri || !pkceOk) {
      return fail(res, 400, 'invalid_grant', INVALID_GRANT);
    }
    // The code is spent only by a successful exchange (Doorkeeper revokes the grant in before_successful_response).
    code.used = true;
    answer(issue(client, code.accountId, code.scopes));
  });

  /** methods/oauth.md#revoke: idempotent 200 {}; a token of another client (or none given) 403 unauthorized_client. */
  app.post('/oauth/revoke', raw, async (req, res) => {
    if (faulted('revoke', req, res)) return;
    const form = await readForm(req, res);
    if (!form) return;
    const client = clientOf(req, res, form);
    if (!client) return;
    const unauthorized = () => fail(res, 403, 'unauthorized_client', 'You are not authorized to revoke this token');
    if (typeof form.token !== 'string' || !form.token) return unauthorized();
    const token = fake.tokens.get(form.token);
    if (!token) return void res.json({});
    if (token.clientId !== client.clientId) return unauthorized();
    token.revokedAt ??= new Date();
    fake.revokedTokens.add(token.value);
    res.json({});
  });

  /** methods/oauth.md#userinfo (4.4.0): the `profile` scope. */
  app.all('/oauth/userinfo', (req, res) => {
    if (!pkce || (req.method !== 'GET' && req.method !== 'POST')) return notFound(res);
    const caller = authorize(req, res, ['profile']);
    if (!caller) return;
    const account = caller.account!;
    res.json({ iss: `${url}/`, sub: `${url}/users/${account.username}`, name: account.displayName, preferred_username: account.username, profile: `${url}/@${account.username}`, picture: avatarUrl(account) });
  });

  // --- Accounts (methods/accounts.md) ---

  /** verify_credentials: "User token + profile or read:accounts" (`profile` is 4.3.0+). */
  app.get('/api/v1/accounts/verify_credentials', (req, res) => {
    const caller = authorize(req, res, pkce ? accepts('read:accounts', 'profile') : accepts('read:accounts'));
    if (!caller) return;
    const account = caller.account!;
    res.json({ ...accountJson(account), source: { privacy: account.privacy, sensitive: account.sensitive, language: account.language, note: '', fields: [], follow_requests_count: 0 } });
  });

  app.get('/api/v1/accounts/:id', (req, res) => {
    const caller = authorizeIfToken(req, res, accepts('read:accounts'));
    if (caller === undefined) return;
    const account = accountById(req.params.id);
    if (!account) return notFound(res);
    res.json(accountJson(account));
  });

  /**
   * "Public (for public statuses only), or user token + read:statuses"; a token without the scope is refused 403
   * (`authorize_if_got_token! :read, :'read:statuses'`). Newest first; max_id, since_id, min_id; limit 20, at most 40;
   * a Link header with next (when the page is full) and prev pages, keeping the other parameters.
   */
  app.get('/api/v1/accounts/:id/statuses', (req, res) => {
    const caller = authorizeIfToken(req, res, accepts('read:statuses'));
    if (caller === undefined) return;
    const account = accountById(req.params.id);
    if (!account) return notFound(res);
    const q = req.query as Record<string, unknown>;
    const limit = limitParam(q.limit, 20);
    const id = (value: unknown) => (typeof value === 'string' && /^\d+$/.test(value) ? BigInt(value) : undefined);
    const [maxId, sinceId, minId] = [id(q.max_id), id(q.since_id), id(q.min_id)];
    let list = [...fake.statuses.values()].filter((status) => status.accountId === account.id && visibleTo(status, caller?.account ?? null));
    if (truthy(q.exclude_replies)) list = list.filter((status) => !status.inReplyToId || status.inReplyToAccountId === account.id);
    if (truthy(q.only_media)) list = list.filter((status) => status.mediaIds.length > 0);
    if (truthy(q.pinned)) list = []; // nothing is pinned on the fake
    if (typeof q.tagged === 'string') list = list.filter((status) => hashtagsOf(status.text).includes((q.tagged as string).toLowerCase()));
    list = list.filter((status) => (maxId === undefined || BigInt(status.id) < maxId) && (sinceId === undefined || BigInt(status.id) > sinceId));
    let page: FakeStatus[];
    if (minId !== undefined) {
      // min_id: "Returns results immediately newer than this ID": the oldest ones after it, answered newest first.
      page = list.filter((status) => BigInt(status.id) > minId).sort(byId).slice(0, limit).reverse();
    } else {
      page = list.sort(byId).reverse().slice(0, limit);
    }
    if (page.length) {
      const link = (cursor: Record<string, string>) => {
        const params = new URLSearchParams();
        for (const [key, value] of Object.entries(q)) if (!['max_id', 'min_id', 'since_id', 'limit'].includes(key) && typeof value === 'string') params.set(key, value);
        params.set('limit', String(limit));
        for (const [key, value] of Object.entries(cursor)) params.set(key, value);
        return `${url}/api/v1/accounts/${account.id}/statuses?${params}`;
      };
      const links = [];
      if (page.length === limit) links.push(`<${link({ max_id: page.at(-1)!.id })}>; rel="next"`);
      links.push(`<${link({ min_id: page[0]!.id })}>; rel="prev"`);
      res.set('Link', links.join(', '));
    }
    res.json(page.map((status) => statusJson(status, caller?.account ?? null)));
  });

  // --- Media (methods/media.md) ---

  const MEDIA_FIELDS = ['file', 'thumbnail', 'description', 'focus'];

  /** description (alt text, `description_limit` characters) and focus ("x,y", each -1.0 to 1.0); errors as Mastodon words them. */
  function mediaFields(params: Record<string, unknown>): { description?: string; focus?: { x: number; y: number } } | { error: string } {
    const out: { description?: string; focus?: { x: number; y: number } } = {};
    if (params.description !== undefined) {
      if (typeof params.description !== 'string') return { error: 'description must be a string' };
      // MediaAttachment: `validates :description, length: { maximum: MAX_DESCRIPTION_LENGTH }` (Ruby counts code points).
      if ([...params.description].length > fake.limits.description_limit) return { error: `Validation failed: Description is too long (maximum is ${fake.limits.description_limit} characters)` };
      out.description = params.description;
    }
    if (params.focus !== undefined) {
      // api/guidelines.md#focal-points. Mastodon reads whatever it gets with to_f; the fake refuses what the docs do not allow.
      const match = typeof params.focus === 'string' ? /^\s*(-?\d+(?:\.\d+)?)\s*,\s*(-?\d+(?:\.\d+)?)\s*$/.exec(params.focus) : null;
      const [x, y] = match ? [Number(match[1]), Number(match[2])] : [NaN, NaN];
      if (!(Math.abs(x) <= 1 && Math.abs(y) <= 1)) return { error: `Validation failed: Focus must be two numbers from -1.0 to 1.0 as "x,y" (got ${JSON.stringify(params.focus)})` };
      out.focus = { x, y };
    }
    return out;
  }

  /** The file: a MIME type given, an image of a supported type (read from its bytes), within the size and matrix limits. */
  async function readImage(file: File): Promise<{ bytes: Buffer; mimeType: string; width: number; height: number; animated: boolean } | { status: number; error: string }> {
    const invalid = { status: 422, error: 'Validation failed: File content type is invalid, File is invalid' };
    const bytes = Buffer.from(await file.arrayBuffer());
    const sniffed = await fileTypeFromBuffer(bytes);
    const l = fake.limits;
    // "The file must have a MIME type" (a part without one reads as text/plain): it must be one the instance supports.
    if (!file.type || !l.supported_mime_types.includes(file.type)) return invalid;
    if (!sniffed || !l.supported_mime_types.includes(sniffed.mime)) return invalid;
    if (!sniffed.mime.startsWith('image/')) return { status: 422, error: `Validation failed: the fake processes images only, not ${sniffed.mime}` };
    // Paperclip's spoof detection: the declared type must be what the bytes are.
    if (sniffed.mime !== file.type) return { status: 422, error: 'Validation failed: File has contents that are not what they are reported to be' };
    if (bytes.length > l.image_size_limit) return { status: 422, error: `Validation failed: File file size must be less than ${humanSize(l.image_size_limit)}` };
    const metadata = await sharp(bytes, { animated: true, limitInputPixels: false }).metadata().catch(() => undefined);
    if (!metadata?.width || !metadata.height) return invalid;
    const height = metadata.pageHeight ?? metadata.height;
    // Mastodon::DimensionsValidationError (Attachmentable#check_image_dimension).
    if (metadata.width * height > l.image_matrix_limit) return { status: 422, error: `${metadata.width}x${height} images are not supported` };
    return { bytes, mimeType: sniffed.mime, width: metadata.width, height, animated: (metadata.pages ?? 1) > 1 };
  }

  /** POST /api/v2/media: "User token + write:media"; multipart; 200 when processed at once, 202 (url null) while processing. */
  app.post('/api/v2/media', raw, async (req, res) => {
    if (faulted('media', req, res)) return;
    const { params, files } = await readBody(req, res);
    const caller = authorize(req, res, accepts('write:media'));
    if (!caller) return;
    if (limited(res, 'media', caller.account!.id)) return;
    // masto.js sends `skip_polling` as a field; Mastodon ignores it, and so does the fake.
    const unknown = [...Object.keys(params), ...files.keys()].filter((key) => !MEDIA_FIELDS.includes(key) && key !== 'skip_polling');
    if (unknown.length) return fail(res, 422, `Unknown parameter ${unknown.join(', ')} (Mastodon would ignore it: the fake refuses it)`);
    const file = files.get('file');
    if (!file) return fail(res, 422, "Validation failed: File can't be blank");
    const image = await readImage(file);
    if ('error' in image) return fail(res, image.status, image.error);
    const thumbnail = files.get('thumbnail');
    if (thumbnail) {
      const checked = await readImage(thumbnail);
      if ('error' in checked) return fail(res, checked.status, checked.error.replace('File', 'Thumbnail'));
    }
    const fields = mediaFields(params);
    if ('error' in fields) return fail(res, 422, fields.error);
    // An animated GIF becomes gifv, a video: always processed in the background (methods/media.md, 4.0.0).
    const processingMs = image.animated ? Math.max(fake.processingMs, 200) : fake.processingMs;
    const media: FakeMedia = {
      id: nextId(), accountId: caller.account!.id, type: image.animated ? 'gifv' : 'image', mimeType: image.mimeType, bytes: image.bytes,
      width: image.width, height: image.height, description: fields.description ?? null, focus: fields.focus ?? null,
      readyAt: Date.now() + processingMs, statusId: null,
    };
    fake.media.set(media.id, media);
    res.status(processingMs > 0 ? 202 : 200).json(mediaJson(media));
  });

  /** "MediaAttachment is not owned by you or does not exist" → 404; Mastodon finds only unattached media here. */
  const ownUnattached = (caller: Caller, id: string) => {
    const media = fake.media.get(id);
    return media && media.accountId === caller.account!.id && media.statusId === null ? media : undefined;
  };
  const processed = (media: FakeMedia) => Date.now() >= media.readyAt;

  /** GET /api/v1/media/:id: 200 once processed, "206: Partial content" while processing. */
  app.get('/api/v1/media/:id', (req, res) => {
    const caller = authorize(req, res, accepts('write:media'));
    if (!caller) return;
    const media = ownUnattached(caller, req.params.id);
    if (!media) return notFound(res);
    res.status(processed(media) ? 200 : 206).json(mediaJson(media));
  });

  /** PUT /api/v1/media/:id: description, focus, thumbnail, "before it is attached to a status". */
  app.put('/api/v1/media/:id', raw, async (req, res) => {
    const { params, files } = await readBody(req, res);
    const caller = authorize(req, res, accepts('write:media'));
    if (!caller) return;
    const media = ownUnattached(caller, req.params.id);
    if (!media) return notFound(res);
    const unknown = [...Object.keys(params), ...files.keys()].filter((key) => !['thumbnail', 'description', 'focus'].includes(key));
    if (unknown.length) return fail(res, 422, `Unknown parameter ${unknown.join(', ')} (Mastodon would ignore it: the fake refuses it)`);
    const fields = mediaFields(params);
    if ('error' in fields) return fail(res, 422, fields.error);
    if (fields.description !== undefined) media.description = fields.description;
    if (fields.focus !== undefined) media.focus = fields.focus;
    res.status(processed(media) ? 200 : 206).json(mediaJson(media));
  });

  /** DELETE /api/v1/media/:id (4.4.0): an unattached upload. */
  app.delete('/api/v1/media/:id', (req, res) => {
    const caller = authorize(req, res, accepts('write:media'));
    if (!caller) return;
    const media = ownUnattached(caller, req.params.id);
    if (!media) return notFound(res);
    fake.media.delete(media.id);
    res.json({});
  });

  /** The uploaded files and avatars, so that a URL the fake answers can be fetched. */
  app.get('/system/media_attachments/files/:id/:size/:name', (req, res) => {
    const media = fake.media.get(req.params.id);
    if (!media || !processed(media)) return void res.status(404).end();
    res.type(media.mimeType).send(media.bytes);
  });
  app.get('/system/accounts/avatars/:id/original/avatar.png', (_req, res) => void res.type('png').send(avatar));

  // --- Statuses (methods/statuses.md) ---

  const STATUS_FIELDS = ['status', 'media_ids', 'in_reply_to_id', 'sensitive', 'spoiler_text', 'visibility', 'language', 'quote_approval_policy'];
  const NOT_MODELLED: Record<string, string> = {
    poll: 'polls are not modelled by the fake',
    scheduled_at: 'scheduled statuses are not modelled by the fake (and Mastodon ignores Idempotency-Key for them, mastodon#30039)',
    quoted_status_id: 'quotes are not modelled by the fake',
  };

  /**
   * POST /api/v1/statuses, in Mastodon's order: the token (write:statuses, a user), the parent (set_thread: 404), then
   * PostStatusService — an Idempotency-Key already seen answers the status it made, whatever this request says —
   * the media, the attributes, the validations (blank text, the length as StatusLengthValidator counts it), the
   * statuses rate limit, and only then the status, the key stored after it.
   */
  app.post('/api/v1/statuses', raw, async (req, res) => {
    if (faulted('statuses', req, res)) return;
    const { params, files } = await readBody(req, res);
    const caller = authorize(req, res, accepts('write:statuses'));
    if (!caller) return;
    const account = caller.account!;
    for (const key of [...Object.keys(params), ...files.keys()]) {
      if (NOT_MODELLED[key]) return fail(res, 422, `${key}: ${NOT_MODELLED[key]}`);
      if (!STATUS_FIELDS.includes(key)) return fail(res, 422, `Unknown parameter ${key} (Mastodon would ignore it: the fake refuses it)`);
    }
    const text = optionalString(params.status);
    const spoiler = optionalString(params.spoiler_text);
    const visibility = optionalString(params.visibility);
    const language = optionalString(params.language);
    for (const [name, value] of Object.entries({ status: text, spoiler_text: spoiler, visibility, language })) {
      if (value === false) return fail(res, 422, `${name} must be a string`);
    }
    const parentId = params.in_reply_to_id;
    if (parentId !== undefined && parentId !== null && parentId !== '' && typeof parentId !== 'string' && typeof parentId !== 'number') return fail(res, 422, 'in_reply_to_id must be a string');

    // set_thread: a parent that does not exist or the author may not see.
    let parent: FakeStatus | undefined;
    if (parentId !== undefined && parentId !== null && parentId !== '') {
      parent = fake.statuses.get(String(parentId));
      if (!parent || !visibleTo(parent, account)) return fail(res, 404, 'The post you are trying to reply to does not appear to exist.');
    }

    // Idempotency-Key: "Idempotency keys are stored for up to 1 hour"; the key is the account's, and a replay returns
    // `@account.statuses.find(id)` — the status made — or 404 if it was deleted since.
    const key = (req.get('idempotency-key') ?? '').trim() || null;
    const keyId = `${account.id}:${key}`;
    const seen = key ? idempotency.get(keyId) : undefined;
    if (seen && seen.expiresAt > Date.now()) {
      if (fake.replayAnswers500) return fail(res, 500, 'Internal Server Error');
      const made = fake.statuses.get(seen.statusId);
      return made ? void res.json(statusJson(made, account)) : notFound(res);
    }

    // validate_media!: at most max_media_attachments, each the account's and unattached, not a video among others,
    // each processed. Mastodon drops a media_ids that is not an array: the fake refuses it.
    let media: FakeMedia[] = [];
    if (params.media_ids !== undefined && params.media_ids !== null && params.media_ids !== '') {
      if (!Array.isArray(params.media_ids) || params.media_ids.some((id) => typeof id !== 'string' && typeof id !== 'number')) {
        return fail(res, 422, 'media_ids must be an array of ids (Mastodon would ignore it: the fake refuses it)');
      }
      const ids = [...new Set(params.media_ids.map(String))];
      if (params.media_ids.length > fake.limits.max_media_attachments) return fail(res, 422, `Cannot attach more than ${fake.limits.max_media_attachments} files`);
      const found = ids.map((id) => ownUnattached(caller, id));
      const missing = ids.filter((_, i) => !found[i]);
      if (missing.length) return fail(res, 422, `Media ${missing.join(', ')} not found or already attached to another post`);
      media = found as FakeMedia[];
      if (media.some((item) => !processed(item))) return fail(res, 422, 'Cannot attach files that have not finished processing. Try again in a moment!');
    }

    // preprocess_attributes! and the Status model: text and CW stripped; a CW alone gets a placeholder text; sensitive
    // defaults to the account's and is forced by a CW; visibility defaults to the account's; the language falls back.
    let body = rubyStrip(text || '');
    const spoilerText = rubyStrip(spoiler || '');
    if (!body && spoilerText) body = media.some((item) => item.type === 'gifv') ? '📹' : media.length ? '🖼' : '.';
    const errors: string[] = [];
    const chosen = (visibility ?? account.privacy) as Visibility;
    if (!VISIBILITIES.includes(chosen)) errors.push('Visibility is not included in the list');
    if (!body && !media.length) errors.push("Text can't be blank");
    const length = mastodonLength(body, spoilerText, fake.limits.characters_reserved_per_url);
    if (length > fake.limits.max_characters) errors.push(`Text character limit of ${fake.limits.max_characters} exceeded`);
    if (errors.length) return fail(res, 422, `Validation failed: ${errors.join(', ')}`);
    const sensitive = booleanParam(params.sensitive) ?? account.sensitive;

    if (limited(res, 'statuses', account.id)) return;
    await holds.shift();
    const status = createStatus(account, {
      text: body, spoilerText, visibility: chosen, sensitive: sensitive || spoilerText.length > 0, language: postingLanguage(language || null, account),
      parent, media, application: { name: caller.app.name, website: caller.app.website }, idempotencyKey: key,
    });
    if (key) idempotency.set(keyId, { statusId: status.id, expiresAt: Date.now() + fake.idempotencyTtlMs });
    res.json(statusJson(status, account));
  });

  /** GET /api/v1/statuses/:id: "Public for public statuses, user token + read:statuses for private statuses". */
  app.get('/api/v1/statuses/:id', (req, res) => {
    const caller = authorizeIfToken(req, res, accepts('read:statuses'));
    if (caller === undefined) return;
    const status = fake.statuses.get(req.params.id);
    if (!status || !visibleTo(status, caller?.account ?? null)) return notFound(res);
    res.json(statusJson(status, caller?.account ?? null));
  });

  /** GET /api/v1/statuses/:id/source: the text as written (read:statuses), the author's own statuses only. */
  app.get('/api/v1/statuses/:id/source', (req, res) => {
    const caller = authorize(req, res, accepts('read:statuses'));
    if (!caller) return;
    const status = fake.statuses.get(req.params.id);
    if (!status || status.accountId !== caller.account!.id) return notFound(res);
    res.json({ id: status.id, text: status.text, spoiler_text: status.spoilerText });
  });

  /**
   * DELETE /api/v1/statuses/:id (write:statuses): the author's own, else 404; answers the status with its source `text`.
   * Replies stay. Its media become unattached again (a redraft can reuse them) unless `delete_media` (4.4.0).
   */
  app.delete('/api/v1/statuses/:id', (req, res) => {
    const caller = authorize(req, res, accepts('write:statuses'));
    if (!caller) return;
    const status = fake.statuses.get(req.params.id);
    if (!status || status.accountId !== caller.account!.id) return notFound(res);
    if (limited(res, 'deletes', caller.account!.id)) return;
    const answer = { ...statusJson(status, caller.account), text: status.text };
    fake.statuses.delete(status.id);
    for (const id of status.mediaIds) {
      const media = fake.media.get(id);
      if (!media) continue;
      if (truthy(req.query.delete_media)) fake.media.delete(id);
      else media.statusId = null;
    }
    res.json(answer);
  });

  // --- Anything else ---

  app.use((req: Request, res: Response) => fail(res, 404, 'Record not found', `The fake Mastodon has no route for ${req.method} ${req.path}`));
  app.use((error: Error & { status?: number; type?: string }, _req: Request, res: Response, next: NextFunction) => {
    if (res.headersSent) return next(error);
    if (error instanceof BadRequest) return fail(res, 400, error.message);
    if (error.type === 'entity.too.large') return fail(res, 413, 'Payload Too Large');
    fail(res, 500, `The fake Mastodon failed: ${error.message}`);
  });

  // --- Entities ---

  function avatarUrl(account: FakeAccount) {
    return `${url}/system/accounts/avatars/${account.id}/original/avatar.png`;
  }

  /** entities/Account. */
  function accountJson(account: FakeAccount) {
    const own = [...fake.statuses.values()].filter((status) => status.accountId === account.id);
    const last = own.sort(byId).at(-1);
    return {
      id: account.id,
      username: account.username,
      acct: account.username,
      display_name: account.displayName,
      locked: false,
      bot: false,
      discoverable: true,
      group: false,
      created_at: account.createdAt.toISOString(),
      note: '',
      url: `${url}/@${account.username}`,
      uri: `${url}/users/${account.username}`,
      avatar: avatarUrl(account),
      avatar_static: avatarUrl(account),
      header: `${url}/headers/original/missing.png`,
      header_static: `${url}/headers/original/missing.png`,
      followers_count: 0,
      following_count: 0,
      statuses_count: own.length,
      last_status_at: last ? last.createdAt.toISOString().slice(0, 10) : null,
      emojis: [],
      fields: [],
    };
  }

  /** entities/MediaAttachment: `url` null until processed. */
  function mediaJson(media: FakeMedia) {
    const extension = media.mimeType.split('/')[1]!.replace('jpeg', 'jpg');
    const file = (size: string) => `${url}/system/media_attachments/files/${media.id}/${size}/${media.id}.${extension}`;
    const small = Math.min(1, 640 / Math.max(media.width, media.height));
    const dimensions = (width: number, height: number) => ({ width, height, size: `${width}x${height}`, aspect: width / height });
    return {
      id: media.id,
      type: media.type,
      url: processed(media) ? file('original') : null,
      preview_url: file('small'),
      remote_url: null,
      preview_remote_url: null,
      text_url: null,
      meta: {
        original: dimensions(media.width, media.height),
        small: dimensions(Math.round(media.width * small), Math.round(media.height * small)),
        ...(media.focus ? { focus: media.focus } : {}),
      },
      description: media.description,
      blurhash: 'UFBWY:8_0Jxv4mx]t8t64.%M-:IUWGWAt6M}',
    };
  }

  /** Who may see a status: public and unlisted anyone; private and direct their author only (the fake has no follows). */
  function visibleTo(status: FakeStatus, viewer: FakeAccount | null) {
    return status.visibility === 'public' || status.visibility === 'unlisted' || viewer?.id === status.accountId;
  }

  /** entities/Status; `content` rendered as Mastodon renders plain text (paragraphs, links with invisible spans, mentions). */
  function statusJson(status: FakeStatus, viewer: FakeAccount | null) {
    const author = accountById(status.accountId)!;
    const rendered = renderContent(status.text);
    return {
      id: status.id,
      created_at: status.createdAt.toISOString(),
      in_reply_to_id: status.inReplyToId,
      in_reply_to_account_id: status.inReplyToAccountId,
      sensitive: status.sensitive,
      spoiler_text: status.spoilerText,
      visibility: status.visibility,
      language: status.language,
      uri: `${url}/users/${author.username}/statuses/${status.id}`,
      url: `${url}/@${author.username}/${status.id}`,
      replies_count: [...fake.statuses.values()].filter((other) => other.inReplyToId === status.id).length,
      reblogs_count: 0,
      favourites_count: 0,
      quotes_count: 0,
      edited_at: null,
      ...(viewer ? { favourited: false, reblogged: false, muted: false, bookmarked: false, pinned: false } : {}),
      content: rendered.html,
      reblog: null,
      application: status.application,
      account: accountJson(author),
      media_attachments: status.mediaIds.flatMap((id) => (fake.media.has(id) ? [mediaJson(fake.media.get(id)!)] : [])),
      mentions: rendered.mentions.map((account) => ({ id: account.id, username: account.username, url: `${url}/@${account.username}`, acct: account.username })),
      tags: rendered.tags.map((name) => ({ name, url: `${url}/tags/${name}` })),
      emojis: [],
      card: null,
      poll: null,
      quote: null,
    };
  }

  function createStatus(account: FakeAccount, input: {
    text: string; spoilerText: string; visibility: Visibility; sensitive: boolean; language: string; parent: FakeStatus | undefined;
    media: FakeMedia[]; application: FakeStatus['application']; idempotencyKey: string | null;
  }): FakeStatus {
    const status: FakeStatus = {
      id: nextId(), accountId: account.id, text: input.text, spoilerText: input.spoilerText, visibility: input.visibility, sensitive: input.sensitive,
      language: input.language, inReplyToId: input.parent?.id ?? null, inReplyToAccountId: input.parent?.accountId ?? null,
      mediaIds: input.media.map((media) => media.id), application: input.application, createdAt: new Date(), idempotencyKey: input.idempotencyKey,
    };
    fake.statuses.set(status.id, status);
    for (const media of input.media) media.statusId = status.id;
    return status;
  }

  /**
   * Mastodon's TextFormatter for a local plain-text status: HTML-escaped, paragraphs on blank lines, `<br />` on line
   * breaks, links shortened visually (api/guidelines.md#links), mentions of local accounts as h-cards, hashtags linked.
   */
  function renderContent(text: string) {
    const mentions: FakeAccount[] = [];
    const tags: string[] = [];
    let html = '';
    let at = 0;
    for (const entity of entitiesOf(text, true)) {
      html += escapeHtml(text.slice(at, entity.start));
      const original = text.slice(entity.start, entity.end);
      if (entity.kind === 'url') {
        const prefix = /^(https?:\/\/(www\.)?)/i.exec(original)![1]!;
        const rest = original.slice(prefix.length);
        html += `<a href="${escapeHtml(original)}" target="_blank" rel="nofollow noopener noreferrer" translate="no"><span class="invisible">${escapeHtml(prefix)}</span>`
          + `<span class="${rest.length > 30 ? 'ellipsis' : ''}">${escapeHtml(rest.slice(0, 30))}</span><span class="invisible">${escapeHtml(rest.slice(30))}</span></a>`;
      } else if (entity.kind === 'mention') {
        const local = !entity.domain || entity.domain.toLowerCase() === fake.domain.toLowerCase()
          ? [...fake.accounts.values()].find((account) => account.username.toLowerCase() === entity.value.toLowerCase())
          : undefined;
        if (local) {
          if (!mentions.includes(local)) mentions.push(local);
          html += `<span class="h-card" translate="no"><a href="${url}/@${local.username}" class="u-url mention">@<span>${escapeHtml(local.username)}</span></a></span>`;
        } else {
          html += escapeHtml(original);
        }
      } else {
        if (!tags.includes(entity.value.toLowerCase())) tags.push(entity.value.toLowerCase());
        html += `<a href="${url}/tags/${encodeURIComponent(entity.value.toLowerCase())}" class="mention hashtag" rel="tag">#<span>${escapeHtml(entity.value)}</span></a>`;
      }
      at = entity.end;
    }
    html += escapeHtml(text.slice(at));
    return { html: `<p>${html.split(/\n\n+/).map((paragraph) => paragraph.replace(/\n/g, '<br />')).join('</p><p>')}</p>`, mentions, tags };
  }

  return fake;
}

// --- Counting as Mastodon counts (StatusLengthValidator) ---

type Entity = { kind: 'url' | 'mention' | 'hashtag'; start: number; end: number; value: string; domain?: string };

/**
 * twitter-text's URL extraction as Mastodon's Extractor uses it (`extract_url_without_protocol: false`), approximated:
 * a URL starts with http:// or https:// (not glued to a word, `@` or `$`), has a domain with a dotted top-level name
 * (letters, or punycode), an optional port, and a path/query that does not end in punctuation (a closing parenthesis
 * only when balanced).
 */
const URL_RE = /(?<![a-z0-9@＠$#＃])https?:\/\/(?:[\p{L}\p{N}](?:[\p{L}\p{N}_-]*[\p{L}\p{N}])?\.)+(?:\p{L}{2,}|xn--[a-z0-9-]+)(?::\d{1,5})?(?:[/?#][^\s<>"]*)?/giu;
/** Account::MENTION_RE: `@user` or `@user@domain`, not after a word character, `/` or `=`. */
const MENTION_RE = /(?<![=/\p{L}\p{N}_])@([a-z0-9_]+(?:[.-]+[a-z0-9_]+)*)(?:@([\p{L}\p{N}_]+(?:[.-]+[\p{L}\p{N}_]+)*))?/giu;
const HASHTAG_RE = /(?<![=/)\p{L}\p{N}_&#])#([\p{L}\p{N}_]*[\p{L}_][\p{L}\p{N}_]*)/gu;

/** A URL does not end in punctuation; it ends in a closing parenthesis only when its parentheses balance. */
function trimUrl(url: string): string {
  const count = (text: string, c: string) => text.split(c).length - 1;
  let end = url.length;
  while (end > 0) {
    const last = url[end - 1]!;
    const head = url.slice(0, end);
    if (last === ')' ? count(head, '(') >= count(head, ')') : /[\p{L}\p{N}=_#/+\-&]/u.test(last)) break;
    end--;
  }
  return url.slice(0, end);
}

/** URLs and mentions (and, for rendering, hashtags), in order, overlapping ones dropped (remove_overlapping_entities). */
function entitiesOf(text: string, withHashtags = false): Entity[] {
  const found: Entity[] = [];
  for (const match of text.matchAll(URL_RE)) {
    const url = trimUrl(match[0]);
    found.push({ kind: 'url', start: match.index, end: match.index + url.length, value: url });
  }
  for (const match of text.matchAll(MENTION_RE)) {
    // twitter-text's end_mention_match: not a mention when followed by another @, an accented letter or ://.
    const after = text.slice(match.index + match[0].length);
    if (/^(?:[@＠]|[À-ÖØ-öø-ÿ]|:\/\/)/.test(after)) continue;
    found.push({ kind: 'mention', start: match.index, end: match.index + match[0].length, value: match[1]!, domain: match[2] });
  }
  if (withHashtags) for (const match of text.matchAll(HASHTAG_RE)) found.push({ kind: 'hashtag', start: match.index, end: match.index + match[0].length, value: match[1]! });
  found.sort((a, b) => a.start - b.start);
  const kept: Entity[] = [];
  for (const entity of found) if (!kept.length || entity.start >= kept.at(-1)!.end) kept.push(entity);
  return kept;
}

const hashtagsOf = (text: string) => entitiesOf(text, true).filter((entity) => entity.kind === 'hashtag').map((entity) => entity.value.toLowerCase());

let segmenter: Intl.Segmenter | undefined;
/** Ruby's each_grapheme_cluster: extended grapheme clusters (UAX #29). */
function graphemes(text: string): number {
  segmenter ??= new Intl.Segmenter('en', { granularity: 'grapheme' });
  let count = 0;
  for (const _segment of segmenter.segment(text)) count++;
  return count;
}

/**
 * StatusLengthValidator: grapheme clusters of the content warning followed by the text, where each URL counts as
 * `reserved` characters ('x' * 23) whatever its length, and `@user@domain` counts as `@user`.
 */
export function mastodonLength(text: string, spoilerText: string, reserved: number): number {
  let countable = '';
  let at = 0;
  for (const entity of entitiesOf(text)) {
    countable += text.slice(at, entity.start) + (entity.kind === 'url' ? 'x'.repeat(reserved) : `@${entity.value}`);
    at = entity.end;
  }
  return graphemes(spoilerText + countable + text.slice(at));
}

// --- Parameters ---

interface Body {
  params: Record<string, unknown>;
  files: Map<string, File>;
  kind: 'json' | 'form' | 'multipart' | 'none';
}

class BadRequest extends Error {}

/**
 * The body as Rails reads it into `params`: JSON, url-encoded (Rack's `a[]=1&a[]=2` arrays, through qs), or
 * multipart/form-data, parsed by the platform's own WHATWG parser (undici's `Request#formData`). Anything else: no params.
 */
async function parseBody(req: Request): Promise<Body> {
  const bytes = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
  const type = (req.get('content-type') ?? '').split(';')[0]!.trim().toLowerCase();
  const empty: Body = { params: {}, files: new Map(), kind: 'none' };
  if (type === 'application/json') {
    if (!bytes.length) return { ...empty, kind: 'json' };
    try {
      const parsed: unknown = JSON.parse(bytes.toString('utf8'));
      if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new Error('not an object');
      return { params: parsed as Record<string, unknown>, files: new Map(), kind: 'json' };
    } catch (error) {
      throw new BadRequest(`Error occurred while parsing request parameters: ${(error as Error).message}`);
    }
  }
  if (type === 'application/x-www-form-urlencoded') {
    return { params: qs.parse(bytes.toString('utf8'), { depth: 5, arrayLimit: 100 }) as Record<string, unknown>, files: new Map(), kind: 'form' };
  }
  if (type === 'multipart/form-data') {
    let form: FormData;
    try {
      form = await new globalThis.Request('http://fake.invalid/', { method: 'POST', headers: { 'content-type': req.get('content-type')! }, body: new Uint8Array(bytes) }).formData();
    } catch {
      throw new BadRequest('Error occurred while parsing request parameters: malformed multipart body');
    }
    const text = new URLSearchParams();
    const files = new Map<string, File>();
    for (const [name, value] of form) {
      if (typeof value === 'string') text.append(name, value);
      else if (!files.has(name)) files.set(name, value);
    }
    return { params: qs.parse(text.toString(), { depth: 5, arrayLimit: 100 }) as Record<string, unknown>, files, kind: 'multipart' };
  }
  return empty;
}

/** A string parameter: the string, undefined when absent (or JSON null), false when of another type. */
function optionalString(value: unknown): string | undefined | false {
  if (value === undefined || value === null) return undefined;
  return typeof value === 'string' ? value : false;
}

/** ActiveModel::Type::Boolean: "", nil → nil; false, 0, "0", "f", "false", "off" (any case) → false; anything else → true. */
function booleanParam(value: unknown): boolean | undefined {
  if (value === undefined || value === null || value === '') return undefined;
  return !['false', '0', 'f', 'off'].includes(String(value).toLowerCase());
}
const truthy = (value: unknown) => booleanParam(value) === true;

/** Mastodon's limit_param: `[params[:limit].to_i.abs, default * 2].min`. */
function limitParam(value: unknown, fallback: number): number {
  if (typeof value !== 'string') return fallback;
  return Math.min(Math.abs(Number.parseInt(value, 10) || 0), fallback * 2);
}

/** Ruby's String#strip: ASCII whitespace and NUL at both ends. */
const rubyStrip = (text: string) => text.replace(/^[\t\n\v\f\r \0]+|[\t\n\v\f\r \0]+$/g, '');

/** valid_locale_cascade: the language if Mastodon knows it, else its primary subtag, else the account's, else `en`. */
function postingLanguage(language: string | null, account: FakeAccount): string {
  const regional = ['en-GB', 'es-AR', 'es-MX', 'fr-CA', 'pt-BR', 'pt-PT', 'sr-Latn', 'zh-CN', 'zh-HK', 'zh-TW'];
  const valid = (code: string | null | undefined) => (code && (/^[a-z]{2,3}$/.test(code) || regional.includes(code)) ? code : undefined);
  return valid(language) ?? valid(language?.split(/[-_]/)[0]) ?? valid(account.language) ?? 'en';
}

/** Doorkeeper's RedirectUriValidator with Mastodon's configuration (no forced https; data/vbscript/javascript forbidden). */
function redirectUriProblem(uri: string): string | undefined {
  if (uri === OOB) return undefined;
  if (uri.length > APP_REDIRECT_URI_LIMIT) return `is too long (maximum is ${APP_REDIRECT_URI_LIMIT} characters)`;
  if (!/^[a-z][a-z0-9+.-]*:/i.test(uri)) return 'must be an absolute URI.';
  if (FORBIDDEN_SCHEMES.some((scheme) => uri.toLowerCase().startsWith(scheme))) return 'is forbidden by the server.';
  const parsed = URL.parse(uri);
  if (!parsed) return 'must be a valid URI.';
  if (parsed.hash || uri.includes('#')) return 'cannot contain a fragment.';
  return undefined;
}

/** Rails' number_to_human_size, as Paperclip's size message shows the limit. */
function humanSize(bytes: number): string {
  const units = ['Bytes', 'KB', 'MB', 'GB'];
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  return `${Number(value.toPrecision(3))} ${units[unit]}`;
}

const byId = (a: { id: string }, b: { id: string }) => (BigInt(a.id) < BigInt(b.id) ? -1 : BigInt(a.id) > BigInt(b.id) ? 1 : 0);

const page = (title: string, body: string) => htmlPage('Fake Mastodon', title, body);

/** Doorkeeper's error page: shown, never redirected, when the client or its redirect URI cannot be trusted. */
function errorPage(error: string, description: string): string {
  return page('An error has occurred', `<p class="error"><code>${escapeHtml(error)}</code></p><p class="description">${escapeHtml(description)}</p>`);
}

/** Follows a link as a browser would, through the instance's consent (given at once: autoConsent) back to this service's page. */
export async function followLinks(url: string): Promise<{ status: number; html: string }> {
  let next = url;
  for (let hop = 0; hop < 6; hop++) {
    const answer = await fetch(next, { redirect: 'manual' });
    const location = answer.headers.get('location');
    if (answer.status < 300 || answer.status >= 400 || !location) return { status: answer.status, html: await answer.text() };
    next = new URL(location, next).href;
  }
  throw new Error(`too many redirects from ${url}`);
}

/**
 * Connects `account` of `fake` as an API client does: POST /integrations/connect naming the server, the link followed to
 * this service's callback page, which shows the channel's id (answered).
 */
export async function connectMastodon(api: string, apiKey: string, fake: FakeMastodon, account = 'ann'): Promise<string> {
  fake.autoConsent(account);
  const link = await fetch(`${api}/integrations/connect`, {
    method: 'POST',
    headers: { 'x-api-key': apiKey, 'content-type': 'application/json' },
    body: JSON.stringify({ platform: 'MASTODON', instance: fake.host }),
  });
  if (link.status !== 200) throw new Error(`connect answered ${link.status}: ${await link.text()}`);
  const page = await followLinks(((await link.json()) as { redirectUrl: string }).redirectUrl);
  const id = /<code>([0-9a-f-]{36})<\/code>/.exec(page.html)?.[1];
  if (page.status !== 200 || !id) throw new Error(`the callback answered ${page.status}: ${page.html}`);
  return id;
}
