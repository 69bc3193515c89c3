import { generateKeyPairSync } from 'node:crypto';
import type { Request, RequestHandler } from 'express';
import type { Configuration, KoaContextWithOIDC, Provider } from 'oidc-provider';
import type { Database } from '../db/index.js';
import type { Logger } from '../process/logger.js';
import type { Secrets } from '../auth/secrets.js';
import { postgresAdapter } from './adapter.js';
import { guardedClientFetch } from './client-fetch.js';
import { SCOPE_NAMES } from './scopes.js';
import { resourcesOf } from './resource.js';

/** A refresh token unused for this long lapses; each use gives a new one (rotation), the chain lasting at most a year. */
export const REFRESH_TOKEN_SECONDS = 30 * 86_400;
/** How long a member has to answer the consent page, and a code to be exchanged. */
const INTERACTION_SECONDS = 600;
const CODE_SECONDS = 60;

/** The command line's own client (`postwise login --web`): a native app on a loopback redirect, any port (RFC 8252 §7.3). */
export const CLI_CLIENT_ID = 'postwise-cli';

/**
 * The paths the library answers itself: its endpoints (the enabled ones of `routes` below; /oauth/linkedin/… are the
 * channels' connect pages), and its metadata (RFC 8414, and the OpenID name of it).
 */
export const AUTHORIZATION_SERVER_PATHS = /^\/(oauth\/(authorize|token|register|revoke|jwks)(\/|$)|\.well-known\/(oauth-authorization-server|openid-configuration)$)/;

export interface AuthorizationServerOptions {
  db: Database;
  logger: Logger;
  secrets: Secrets;
  /** The issuer: PUBLIC_URL, or where the service listens (known only once it does: PORT=0). */
  publicUrl: () => string;
  /** TRUST_PROXY: the provider then reads the scheme and host a proxy forwarded. */
  trustProxy: boolean;
  /** MEDIA_FETCH_ALLOW_HOSTS: hosts a client metadata document may be fetched from although not public (tests, self-hosting). */
  allowHosts: readonly string[];
  /** OAUTH_ACCESS_TOKEN_SECONDS: access tokens are short-lived; clients refresh them, each refresh token used once. */
  accessTokenSeconds: number;
}

export interface AuthorizationServer {
  /** The library's own routes (AUTHORIZATION_SERVER_PATHS); mount before any body parser. */
  handle: RequestHandler;
  /** The provider, built at its first use: the consent step and bearer checks use its models. */
  provider(): Promise<Provider>;
}

/**
 * Postwise's OAuth 2.1 authorization server, built on oidc-provider (docs/mcp.md says why): authorization code with
 * PKCE (S256 only), resource indicators with audience-bound opaque access tokens, rotating refresh tokens whose reuse
 * ends the connection, revocation, and Dynamic Client Registration for public clients. Consent is the dashboard's
 * (src/oauth/consent.ts); every code and token is stored hashed (src/oauth/adapter.ts).
 *
 * Built lazily: oidc-provider is imported at the first OAuth request, so a service nobody connects an app to never
 * loads it (on Node 20 it prints one warning then: it supports Node 22 and later).
 */
export function authorizationServer(options: AuthorizationServerOptions): AuthorizationServer {
  let built: Promise<{ provider: Provider; callback: RequestHandler }> | undefined;
  const build = () => (built ??= buildProvider(options).catch((error: unknown) => {
    built = undefined;
    throw error;
  }));
  return {
    handle: (req, res, next) => {
      if (!AUTHORIZATION_SERVER_PATHS.test(req.path)) return next();
      build().then(({ callback }) => callback(req, res, next), next);
    },
    provider: async () => (await build()).provider,
  };
}

async function buildProvider({ db, logger, secrets, publicUrl, trustProxy, allowHosts, accessTokenSeconds }: AuthorizationServerOptions) {
  const { Provider, errors } = await import('oidc-provider');
  const issuer = publicUrl();
  const resources = resourcesOf(issuer);
  const jwks = await signingKeys(db, secrets);
  const configuration: Configuration = {
    adapter: postgresAdapter(db, { requestAddress: () => (Provider.ctx?.req as Request | undefined)?.ip, InvalidGrant: errors.InvalidGrant }),
    clients: [
      {
        client_id: CLI_CLIENT_ID,
        client_name: 'Postwise command line',
        application_type: 'native',
        redirect_uris: ['http://127.0.0.1/callback'],
        token_endpoint_auth_method: 'none',
        grant_types: ['authorization_code', 'refresh_token'],
        response_types: ['code'],
      },
    ],
    async findAccount(_ctx, accountId) {
      const [workspaceId, userId] = accountId.split(':');
      const [member] = await db`SELECT 1 AS one FROM memberships WHERE organization_id = ${workspaceId ?? ''}::uuid AND user_id = ${userId ?? ''}::uuid`;
      return member ? { accountId, claims: () => ({ sub: accountId }) } : undefined;
    },
    // Only offline_access is the library's; Postwise's scopes are resource scopes, asked at consent.
    scopes: ['offline_access'],
    extraClientMetadata: {
      // The validator runs once per extra property, for every client the library builds (registered, metadata document,
      // the command line's), before the library's own checks: this property (never read) is what makes it run.
      properties: ['postwise_policy'],
      validator(_ctx, _key, _value, metadata) {
        delete metadata.scope; // what an app may do is decided at consent, not at registration
        for (const uri of metadata.redirect_uris ?? []) {
          if (!allowedRedirect(uri)) {
            throw new errors.InvalidRedirectUri('redirect_uris must be https URLs, or http on a loopback address (127.0.0.1, [::1] or localhost)');
          }
        }
      },
    },
    responseTypes: ['code'],
    pkce: { required: () => true },
    clientAuthMethods: ['none'],
    clientDefaults: { grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'], token_endpoint_auth_method: 'none' },
    // The MCP specification asks servers not to make clients ask for offline_access: a client allowed to refresh gets a refresh token.
    issueRefreshToken: async (_ctx, client) => client.grantTypeAllowed('refresh_token'),
    rotateRefreshToken: true,
    // Consent every time: the grant is only ever the one this authorization's consent made, never one the library's
    // session remembers, so no app is ever allowed again without a member saying so.
    async loadExistingGrant(ctx) {
      const grantId = ctx.oidc.result?.consent?.grantId;
      return grantId ? ctx.oidc.provider.Grant.find(grantId) : undefined;
    },
    expiresWithSession: async () => false,
    ttl: {
      AccessToken: accessTokenSeconds,
      AuthorizationCode: CODE_SECONDS,
      RefreshToken: REFRESH_TOKEN_SECONDS,
      Grant: 365 * 86_400,
      Interaction: INTERACTION_SECONDS,
      Session: INTERACTION_SECONDS,
    },
    cookies: { keys: [secrets.sign('postwise:oauth-cookies')] },
    jwks,
    fetch: guardedClientFetch(allowHosts),
    routes: {
      authorization: '/oauth/authorize',
      token: '/oauth/token',
      registration: '/oauth/register',
      revocation: '/oauth/revoke',
      jwks: '/oauth/jwks',
      introspection: '/oauth/introspect',
      end_session: '/oauth/logout',
      userinfo: '/oauth/userinfo',
      pushed_authorization_request: '/oauth/par',
      code_verification: '/oauth/device',
      device_authorization: '/oauth/device/auth',
      backchannel_authentication: '/oauth/backchannel',
      challenge: '/oauth/challenge',
    },
    interactions: { url: async (_ctx, interaction) => `/authorize/${interaction.uid}` },
    features: {
      devInteractions: { enabled: false },
      dPoP: { enabled: false }, // the resources check Bearer tokens only
      pushedAuthorizationRequests: { enabled: false },
      userinfo: { enabled: false },
      rpInitiatedLogout: { enabled: false },
      revocation: { enabled: true },
      registration: { enabled: true, issueRegistrationAccessToken: false },
      // A client named by an https URL whose document says who it is (the MCP specification's preferred way). Its
      // `ack` makes a later library release that changes the draft fail at start instead of changing silently.
      clientIdMetadataDocument: { enabled: true, ack: 'draft-02', cacheDuration: { min: 60, max: 86_400 } },
      resourceIndicators: {
        enabled: true,
        defaultResource: async () => resources.mcp,
        useGrantedResource: async () => true,
        getResourceServerInfo: async (_ctx, resource) => {
          if (resource !== resources.mcp && resource !== resources.api) {
            throw new errors.InvalidTarget(`this server issues tokens for ${resources.mcp} and ${resources.api} only`);
          }
          return { scope: SCOPE_NAMES.join(' '), accessTokenFormat: 'opaque', accessTokenTTL: accessTokenSeconds };
        },
      },
    },
    renderError: async (ctx, out) => renderError(ctx, out),
  };
  const provider = new Provider(issuer, configuration);
  provider.proxy = trustProxy;
  // The library's events carry requests and parameters: only the error's own words are logged, never a value.
  provider.on('server_error', (_ctx, error) => logger.error('OAuth server error', { error: error.message }));
  provider.on('grant.revoked', (_ctx, grantId) => logger.info('OAuth connection ended: a code or refresh token was used twice, or it was revoked', { connectionId: grantId }));
  const handler = provider.callback();
  const callback: RequestHandler = (req, res) => void handler(req, res);
  return { provider, callback };
}

/** https, or http on a loopback address (native apps: RFC 8252 §7.3); custom schemes are not taken. */
function allowedRedirect(uri: string): boolean {
  const url = URL.parse(uri);
  if (!url || url.hash) return false;
  return url.protocol === 'https:' || (url.protocol === 'http:' && ['127.0.0.1', '[::1]', 'localhost'].includes(url.hostname));
}

/**
 * The provider's signing key, made once per database and sealed with the encryption key. It signs no token (access
 * tokens are opaque and no ID token is issued); it keeps the library's public development keys out of /oauth/jwks.
 */
async function signingKeys(db: Database, secrets: Secrets): Promise<{ keys: object[] }> {
  const [stored] = await db<{ sealed: string }[]>`SELECT sealed FROM oauth_keys WHERE id = 1`;
  if (stored) return JSON.parse(secrets.open(Buffer.from(stored.sealed, 'base64')).toString('utf8')) as { keys: object[] };
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const jwks = { keys: [{ ...privateKey.export({ format: 'jwk' }), use: 'sig', alg: 'RS256' }] };
  const sealed = secrets.seal(Buffer.from(JSON.stringify(jwks))).toString('base64');
  await db`INSERT INTO oauth_keys (id, sealed) VALUES (1, ${sealed}) ON CONFLICT (id) DO NOTHING`;
  return signingKeys(db, secrets); // whichever process wrote first
}

/** The library's error page, in Postwise's words: no parameter echoed, nothing inline, never framed. */
function renderError(ctx: KoaContextWithOIDC, out: { error: string; error_description?: string }) {
  const escape = (text: string) => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
  ctx.type = 'html';
  ctx.set('content-security-policy', "default-src 'none'; frame-ancestors 'none'");
  ctx.set('x-frame-options', 'DENY');
  ctx.body =
    '<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Postwise: the app could not be connected</title></head>' +
    `<body><h1>The app could not be connected</h1><p>${escape(out.error_description ?? out.error)}</p>` +
    `<p>Error: <code>${escape(out.error)}</code>. Go back to the app and try again; if it keeps happening, tell the app's makers.</p></body></html>`;
}
