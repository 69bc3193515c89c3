import { generateKeyPairSync, randomBytes, sign } from 'node:crypto';
import events from 'node:events';
import http from 'node:http';
import express, { type NextFunction, type Request, type Response } from 'express';
import sharp from 'sharp';

/**
 * A contract fake of LinkedIn on loopback, written from LinkedIn's public documentation (Microsoft Learn: "Authorization
 * Code Flow", "Sign In with LinkedIn using OpenID Connect", "Refresh Tokens with OAuth 2.0", "Token Introspection",
 * "Client Credential Flow", "Organization Access Control", "Posts API", "Images API", "MultiImage API", "little Text
 * Format", "Network Update Social Actions", "Protocol Versions"). It checks what a real client must send (headers, form
 * and JSON bodies, scopes, URNs) and answers as LinkedIn does, errors in its format: `{ status, serviceErrorCode?, code?,
 * message }` on the REST API, `{ error, error_description }` on OAuth.
 *
 * One origin serves both hosts: `${url}/oauth/v2` stands for www.linkedin.com/oauth/v2, `${url}` for api.linkedin.com.
 * There is no login page: the authorization endpoint consents as the member `signInAs` named (or refuses, with
 * `consent = 'deny'`), the way a signed-in member who clicks "Allow" (or "Cancel") is sent back.
 */

export interface FakePage {
  id: number;
  name: string;
}

export interface FakeMember {
  sub: string;
  name: string;
  /** Pages the member administers (APPROVED ADMINISTRATOR). */
  pages: FakePage[];
}

export interface FakePost {
  urn: string;
  author: string;
  /** The commentary as sent (little text). */
  commentary: string;
  /** What a reader sees: the little text read back to plain text. */
  text: string;
  visibility: string;
  /** The post's `content` as sent (`{ media }` for one image, `{ multiImage: { images } }` for more); absent for text. */
  content?: unknown;
  comments: { urn: string; actor: string; text: string }[];
}

/** An image of the Images API: initialized for `owner`, AVAILABLE once its bytes were PUT to its upload URL. */
export interface FakeImage {
  urn: string;
  owner: string;
  status: 'WAITING_UPLOAD' | 'AVAILABLE';
  /** What was uploaded, and its type as read from the bytes. */
  bytes?: Buffer;
  mimeType?: string;
}

interface Token {
  sub: string;
  scopes: Set<string>;
  expiresAt: number;
  revoked: boolean;
}

/** A fault the next matching request meets. `drop`: the request is carried out, then the connection is cut unanswered. */
export type Fault = { status: 429 | 500 | 503; retryAfter?: number } | 'drop';

const RESERVED = new Set(['\\', '|', '{', '}', '@', '[', ']', '(', ')', '<', '>', '#', '*', '_', '~']);
const SUPPORTED_SCOPES = new Set(['openid', 'profile', 'email', 'w_member_social', 'r_organization_admin', 'w_organization_social']);
/** The oldest version the fake serves; LinkedIn keeps each monthly version about a year. */
const OLDEST_VERSION = '202401';

export interface FakeLinkedIn {
  url: string;
  clientId: string;
  clientSecret: string;
  /** Whether the token endpoint issues refresh tokens (LinkedIn grants them to approved partners only). */
  issueRefreshTokens: boolean;
  accessTokenTtlSeconds: number;
  /** The app's authorized redirect URLs: LinkedIn refuses any other, exactly compared. */
  redirectUris: Set<string>;
  /** What the authorization endpoint does: consent as the signed-in member, or the member cancels. */
  consent: 'allow' | 'deny';
  addMember(name: string, pages?: FakePage[]): FakeMember;
  signInAs(member: FakeMember): void;
  /** Every token of the member stops working, refresh tokens too (the member removed the app). */
  revoke(member: FakeMember): void;
  /** The member's access tokens expire now (refresh tokens still work). */
  expireAccessTokens(member: FakeMember): void;
  /** The next request to POST /rest/posts (or comments, or images' initializeUpload) meets `fault`. */
  failNext(path: 'posts' | 'comments' | 'images', fault: Fault): void;
  /** The next request to POST /rest/posts waits, unanswered, until the returned function is called (a slow LinkedIn). */
  holdNext(path: 'posts'): () => void;
  /** The tokens revoked by the app at `/oauth/v2/revoke`; LinkedIn refuses each of them from then on. */
  revokedTokens: Set<string>;
  /** How long the revocation endpoint takes to answer (0: at once): a LinkedIn slower than the client waits for. */
  revocationDelayMs: number;
  posts: Map<string, FakePost>;
  images: Map<string, FakeImage>;
  /** The requests received, as `METHOD path`, for tests that count calls. */
  requests: string[];
  refreshes: number;
  stop(): Promise<void>;
}

export async function startFakeLinkedIn(): Promise<FakeLinkedIn> {
  const app = express();
  const server = http.createServer(app);
  server.listen(0, '127.0.0.1');
  await events.once(server, 'listening');
  const url = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });

  const members = new Map<string, FakeMember>();
  const codes = new Map<string, { sub: string; redirectUri: string; scopes: Set<string>; expiresAt: number }>();
  const accessTokens = new Map<string, Token>();
  const refreshTokens = new Map<string, Token & { accessScopes: Set<string> }>();
  const faults: Record<'posts' | 'comments' | 'images', Fault[]> = { posts: [], comments: [], images: [] };
  const holds: Record<'posts', Promise<void>[]> = { posts: [] };
  const held = (path: 'posts') => async (_req: Request, _res: Response, next: () => void) => {
    await holds[path].shift();
    next();
  };
  let signedIn: FakeMember | undefined;
  let counter = 7_100_000_000_000_000_000n;
  const nextId = () => (counter += 1n).toString();

  const fake: FakeLinkedIn = {
    url,
    clientId: `client${randomBytes(4).toString('hex')}`,
    clientSecret: randomBytes(12).toString('hex'),
    issueRefreshTokens: true,
    accessTokenTtlSeconds: 60 * 24 * 3600,
    redirectUris: new Set(),
    consent: 'allow',
    addMember(name, pages = []) {
      // LinkedIn's member ids hold letters, digits, '-' and '_': every fake one has both, so every test meets them.
      const member = { sub: `m-${randomBytes(4).toString('hex')}_x`, name, pages };
      members.set(member.sub, member);
      return member;
    },
    signInAs: (member) => void (signedIn = member),
    revoke(member) {
      for (const token of [...accessTokens.values(), ...refreshTokens.values()]) if (token.sub === member.sub) token.revoked = true;
    },
    expireAccessTokens(member) {
      for (const token of accessTokens.values()) if (token.sub === member.sub) token.expiresAt = Date.now() - 1000;
    },
    failNext: (path, fault) => void faults[path].push(fault),
    holdNext: (path) => {
      let release!: () => void;
      holds[path].push(new Promise<void>((resolve) => (release = resolve)));
      return release;
    },
    revokedTokens: new Set(),
    revocationDelayMs: 0,
    posts: new Map(),
    images: new Map(),
    requests: [],
    refreshes: 0,
    stop: () =>
      new Promise((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };

  app.use((req, _res, next) => {
    fake.requests.push(`${req.method} ${req.path}`);
    next();
  });

  const oauthError = (res: Response, status: number, error: string, description: string) =>
    res.status(status).json({ error, error_description: description });
  const restError = (res: Response, status: number, message: string, extra: Record<string, unknown> = {}) =>
    res.status(status).set('x-li-uuid', randomBytes(8).toString('base64')).json({ status, message, ...extra });

  // --- OAuth 2.0 (www.linkedin.com/oauth/v2) ---

  app.get('/oauth/v2/authorization', (req, res) => {
    const q = req.query as Record<string, string | undefined>;
    if (q.response_type !== 'code') return oauthError(res, 400, 'invalid_request', 'response_type must be code');
    if (q.client_id !== fake.clientId) return oauthError(res, 401, 'invalid_client', 'Unknown client_id');
    if (!q.redirect_uri || !URL.canParse(q.redirect_uri)) return oauthError(res, 400, 'invalid_request', 'redirect_uri is required');
    // Never redirected to: LinkedIn shows its own error page for an unregistered redirect URL.
    if (!fake.redirectUris.has(q.redirect_uri)) return oauthError(res, 400, 'invalid_redirect_uri', 'The redirect_uri does not match the registered value');
    if (!q.state) return oauthError(res, 400, 'invalid_request', 'state is required by this application');
    const scopes = (q.scope ?? '').split(' ').filter(Boolean);
    const unknown = scopes.find((scope) => !SUPPORTED_SCOPES.has(scope));
    const back = new URL(q.redirect_uri);
    back.searchParams.set('state', q.state);
    if (!scopes.length || unknown) {
      back.searchParams.set('error', 'invalid_scope');
      back.searchParams.set('error_description', `Scope "${unknown ?? ''}" is not authorized for your application`);
      return res.redirect(302, back.toString());
    }
    if (fake.consent === 'deny' || !signedIn) {
      back.searchParams.set('error', 'user_cancelled_login');
      back.searchParams.set('error_description', 'The user cancelled LinkedIn login');
      return res.redirect(302, back.toString());
    }
    const code = randomBytes(24).toString('base64url');
    codes.set(code, { sub: signedIn.sub, redirectUri: q.redirect_uri, scopes: new Set(scopes), expiresAt: Date.now() + 30 * 60_000 });
    back.searchParams.set('code', code);
    res.redirect(302, back.toString());
  });

  app.post('/oauth/v2/accessToken', express.text({ type: '*/*' }), (req, res) => {
    if (!req.is('application/x-www-form-urlencoded')) return oauthError(res, 400, 'invalid_request', 'Content-Type must be application/x-www-form-urlencoded');
    const form = new URLSearchParams(typeof req.body === 'string' ? req.body : '');
    // LinkedIn takes the client's credentials in the body (client_secret_post).
    if (form.get('client_id') !== fake.clientId || form.get('client_secret') !== fake.clientSecret) {
      return oauthError(res, 401, 'invalid_client', 'Client authentication failed');
    }
    const grant = form.get('grant_type');
    if (grant === 'authorization_code') {
      const code = codes.get(form.get('code') ?? '');
      codes.delete(form.get('code') ?? '');
      if (!code || code.expiresAt < Date.now()) return oauthError(res, 400, 'invalid_request', 'Unable to retrieve access token: appid/redirect uri/code verifier does not match authorization code. Or authorization code expired.');
      if (form.get('redirect_uri') !== code.redirectUri) return oauthError(res, 400, 'invalid_redirect_uri', 'redirect_uri does not match the authorization request');
      return res.json(issue(code.sub, code.scopes));
    }
    if (grant === 'refresh_token') {
      const stored = refreshTokens.get(form.get('refresh_token') ?? '');
      if (!stored || stored.revoked || stored.expiresAt < Date.now()) {
        return oauthError(res, 400, 'invalid_grant', 'The provided authorization grant or refresh token is invalid, expired or revoked');
      }
      fake.refreshes++;
      const access = newAccessToken(stored.sub, stored.accessScopes);
      // The refresh token keeps its own lifetime: it is not extended by refreshing.
      return res.json({
        access_token: access,
        expires_in: fake.accessTokenTtlSeconds,
        refresh_token: form.get('refresh_token'),
        refresh_token_expires_in: Math.floor((stored.expiresAt - Date.now()) / 1000),
        scope: [...stored.accessScopes].join(','),
        token_type: 'Bearer',
      });
    }
    return oauthError(res, 400, 'unsupported_grant_type', `grant_type ${grant ?? '(none)'} is not supported`);
  });

  // Token revocation, www.linkedin.com/oauth/v2/revoke: `client_id`, `client_secret` and `token`, form-encoded, as
  // LinkedIn's sibling introspectToken endpoint documents them. Errors as LinkedIn's OAuth endpoints answer them (the
  // error tables of "Client Credential Flow": a missing parameter 400 invalid_request, bad client credentials 401
  // invalid_client); a token unknown or revoked already is answered 200, as RFC 7009 says (the client's aim is met).
  app.post('/oauth/v2/revoke', express.text({ type: '*/*' }), async (req, res) => {
    if (!req.is('application/x-www-form-urlencoded')) return oauthError(res, 400, 'invalid_request', 'Content-Type must be application/x-www-form-urlencoded');
    const form = new URLSearchParams(typeof req.body === 'string' ? req.body : '');
    const missing = ['client_id', 'client_secret', 'token'].find((name) => !form.get(name));
    if (missing) return oauthError(res, 400, 'invalid_request', `A required parameter "${missing}" is missing`);
    if (form.get('client_id') !== fake.clientId || form.get('client_secret') !== fake.clientSecret) {
      return oauthError(res, 401, 'invalid_client', 'Client authentication failed');
    }
    if (fake.revocationDelayMs) await new Promise((resolve) => setTimeout(resolve, fake.revocationDelayMs).unref());
    const token = form.get('token')!;
    const stored = accessTokens.get(token) ?? refreshTokens.get(token);
    if (stored) {
      stored.revoked = true;
      fake.revokedTokens.add(token);
    }
    res.status(200).end();
  });

  function newAccessToken(sub: string, scopes: Set<string>) {
    const token = `AQ${randomBytes(24).toString('base64url')}`;
    accessTokens.set(token, { sub, scopes, expiresAt: Date.now() + fake.accessTokenTtlSeconds * 1000, revoked: false });
    return token;
  }

  function issue(sub: string, scopes: Set<string>) {
    const body: Record<string, unknown> = {
      access_token: newAccessToken(sub, scopes),
      expires_in: fake.accessTokenTtlSeconds,
      scope: [...scopes].join(','),
      token_type: 'Bearer',
    };
    if (fake.issueRefreshTokens) {
      const refresh = `AQ${randomBytes(30).toString('base64url')}`;
      const ttl = 365 * 24 * 3600;
      refreshTokens.set(refresh, { sub, scopes, accessScopes: scopes, expiresAt: Date.now() + ttl * 1000, revoked: false });
      Object.assign(body, { refresh_token: refresh, refresh_token_expires_in: ttl });
    }
    if (scopes.has('openid')) body.id_token = idToken(sub);
    return body;
  }

  /** An OpenID Connect ID token, RS256, issued by `${origin}/oauth` as LinkedIn's discovery document says. */
  function idToken(sub: string) {
    const now = Math.floor(Date.now() / 1000);
    const member = members.get(sub)!;
    const encode = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url');
    const input = `${encode({ alg: 'RS256', kid: 'fake', typ: 'JWT' })}.${encode({ iss: `${url}/oauth`, aud: fake.clientId, iat: now, exp: now + 3600, sub, name: member.name })}`;
    return `${input}.${sign('sha256', Buffer.from(input), privateKey).toString('base64url')}`;
  }

  // --- The REST API (api.linkedin.com) ---

  /** The member behind the bearer token, or LinkedIn's 401. */
  const authorize = (req: Request, res: Response): (Token & { member: FakeMember }) | undefined => {
    const header = req.header('authorization') ?? '';
    const token = accessTokens.get(header.replace(/^Bearer /, ''));
    if (!header.startsWith('Bearer ') || !token) return void restError(res, 401, 'Invalid access token', { serviceErrorCode: 65600, code: 'INVALID_ACCESS_TOKEN' });
    if (token.revoked) return void restError(res, 401, 'The token used in the request has been revoked by the user', { serviceErrorCode: 65601, code: 'REVOKED_ACCESS_TOKEN' });
    if (token.expiresAt < Date.now()) return void restError(res, 401, 'The token used in the request has expired', { serviceErrorCode: 65602, code: 'EXPIRED_ACCESS_TOKEN' });
    return { ...token, member: members.get(token.sub)! };
  };

  /** The versioned API's required headers. */
  const versioned = (req: Request, res: Response, next: NextFunction) => {
    if (req.header('x-restli-protocol-version') !== '2.0.0') return restError(res, 400, 'X-Restli-Protocol-Version must be 2.0.0', { code: 'ILLEGAL_ARGUMENT' });
    const version = req.header('linkedin-version') ?? '';
    if (!/^\d{6}(\.\d{2})?$/.test(version)) return restError(res, 400, 'A valid LinkedIn-Version header (YYYYMM) is required', { code: 'VERSION_MISSING' });
    const now = new Date();
    const current = `${now.getUTCFullYear()}${String(now.getUTCMonth() + 1).padStart(2, '0')}`;
    if (version.slice(0, 6) < OLDEST_VERSION || version.slice(0, 6) > current) {
      return restError(res, 426, `Requested version ${version} is not active`, { code: 'NONEXISTENT_VERSION' });
    }
    next();
  };

  const needScope = (token: Token, res: Response, scope: string, what: string) => {
    if (token.scopes.has(scope)) return true;
    restError(res, 403, `Not enough permissions to access: ${what}`, { serviceErrorCode: 100, code: 'ACCESS_DENIED' });
    return false;
  };

  /** Whether the token may act as `author`: the member itself, or a page it administers, with the matching scope. */
  const mayActAs = (token: Token & { member: FakeMember }, res: Response, author: unknown, what: string) => {
    if (author === `urn:li:person:${token.sub}`) return needScope(token, res, 'w_member_social', what);
    const page = typeof author === 'string' && /^urn:li:organization:(\d+)$/.exec(author);
    if (page && token.member.pages.some((p) => p.id === Number(page[1]))) return needScope(token, res, 'w_organization_social', what);
    restError(res, 403, `Not enough permissions to access: ${what} as ${String(author)}`, { serviceErrorCode: 100, code: 'ACCESS_DENIED' });
    return false;
  };

  const fault = (path: 'posts' | 'comments' | 'images', req: Request, res: Response): 'drop' | 'answered' | undefined => {
    const next = faults[path].shift();
    if (!next) return undefined;
    if (next === 'drop') return 'drop';
    if (next.retryAfter !== undefined) res.set('retry-after', String(next.retryAfter));
    restError(res, next.status, next.status === 429 ? 'Resource level throttle APPLICATION DAY limit for calls to this resource is reached.' : 'Internal Server Error', {
      code: next.status === 429 ? 'TOO_MANY_REQUESTS' : 'INTERNAL_SERVER_ERROR',
    });
    void req;
    return 'answered';
  };

  app.get('/v2/userinfo', (req, res) => {
    const token = authorize(req, res);
    if (!token) return;
    if (!token.scopes.has('openid') || !token.scopes.has('profile')) return restError(res, 403, 'Not enough permissions to access: userinfo.GET.NO_VERSION', { serviceErrorCode: 100, code: 'ACCESS_DENIED' });
    const [given, ...family] = token.member.name.split(' ');
    res.json({ sub: token.sub, name: token.member.name, given_name: given, family_name: family.join(' '), picture: `${url}/media/${token.sub}.jpg`, locale: { country: 'US', language: 'en' } });
  });

  app.get('/rest/organizationAcls', versioned, (req, res) => {
    const token = authorize(req, res);
    if (!token || !needScope(token, res, 'r_organization_admin', 'organizationAcls.FINDER-roleAssignee')) return;
    const q = req.query as Record<string, string | undefined>;
    if (q.q !== 'roleAssignee') return restError(res, 400, 'q must be roleAssignee or organization', { code: 'QUERY_PARAM_NOT_ALLOWED' });
    const assignee = `urn:li:person:${token.sub}`;
    // What LinkedIn would hold besides the APPROVED administrator roles; the finder's filters leave them out.
    const all = [
      ...token.member.pages.map((page) => ({ roleAssignee: assignee, state: 'APPROVED', role: 'ADMINISTRATOR', organization: `urn:li:organization:${page.id}` })),
      { roleAssignee: assignee, state: 'REVOKED', role: 'ADMINISTRATOR', organization: 'urn:li:organization:1' },
      { roleAssignee: assignee, state: 'APPROVED', role: 'ANALYST', organization: 'urn:li:organization:2' },
    ];
    const matching = all.filter((acl) => (!q.role || acl.role === q.role) && (!q.state || acl.state === q.state));
    // Rest.li paging: `start` (0) and `count` (10 unless asked).
    const start = Number(q.start ?? 0);
    const count = Number(q.count ?? 10);
    if (!Number.isInteger(start) || start < 0 || !Number.isInteger(count) || count < 1) return restError(res, 400, 'start and count must be natural numbers', { code: 'ILLEGAL_ARGUMENT' });
    res.json({ paging: { start, count, total: matching.length, links: [] }, elements: matching.slice(start, start + count) });
  });

  app.get('/rest/organizations/:id', versioned, (req, res) => {
    const token = authorize(req, res);
    if (!token) return;
    const page = [...members.values()].flatMap((member) => member.pages).find((p) => String(p.id) === req.params.id);
    if (!page) return restError(res, 404, `Organization ${req.params.id} not found`, { code: 'NOT_FOUND' });
    res.json({ id: page.id, localizedName: page.name, vanityName: page.name.toLowerCase().replace(/\W+/g, '-') });
  });

  const readJson = express.json({ type: () => true });

  // The Images API: initializeUpload answers an upload URL and the image's URN; the bytes are PUT there with the same
  // bearer token. LinkedIn takes JPEG, PNG and GIF of fewer than 36,152,320 pixels.
  const uploads = new Map<string, string>(); // upload URL token → image URN
  app.post('/rest/images', versioned, readJson, (req, res) => {
    const token = authorize(req, res);
    if (!token) return;
    if (req.query.action !== 'initializeUpload') return restError(res, 400, 'action must be initializeUpload', { code: 'ILLEGAL_ARGUMENT' });
    if (!req.is('application/json')) return restError(res, 415, 'Content-Type must be application/json');
    const body = req.body as { initializeUploadRequest?: { owner?: unknown } };
    const request = body?.initializeUploadRequest;
    const unknownFields = Object.keys(body ?? {}).filter((key) => key !== 'initializeUploadRequest');
    if (unknownFields.length || !request || typeof request.owner !== 'string' || Object.keys(request).some((key) => key !== 'owner' && key !== 'mediaLibraryMetadata')) {
      return restError(res, 422, 'initializeUploadRequest.owner is required', { code: 'UNPROCESSABLE_ENTITY' });
    }
    if (!mayActAs(token, res, request.owner, 'images.ACTION-initializeUpload')) return;
    const injected = fault('images', req, res);
    if (injected === 'answered') return;
    const urn = `urn:li:image:D${randomBytes(12).toString('base64url')}`;
    const upload = randomBytes(16).toString('hex');
    fake.images.set(urn, { urn, owner: request.owner, status: 'WAITING_UPLOAD' });
    uploads.set(upload, urn);
    if (injected === 'drop') return void req.socket.destroy();
    res.json({ value: { uploadUrlExpiresAt: Date.now() + 24 * 3600_000, uploadUrl: `${url}/dms-uploads/${upload}`, image: urn } });
  });

  app.put('/dms-uploads/:upload', express.raw({ type: () => true, limit: '50mb' }), async (req, res) => {
    const token = authorize(req, res);
    if (!token) return;
    const image = fake.images.get(uploads.get(req.params.upload as string) ?? '');
    if (!image) return restError(res, 404, 'Upload URL not found or expired', { code: 'NOT_FOUND' });
    if (!mayActAs(token, res, image.owner, 'images.UPLOAD')) return;
    if (image.status !== 'WAITING_UPLOAD') return restError(res, 409, 'The image was uploaded already', { code: 'CONFLICT' });
    const bytes = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
    const metadata = await sharp(bytes).metadata().catch(() => undefined);
    const mimeType = ({ jpeg: 'image/jpeg', png: 'image/png', gif: 'image/gif' } as Record<string, string>)[metadata?.format ?? ''];
    if (!metadata || !mimeType) return restError(res, 400, `Unsupported image format ${metadata?.format ?? '(not an image)'}: JPG, GIF and PNG are supported`, { code: 'INVALID_MEDIA' });
    if (metadata.width * (metadata.pageHeight ?? metadata.height) >= 36_152_320) return restError(res, 400, 'The image has too many pixels', { code: 'INVALID_MEDIA' });
    Object.assign(image, { status: 'AVAILABLE', bytes, mimeType });
    res.status(201).end();
  });

  app.post('/rest/posts', held('posts'), versioned, readJson, (req, res) => {
    const token = authorize(req, res);
    if (!token) return;
    if (!req.is('application/json')) return restError(res, 415, 'Content-Type must be application/json');
    const body = req.body as Record<string, unknown>;
    const errors = checkPost(body, fake.images);
    if (errors.length) return restError(res, 422, 'Validation failed', { code: 'UNPROCESSABLE_ENTITY', errorDetails: { inputErrors: errors } });
    if (!mayActAs(token, res, body.author, 'posts.CREATE')) return;
    const text = readLittle(body.commentary as string);
    if (typeof text !== 'string') {
      // LinkedIn does not refuse these: it cuts the commentary at the first unescaped reserved character. Refusing
      // here makes the tests see what would be silently truncated.
      return restError(res, 422, `commentary: unescaped reserved character "${text.reserved}" at ${text.at}`, { code: 'INVALID_LITTLE_TEXT' });
    }
    const duplicate = [...fake.posts.values()].find((post) => post.author === body.author && post.commentary === body.commentary);
    const injected = fault('posts', req, res);
    if (injected === 'answered') return;
    if (duplicate) return restError(res, 422, `Content is a duplicate of ${duplicate.urn}`, { code: 'DUPLICATE_POST', serviceErrorCode: 65600 });
    const urn = `urn:li:share:${nextId()}`;
    fake.posts.set(urn, { urn, author: body.author as string, commentary: body.commentary as string, text, visibility: body.visibility as string, content: body.content, comments: [] });
    if (injected === 'drop') return void req.socket.destroy();
    res.status(201).set('x-restli-id', urn).set('x-linkedin-id', urn).end();
  });

  app.post('/rest/socialActions/:urn/comments', versioned, readJson, (req, res) => {
    const token = authorize(req, res);
    if (!token) return;
    const target = fake.posts.get(req.params.urn as string);
    const body = req.body as { actor?: unknown; object?: unknown; message?: { text?: unknown } };
    const unknownFields = Object.keys(body).filter((key) => !['actor', 'object', 'message', 'parentComment', 'content'].includes(key));
    if (unknownFields.length || typeof body.message?.text !== 'string' || body.object !== req.params.urn) {
      return restError(res, 422, 'A comment needs actor, object (the post commented on, as in the path) and message.text', { code: 'UNPROCESSABLE_ENTITY' });
    }
    if (body.message.text.length > 1250) return restError(res, 422, 'message.text is longer than 1250 characters', { code: 'UNPROCESSABLE_ENTITY' });
    if (!mayActAs(token, res, body.actor, 'socialActions.comments.CREATE')) return;
    if (!target) return restError(res, 404, `${String(req.params.urn)} not found`, { code: 'NOT_FOUND' });
    const injected = fault('comments', req, res);
    if (injected === 'answered') return;
    const id = nextId();
    const urn = `urn:li:comment:(${target.urn},${id})`;
    target.comments.push({ urn, actor: body.actor as string, text: body.message.text });
    if (injected === 'drop') return void req.socket.destroy();
    res.status(201).set('x-restli-id', urn).json({ id, object: target.urn, actor: body.actor, message: { text: body.message.text }, $URN: urn });
  });

  app.delete('/rest/posts/:urn', versioned, (req, res) => {
    const token = authorize(req, res);
    if (!token) return;
    if (req.header('x-restli-method') !== 'DELETE') return restError(res, 400, 'X-RestLi-Method must be DELETE', { code: 'ILLEGAL_ARGUMENT' });
    const post = fake.posts.get(req.params.urn as string);
    if (!post) return restError(res, 404, `Post ${String(req.params.urn)} not found`, { code: 'NOT_FOUND' });
    if (!mayActAs(token, res, post.author, 'posts.DELETE')) return;
    fake.posts.delete(post.urn);
    res.status(204).end();
  });

  app.use((req: Request, res: Response) => restError(res, 404, `No resource found for ${req.method} ${req.path}`));
  return fake;
}

/** The fields LinkedIn requires of a post, and the values it takes; images must be uploaded and the author's. */
function checkPost(body: Record<string, unknown>, images: Map<string, FakeImage>) {
  const errors: { description: string; input: { inputPath: { fieldPath: string } }; code: string }[] = [];
  const bad = (field: string, description: string, code = 'INVALID_VALUE') => errors.push({ description, input: { inputPath: { fieldPath: `/${field}` } }, code });
  const allowed = ['author', 'commentary', 'visibility', 'distribution', 'lifecycleState', 'isReshareDisabledByAuthor', 'content', 'contentLandingPage', 'reshareContext', 'container'];
  for (const key of Object.keys(body ?? {})) if (!allowed.includes(key)) bad(key, `Unpermitted field ${key}`, 'UNPERMITTED_FIELDS');
  if (typeof body.author !== 'string' || !/^urn:li:(person|organization):[\w-]+$/.test(body.author)) bad('author', 'author must be a person or organization URN', 'MISSING_FIELD');
  if (typeof body.commentary !== 'string') bad('commentary', 'commentary must be a string', 'MISSING_FIELD');
  else if (body.commentary.length > 3000 * 2) bad('commentary', 'commentary is too long', 'TOO_LONG');
  if (!['PUBLIC', 'CONNECTIONS', 'LOGGED_IN'].includes(body.visibility as string)) bad('visibility', 'visibility must be PUBLIC, CONNECTIONS or LOGGED_IN', 'MISSING_FIELD');
  else if (body.visibility === 'CONNECTIONS' && String(body.author).startsWith('urn:li:organization:')) bad('visibility', 'an organization cannot post to CONNECTIONS');
  const distribution = body.distribution as Record<string, unknown> | undefined;
  if (!distribution || !['MAIN_FEED', 'NONE'].includes(distribution.feedDistribution as string)) bad('distribution', 'distribution.feedDistribution must be MAIN_FEED or NONE', 'MISSING_FIELD');
  else {
    if (!Array.isArray(distribution.targetEntities)) bad('distribution/targetEntities', 'targetEntities must be an array', 'MISSING_FIELD');
    if (!Array.isArray(distribution.thirdPartyDistributionChannels)) bad('distribution/thirdPartyDistributionChannels', 'must be an array', 'MISSING_FIELD');
  }
  if (body.lifecycleState !== 'PUBLISHED') bad('lifecycleState', 'lifecycleState must be PUBLISHED', 'MISSING_FIELD');
  if (typeof body.isReshareDisabledByAuthor !== 'boolean') bad('isReshareDisabledByAuthor', 'isReshareDisabledByAuthor must be a boolean', 'MISSING_FIELD');
  if (body.content !== undefined) checkContent(body.content, String(body.author), images, bad);
  return errors;
}

/**
 * little text read back to what a reader sees: `\x` is the character x; mentions `@[name](urn)` and hashtag templates
 * `{hashtag|#|tag}` become their text. Any other reserved character is where LinkedIn would cut the text short.
 */
function readLittle(text: string): string | { reserved: string; at: number } {
  let out = '';
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (c === '\\' && i + 1 < text.length && RESERVED.has(text[i + 1]!)) {
      out += text[++i];
      continue;
    }
    const mention = /^@\[([^\]]*)\]\((urn:li:(?:person|organization):[\w-]+)\)/.exec(text.slice(i));
    if (mention) {
      out += mention[1];
      i += mention[0].length - 1;
      continue;
    }
    const hashtag = /^\{hashtag\|[#＃]\|([^}]+)\}/.exec(text.slice(i));
    if (hashtag) {
      out += `#${hashtag[1]}`;
      i += hashtag[0].length - 1;
      continue;
    }
    if (RESERVED.has(c)) return { reserved: c, at: i };
    out += c;
  }
  return out;
}

/** `content` with images: `media` (one, `id` and optional `altText`/`title`) or `multiImage` (2 to 20 `{ id, altText }`). */
function checkContent(content: unknown, author: string, images: Map<string, FakeImage>, bad: (field: string, description: string, code?: string) => void) {
  const { media, multiImage, ...others } = (content ?? {}) as Record<string, unknown>;
  const keys = Object.keys(others);
  if (typeof content !== 'object' || content === null || keys.length || (media === undefined) === (multiImage === undefined)) {
    // The other content kinds (article, poll, reference…) are not used by this service.
    return bad('content', `content must hold one of media or multiImage${keys.length ? `; unpermitted ${keys.join(', ')}` : ''}`);
  }
  const checkImage = (image: unknown, path: string, allowed: string[]) => {
    const { id, altText } = (image ?? {}) as Record<string, unknown>;
    const extra = Object.keys(image ?? {}).filter((key) => !allowed.includes(key));
    if (extra.length) return bad(`${path}/${extra[0]}`, `Unpermitted field ${extra[0]}`, 'UNPERMITTED_FIELDS');
    if (altText !== undefined && (typeof altText !== 'string' || altText.length > 4086)) bad(`${path}/altText`, 'altText must be a string of at most 4086 characters');
    const stored = typeof id === 'string' ? images.get(id) : undefined;
    if (!stored) return bad(`${path}/id`, `${String(id)} is not an image URN known to LinkedIn`, 'INVALID_URN');
    if (stored.status !== 'AVAILABLE') bad(`${path}/id`, `${stored.urn} has not been uploaded`, 'MEDIA_NOT_AVAILABLE');
    if (stored.owner !== author) bad(`${path}/id`, `${stored.urn} is not owned by the author`, 'ACCESS_DENIED');
  };
  if (media !== undefined) return checkImage(media, 'content/media', ['id', 'altText', 'title']);
  const list = (multiImage as { images?: unknown })?.images;
  if (!Array.isArray(list) || list.length < 2 || list.length > 20) return bad('content/multiImage/images', 'a multiImage holds 2 to 20 images');
  const extra = Object.keys(multiImage as object).filter((key) => key !== 'images' && key !== 'altText');
  if (extra.length) bad(`content/multiImage/${extra[0]}`, `Unpermitted field ${extra[0]}`, 'UNPERMITTED_FIELDS');
  list.forEach((image, index) => checkImage(image, `content/multiImage/images/${index}`, ['id', 'altText']));
}
