import { domainToASCII } from 'node:url';
import * as oauth from 'oauth4webapi';
import { z } from 'zod';
import type { Sql } from '../db/index.js';
import { guardedFetch, RemoteFetchError, requestGuarded } from '../media/remote.js';
import { MASTODON_DEFAULT_LIMITS, type InstanceLimits } from '../platforms/rules.js';
import type { AppContext } from '../registry/context.js';

/*
 * A Mastodon instance (or a Mastodon-compatible server) as this service learns it when a member names it: its API's
 * origin, its handles' domain, its limits, its OAuth endpoints, and the app this service registered there. Every call
 * goes through the fetch guard import from URL uses (src/media/remote.ts): a member names the server, so only public
 * addresses are reached, unless MEDIA_FETCH_ALLOW_HOSTS names the host (tests, self-hosting). docs/publishing.md#mastodon.
 */

/** The scopes asked of every account: reading it, posting, uploading, and reading its posts (to settle an unanswered publish). */
export const MASTODON_SCOPES = 'read:accounts read:statuses write:statuses write:media';

/** The most an instance's JSON documents may weigh. */
const DOCUMENT_BYTES = 1024 * 1024;

export type Refused = { refused: string };

/**
 * The host a member means by what they typed: `mastodon.social`, `@ann@hachyderm.io`, `https://hachyderm.io/@ann`.
 * Lowercase, punycode, the port kept when not the default; or why it names no server.
 */
export function instanceHost(typed: string): string | Refused {
  const text = typed.trim();
  const refused = { refused: `"${text.slice(0, 100)}" does not name a server: give its address, such as mastodon.social` };
  if (!text || text.length > 300) return refused;
  const handle = /^@?[\w.-]+@([^@/\s]+)$/.exec(text);
  const address = handle ? handle[1]! : text;
  const url = URL.parse(/^[a-z][a-z0-9+.-]*:\/\//i.test(address) ? address : `https://${address}`);
  if (!url || (url.protocol !== 'https:' && url.protocol !== 'http:') || url.username || url.password) return refused;
  const hostname = url.hostname.startsWith('[') ? url.hostname : domainToASCII(url.hostname);
  if (!hostname || (!hostname.includes('.') && !hostname.startsWith('[') && hostname !== 'localhost')) return refused;
  return url.port ? `${hostname}:${url.port}` : hostname;
}

export interface Instance {
  host: string;
  apiBase: string;
  domain: string;
  software: string | null;
  limits: InstanceLimits;
  oauth: { authorizationEndpoint: string; tokenEndpoint: string; revocationEndpoint: string; pkce: boolean };
}

const numberOr = (value: unknown, fallback: number) => (typeof value === 'number' && Number.isFinite(value) && value > 0 ? value : fallback);

const InstanceDocument = z.looseObject({
  domain: z.string().optional(),
  uri: z.string().optional(),
  version: z.string().optional(),
  max_toot_chars: z.number().optional(),
  configuration: z
    .looseObject({
      statuses: z.looseObject({ max_characters: z.number().optional(), max_media_attachments: z.number().optional(), characters_reserved_per_url: z.number().optional() }).optional(),
      media_attachments: z
        .looseObject({
          supported_mime_types: z.array(z.string()).optional(),
          image_size_limit: z.number().optional(),
          image_matrix_limit: z.number().optional(),
          description_limit: z.number().optional(),
        })
        .optional(),
    })
    .optional(),
});

/** The limits an instance document says, Mastodon's defaults for what it leaves out; strict counting off Mastodon. */
export function limitsOf(document: z.infer<typeof InstanceDocument>, software: string | null): InstanceLimits {
  const statuses = document.configuration?.statuses ?? {};
  const media = document.configuration?.media_attachments ?? {};
  const d = MASTODON_DEFAULT_LIMITS;
  return {
    maxCharacters: numberOr(statuses.max_characters ?? document.max_toot_chars, d.maxCharacters),
    charactersReservedPerUrl: numberOr(statuses.characters_reserved_per_url, d.charactersReservedPerUrl),
    maxMediaAttachments: numberOr(statuses.max_media_attachments, d.maxMediaAttachments),
    imageTypes: media.supported_mime_types?.filter((type) => type.startsWith('image/')) ?? [...d.imageTypes],
    imageSizeLimit: numberOr(media.image_size_limit, d.imageSizeLimit ?? 0) || null,
    imageMatrixLimit: numberOr(media.image_matrix_limit, d.imageMatrixLimit ?? 0) || null,
    descriptionLimit: numberOr(media.description_limit, d.descriptionLimit),
    // Other servers count otherwise (GoToSocial: code points, links in full): counted strictly, nothing they refuse passes.
    counting: software === null || software === 'mastodon' ? 'mastodon' : 'strict',
  };
}

/** A JSON document of the instance through the guard, or undefined when it has none there (404, not JSON). */
async function readJson(app: AppContext, url: string, signal: AbortSignal): Promise<unknown> {
  const answer = await requestGuarded(url, {
    method: 'GET',
    headers: { accept: 'application/json', 'user-agent': 'Postwise' },
    maxBytes: DOCUMENT_BYTES,
    timeoutMs: app.config.platformTimeoutMs,
    allowHosts: app.config.mediaFetchAllowHosts,
    signal,
  });
  if (answer.status !== 200) return undefined;
  try {
    return JSON.parse(answer.bytes.toString('utf8')) as unknown;
  } catch {
    return undefined;
  }
}

/**
 * Reads the instance at `host` (its limits from /api/v2/instance, else /api/v1/instance; its software from nodeinfo; its
 * OAuth endpoints from its metadata, else Mastodon's fixed paths without PKCE) and keeps it; or why it cannot be used.
 */
export async function learnInstance(app: AppContext, host: string, signal: AbortSignal): Promise<Instance | Refused> {
  // https, unless the host is one MEDIA_FETCH_ALLOW_HOSTS names (a test's fake, a server on the operator's network).
  const scheme = app.config.mediaFetchAllowHosts.some((entry) => entry === host || entry === host.replace(/:\d+$/, '')) ? 'http' : 'https';
  const apiBase = `${scheme}://${host}`;
  try {
    const document = InstanceDocument.safeParse((await readJson(app, `${apiBase}/api/v2/instance`, signal)) ?? (await readJson(app, `${apiBase}/api/v1/instance`, signal)));
    if (!document.success || !(document.data.domain ?? document.data.uri)) {
      return { refused: `${host} does not answer as a Mastodon server (no instance document at /api/v2/instance or /api/v1/instance)` };
    }
    const software = await softwareOf(app, apiBase, signal);
    const metadata = z
      .looseObject({ authorization_endpoint: z.string(), token_endpoint: z.string(), revocation_endpoint: z.string().optional(), code_challenge_methods_supported: z.array(z.string()).optional() })
      .safeParse(await readJson(app, `${apiBase}/.well-known/oauth-authorization-server`, signal));
    const instance: Instance = {
      host,
      apiBase,
      domain: (document.data.domain ?? document.data.uri!).replace(/^https?:\/\//, '').replace(/\/.*$/, ''),
      software,
      limits: limitsOf(document.data, software),
      oauth: metadata.success
        ? {
            authorizationEndpoint: metadata.data.authorization_endpoint,
            tokenEndpoint: metadata.data.token_endpoint,
            revocationEndpoint: metadata.data.revocation_endpoint ?? `${apiBase}/oauth/revoke`,
            pkce: metadata.data.code_challenge_methods_supported?.includes('S256') ?? false,
          }
        : { authorizationEndpoint: `${apiBase}/oauth/authorize`, tokenEndpoint: `${apiBase}/oauth/token`, revocationEndpoint: `${apiBase}/oauth/revoke`, pkce: false },
    };
    await keepInstance(app.db, instance, document.data.version ?? null);
    return instance;
  } catch (error) {
    if (error instanceof RemoteFetchError) return { refused: `${host} cannot be reached: ${error.message}` };
    throw error;
  }
}

/** The server's software as its nodeinfo names it (mastodon, gotosocial, pleroma, akkoma…), or null when it has none. */
async function softwareOf(app: AppContext, apiBase: string, signal: AbortSignal): Promise<string | null> {
  const links = z.object({ links: z.array(z.object({ rel: z.string(), href: z.string() })) }).safeParse(await readJson(app, `${apiBase}/.well-known/nodeinfo`, signal));
  const href = links.success ? links.data.links.find((link) => link.rel.includes('nodeinfo.diaspora.software/ns/schema/2'))?.href : undefined;
  // Only a document on the instance itself: a link elsewhere is not followed.
  if (!href || new URL(href, apiBase).origin !== apiBase) return null;
  const info = z.object({ software: z.object({ name: z.string() }) }).safeParse(await readJson(app, new URL(href, apiBase).href, signal));
  return info.success ? info.data.software.name.toLowerCase() : null;
}

async function keepInstance(db: Sql, instance: Instance, version: string | null): Promise<void> {
  await db`
    INSERT INTO mastodon_instances (host, api_base, domain, software, version, limits, oauth, fetched_at)
    VALUES (${instance.host}, ${instance.apiBase}, ${instance.domain}, ${instance.software}, ${version},
      ${db.json(instance.limits as never)}, ${db.json(instance.oauth as never)}, now())
    ON CONFLICT (host) DO UPDATE SET api_base = EXCLUDED.api_base, domain = EXCLUDED.domain, software = EXCLUDED.software,
      version = EXCLUDED.version, limits = EXCLUDED.limits, oauth = EXCLUDED.oauth, fetched_at = now(), refresh_error = NULL`;
}

/** The app this service registered on an instance: its client, unsealed for one use. */
export interface InstanceApp {
  clientId: string;
  clientSecret: string;
}

/**
 * The app registered on `instance` for `redirectUri`, registering it when there is none, or when the instance forgot it
 * (its client-credentials token refused: an admin deleted it, the server was rebuilt, or before Mastodon 4.3 it was
 * vacuumed; the token itself is what keeps it from being vacuumed). Two connects at once may both register: one row wins.
 */
export async function instanceApp(app: AppContext, instance: Instance, redirectUri: string, signal: AbortSignal): Promise<InstanceApp | Refused> {
  const request = (url: string, init: { method: string; headers?: Record<string, string>; body?: string }) =>
    requestGuarded(url, { ...init, maxBytes: DOCUMENT_BYTES, timeoutMs: app.config.platformTimeoutMs, allowHosts: app.config.mediaFetchAllowHosts, signal });
  const open = (sealed: Buffer) => app.secrets.open(sealed).toString('utf8');
  try {
    const [kept] = await app.db<{ clientId: string; clientSecret: Buffer; appToken: Buffer | null }[]>`
      SELECT client_id, client_secret, app_token FROM mastodon_apps WHERE host = ${instance.host} AND redirect_uri = ${redirectUri} AND scopes = ${MASTODON_SCOPES}`;
    if (kept) {
      const check = kept.appToken
        ? await request(`${instance.apiBase}/api/v1/apps/verify_credentials`, { method: 'GET', headers: { authorization: `Bearer ${open(kept.appToken)}` } })
        : undefined;
      // 200, or 403 from a server that wants `read` for it: the app is known. 401: forgotten.
      if (check?.status !== 401) return { clientId: kept.clientId, clientSecret: open(kept.clientSecret) };
      await app.db`DELETE FROM mastodon_apps WHERE host = ${instance.host} AND redirect_uri = ${redirectUri} AND scopes = ${MASTODON_SCOPES}`;
    }
    const registered = await request(`${instance.apiBase}/api/v1/apps`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json' },
      body: JSON.stringify({ client_name: 'Postwise', redirect_uris: [redirectUri], scopes: MASTODON_SCOPES, website: app.publicUrl }),
    });
    const client = z.object({ client_id: z.string(), client_secret: z.string() }).safeParse(jsonOf(registered.bytes));
    if (registered.status !== 200 || !client.success) {
      return { refused: `${instance.host} did not register Postwise as an app (HTTP ${registered.status}${errorOf(registered.bytes)})` };
    }
    const token = await request(instance.oauth.tokenEndpoint, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
      body: new URLSearchParams({ grant_type: 'client_credentials', client_id: client.data.client_id, client_secret: client.data.client_secret, scope: 'read:accounts' }).toString(),
    });
    const appToken = z.object({ access_token: z.string() }).safeParse(jsonOf(token.bytes));
    await app.db`
      INSERT INTO mastodon_apps (host, redirect_uri, scopes, client_id, client_secret, app_token, verified_at)
      VALUES (${instance.host}, ${redirectUri}, ${MASTODON_SCOPES}, ${client.data.client_id}, ${app.secrets.seal(Buffer.from(client.data.client_secret))},
        ${appToken.success ? app.secrets.seal(Buffer.from(appToken.data.access_token)) : null}, now())
      ON CONFLICT DO NOTHING`;
    const [row] = await app.db<{ clientId: string; clientSecret: Buffer }[]>`
      SELECT client_id, client_secret FROM mastodon_apps WHERE host = ${instance.host} AND redirect_uri = ${redirectUri} AND scopes = ${MASTODON_SCOPES}`;
    return { clientId: row!.clientId, clientSecret: open(row!.clientSecret) };
  } catch (error) {
    if (error instanceof RemoteFetchError) return { refused: `${instance.host} cannot be reached: ${error.message}` };
    throw error;
  }
}

function jsonOf(bytes: Buffer): unknown {
  try {
    return JSON.parse(bytes.toString('utf8')) as unknown;
  } catch {
    return undefined;
  }
}

/** `: the server's words` from a Mastodon error body, or nothing. */
function errorOf(bytes: Buffer): string {
  const body = z.object({ error: z.string(), error_description: z.string().optional() }).safeParse(jsonOf(bytes));
  return body.success ? `: ${(body.data.error_description ?? body.data.error).slice(0, 200)}` : '';
}

/**
 * The PKCE verifier of a connect link, derived from its nonce under a key of ENCRYPTION_KEY: the callback derives it
 * again, so it is neither stored nor carried in a URL (43 base64url characters, as RFC 7636 asks).
 */
export const pkceVerifier = (app: AppContext, nonce: string): string => app.secrets.sign(`mastodon-pkce:${nonce}`);

/** Where the member consents, on their instance: its authorize page for this service's app, with PKCE where it has it. */
export async function authorizationUrl(app: AppContext, instance: Instance, client: InstanceApp, request: { redirectUri: string; state: string; nonce: string }): Promise<string> {
  const url = new URL(instance.oauth.authorizationEndpoint);
  url.search = new URLSearchParams({ response_type: 'code', client_id: client.clientId, redirect_uri: request.redirectUri, scope: MASTODON_SCOPES, state: request.state }).toString();
  if (instance.oauth.pkce) {
    url.searchParams.set('code_challenge', await oauth.calculatePKCECodeChallenge(pkceVerifier(app, request.nonce)));
    url.searchParams.set('code_challenge_method', 'S256');
  }
  return url.href;
}

/** What the callback makes of the member's consent: the account, and what to store (sealed) to act as it. */
export interface MastodonAccount {
  accountId: string;
  name: string;
  handle: string;
  image: string | null;
  credentials: { apiBase: string; host: string; clientId: string; clientSecret: string; accessToken: string; scope: string };
}

/**
 * The callback: the instance's answer (a denial, or a code) checked against the state, the code exchanged (with the
 * verifier when PKCE was used), and the account read. Throws a Refused-shaped message for the page.
 */
export async function completeConsent(
  app: AppContext,
  request: { host: string; nonce: string; url: URL; state: string; redirectUri: string },
  signal: AbortSignal,
): Promise<MastodonAccount | Refused> {
  const [row] = await app.db<{ apiBase: string; domain: string; oauth: Instance['oauth'] }[]>`
    SELECT api_base, domain, oauth FROM mastodon_instances WHERE host = ${request.host}`;
  if (!row) return { refused: `${request.host} is not known here any more; ask for a new link` };
  const [kept] = await app.db<{ clientId: string; clientSecret: Buffer }[]>`
    SELECT client_id, client_secret FROM mastodon_apps WHERE host = ${request.host} AND redirect_uri = ${request.redirectUri} AND scopes = ${MASTODON_SCOPES}`;
  if (!kept) return { refused: `Postwise is no longer registered on ${request.host}; ask for a new link` };
  const clientSecret = app.secrets.open(kept.clientSecret).toString('utf8');
  const server: oauth.AuthorizationServer = { issuer: row.apiBase, authorization_endpoint: row.oauth.authorizationEndpoint, token_endpoint: row.oauth.tokenEndpoint };
  const client = { client_id: kept.clientId };
  const options = {
    signal,
    [oauth.allowInsecureRequests]: row.apiBase.startsWith('http:'),
    [oauth.customFetch]: guardedFetch({ maxBytes: DOCUMENT_BYTES, timeoutMs: app.config.platformTimeoutMs, allowHosts: app.config.mediaFetchAllowHosts }),
  };
  let accessToken: string;
  let scope: string;
  try {
    const params = oauth.validateAuthResponse(server, client, request.url, request.state);
    const verifier = row.oauth.pkce ? pkceVerifier(app, request.nonce) : oauth.nopkce;
    const response = await oauth.authorizationCodeGrantRequest(server, client, oauth.ClientSecretPost(clientSecret), params, request.redirectUri, verifier, options);
    const tokens = await oauth.processAuthorizationCodeResponse(server, client, response);
    accessToken = tokens.access_token;
    scope = tokens.scope ?? MASTODON_SCOPES;
  } catch (error) {
    if (error instanceof oauth.AuthorizationResponseError) {
      if (error.error === 'access_denied') return { refused: `The consent on ${request.host} was cancelled: nothing was connected` };
      return { refused: `${request.host} did not authorize the connection (${error.error_description ?? error.error}); ask for a new link` };
    }
    if (error instanceof oauth.ResponseBodyError) return { refused: `${request.host} refused the connection (${error.error_description ?? error.error}); ask for a new link` };
    if (error instanceof RemoteFetchError) return { refused: `${request.host} cannot be reached: ${error.message}` };
    throw error;
  }
  const me = await requestGuarded(`${row.apiBase}/api/v1/accounts/verify_credentials`, {
    method: 'GET',
    headers: { authorization: `Bearer ${accessToken}`, accept: 'application/json' },
    maxBytes: DOCUMENT_BYTES,
    timeoutMs: app.config.platformTimeoutMs,
    allowHosts: app.config.mediaFetchAllowHosts,
    signal,
  });
  const account = z.object({ id: z.string(), username: z.string(), display_name: z.string().optional(), avatar_static: z.string().optional(), avatar: z.string().optional() }).safeParse(jsonOf(me.bytes));
  if (me.status !== 200 || !account.success) return { refused: `${request.host} did not say which account this is (HTTP ${me.status}${errorOf(me.bytes)})` };
  const { id, username, display_name: displayName, avatar_static: avatarStatic, avatar } = account.data;
  return {
    // An account's id is only unique on its instance.
    accountId: `${id}@${request.host}`,
    name: displayName?.trim() || username,
    handle: `@${username}@${row.domain}`,
    image: avatarStatic ?? avatar ?? null,
    credentials: { apiBase: row.apiBase, host: request.host, clientId: kept.clientId, clientSecret, accessToken, scope },
  };
}
