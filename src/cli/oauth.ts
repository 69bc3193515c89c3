/**
 * `postwise login --web`: an app sign-in, with the MCP SDK client's OAuth functions (discovery, PKCE, the code's
 * exchange and refresh are theirs), as the command line's own pre-registered public client (`postwise-cli`, a native
 * app on a loopback redirect: RFC 8252), for the server's REST resource `<base>/api/v1` (its tokens are refused by
 * /mcp, and the other way round). Then every command sends `Authorization: Bearer`, renewing the access token when it
 * is about to lapse, or when the server refuses it, under the config file's lock (profiles.ts): the refresh token
 * changes at each use, and one used twice ends the sign-in, so two commands must never both use it.
 */
import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  discoverOAuthServerInfo,
  exchangeAuthorization,
  OAuthError,
  OAuthErrorCode,
  refreshAuthorization,
  startAuthorization,
  type AuthorizationServerMetadata,
  type OAuthTokens,
} from '@modelcontextprotocol/client';
import type { TokenSource } from './client.js';
import { CliFailure, EXIT } from './failure.js';
import { readConfig, withConfigLock, writeConfig, type OAuthSignIn } from './profiles.js';

/** The command line's client, registered in the server's code (src/oauth/provider.ts: CLI_CLIENT_ID). */
export const CLIENT_ID = 'postwise-cli';
/** How long `login --web` waits for the browser, unless --timeout says otherwise: the server's consent lasts as long. */
export const DEFAULT_TIMEOUT_SECONDS = 600;
/** An access token with less than this left is renewed before it is sent, rather than refused on the way. */
const RENEW_BEFORE_MS = 30_000;

/** What the server says of itself for the REST resource: its authorization server, and the scopes to ask for. */
interface ServerInfo {
  /** `<base>/api/v1`, as the resource's own metadata names it (the token's audience, RFC 8707). */
  resource: string;
  authorizationServerUrl: string;
  metadata: AuthorizationServerMetadata;
  scopes: string[];
}

/** `This sign-in was disconnected or has expired`, with the command that signs in again (exit 4). */
export function signedOut(profile: string, detail = ''): CliFailure {
  const command = `postwise login --web${profile === 'default' ? '' : ` --profile ${profile}`}`;
  return new CliFailure('SIGNED_OUT', `This sign-in was disconnected or has expired${detail}; run \`${command}\` again`, EXIT.auth);
}

/** Discovery from the REST resource (RFC 9728, then RFC 8414), through the SDK. */
async function discover(baseUrl: string): Promise<ServerInfo> {
  const serverUrl = `${baseUrl}/api/v1`;
  let info: Awaited<ReturnType<typeof discoverOAuthServerInfo>>;
  try {
    info = await discoverOAuthServerInfo(serverUrl);
  } catch (error) {
    throw failureOf(error, baseUrl, 'OAUTH_UNAVAILABLE', `${baseUrl} could not be asked how to sign in`);
  }
  const { resourceMetadata, authorizationServerMetadata: metadata, authorizationServerUrl } = info;
  if (!resourceMetadata || !metadata) {
    throw new CliFailure(
      'OAUTH_UNAVAILABLE',
      `${baseUrl} does not offer signing in with a browser (a server offers it over HTTPS, or on a loopback address): log in with an API key (postwise login) or a dashboard account (postwise login --email)`,
      EXIT.auth,
    );
  }
  if (resourceMetadata.resource.replace(/\/$/, '') !== serverUrl) {
    throw new CliFailure('OAUTH_UNAVAILABLE', `${baseUrl} names its API ${resourceMetadata.resource}: give that server with --base-url`, EXIT.usage);
  }
  return { resource: resourceMetadata.resource, authorizationServerUrl, metadata, scopes: resourceMetadata.scopes_supported ?? [] };
}

/** What a failed exchange with the server comes to: unreachable (exit 7), or `code` with the server's words. */
function failureOf(error: unknown, baseUrl: string, code: string, what: string): CliFailure {
  if (error instanceof CliFailure) return error;
  // fetch fails with a TypeError whose cause says why (ECONNREFUSED, ENOTFOUND, a TLS failure).
  const cause = (error as { cause?: { code?: string; message?: string } }).cause;
  if (error instanceof TypeError && cause) {
    return new CliFailure('UNREACHABLE', `Could not reach ${baseUrl} (${cause.code ?? cause.message}): is the server running? Set --base-url or POSTWISE_BASE_URL`, EXIT.unreachable);
  }
  const words = error instanceof OAuthError ? `${error.code}: ${error.message}` : error instanceof Error ? error.message : String(error);
  return new CliFailure(code, `${what} (${words})`, EXIT.auth);
}

function signInOf(tokens: OAuthTokens, issuer: string): OAuthSignIn {
  if (tokens.token_type.toLowerCase() !== 'bearer') throw new CliFailure('SIGN_IN_FAILED', `The server issued a ${tokens.token_type} token; this client sends Bearer tokens only`, EXIT.auth);
  return {
    issuer,
    clientId: CLIENT_ID,
    accessToken: tokens.access_token,
    ...(tokens.refresh_token ? { refreshToken: tokens.refresh_token } : {}),
    ...(tokens.expires_in !== undefined ? { expiresAt: new Date(Date.now() + tokens.expires_in * 1000).toISOString() } : {}),
  };
}

export interface BrowserSignInOptions {
  baseUrl: string;
  /** Whether to try opening the page in a browser (it is printed either way). */
  openBrowser: boolean;
  timeoutSeconds: number;
  /** Lines for the person (stderr). */
  note: (line: string) => void;
  trace?: (line: string) => void;
}

/**
 * The sign-in: a one-use callback server on 127.0.0.1 (a port of the system's choosing), the authorization page
 * printed (and opened), the browser's return awaited and its `state` checked, the code exchanged, the browser told.
 */
export async function signInWithBrowser(options: BrowserSignInOptions): Promise<OAuthSignIn> {
  const server = createServer();
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  try {
    const info = await discover(options.baseUrl);
    const redirectUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/callback`;
    const state = randomBytes(24).toString('base64url');
    const clientInformation = { client_id: CLIENT_ID };
    const { authorizationUrl, codeVerifier } = await startAuthorization(info.authorizationServerUrl, {
      metadata: info.metadata,
      clientInformation,
      redirectUrl,
      scope: info.scopes.join(' ') || undefined,
      state,
      resource: info.resource,
    });
    const waited = new Promise<OAuthSignIn>((resolve, reject) => {
      let settled = false;
      const timer = setTimeout(() => {
        settled = true;
        reject(new CliFailure('SIGN_IN_TIMEOUT', `No answer came back from the browser within ${describeSeconds(options.timeoutSeconds)}; run \`postwise login --web\` again`, EXIT.auth));
      }, options.timeoutSeconds * 1000);
      server.on('request', (req: IncomingMessage, res: ServerResponse) => {
        const url = new URL(req.url ?? '/', redirectUrl);
        if (req.method !== 'GET' || url.pathname !== '/callback') return void answer(res, 404, 'Not found.');
        // Only the answer to this sign-in's own request counts (RFC 6749 §10.12): anything else is shown the door.
        if (url.searchParams.get('state') !== state) return void answer(res, 400, 'This is not the answer the postwise command waiting in your terminal expects; it was ignored.');
        if (settled) return void answer(res, 409, 'This sign-in is already over; you may close this tab.');
        settled = true;
        clearTimeout(timer);
        const error = url.searchParams.get('error');
        const code = url.searchParams.get('code');
        if (error || !code) {
          const why = url.searchParams.get('error_description') ?? error ?? 'no code came back';
          void answer(res, 200, `Postwise was not signed in: ${why}. You may close this tab.`).then(() =>
            reject(
              error === 'access_denied'
                ? new CliFailure('ACCESS_DENIED', `The sign-in was denied in the browser (${why})`, EXIT.auth)
                : new CliFailure('SIGN_IN_FAILED', `The server refused the sign-in (${error ?? 'no code'}: ${why})`, EXIT.auth),
            ),
          );
          return;
        }
        options.trace?.('> POST (the token endpoint: the code exchanged, not shown)');
        exchangeAuthorization(info.authorizationServerUrl, {
          metadata: info.metadata,
          clientInformation,
          authorizationCode: code,
          iss: url.searchParams.get('iss') ?? undefined,
          codeVerifier,
          redirectUri: redirectUrl,
          resource: info.resource,
        })
          .then((tokens) => signInOf(tokens, info.metadata.issuer))
          .then(
            async (signIn) => {
              await answer(res, 200, 'Signed in to Postwise; you may close this tab.');
              resolve(signIn);
            },
            async (failure: unknown) => {
              await answer(res, 200, 'Postwise could not finish signing in: the terminal says why. You may close this tab.');
              reject(failureOf(failure, options.baseUrl, 'SIGN_IN_FAILED', 'The server refused to finish the sign-in'));
            },
          );
      });
    });
    // Awaited below, after the page is printed and opened: a timeout meanwhile is not an unhandled rejection.
    waited.catch(() => {});
    options.note(`Open this page to sign in: ${authorizationUrl.href}`);
    if (options.openBrowser) await openInBrowser(authorizationUrl.href, options.trace);
    options.note(`Waiting for the browser (up to ${describeSeconds(options.timeoutSeconds)}; Ctrl-C to give up)…`);
    return await waited;
  } finally {
    server.close();
    server.closeAllConnections();
  }
}

const describeSeconds = (seconds: number) => (seconds % 60 === 0 ? `${seconds / 60} minute${seconds === 60 ? '' : 's'}` : `${seconds} s`);

/** A short plain page for the browser, and the connection closed after it. */
function answer(res: ServerResponse, status: number, text: string): Promise<void> {
  return new Promise((resolve) => {
    res.writeHead(status, {
      'content-type': 'text/plain; charset=utf-8',
      'cache-control': 'no-store',
      'content-security-policy': "default-src 'none'",
      'referrer-policy': 'no-referrer',
      connection: 'close',
    });
    res.end(`${text}\n`, () => resolve());
  });
}

/**
 * Opens the page in the default browser with `open` (release 7, the one patch-package brings too; loaded only here,
 * from node_modules rather than the bundle, since it runs a script of its own folder); where it cannot (no browser,
 * no desktop, over SSH) the printed URL is what there is.
 */
async function openInBrowser(url: string, trace?: (line: string) => void): Promise<void> {
  try {
    const { default: open } = await import('open');
    const child = await open(url);
    child.once('error', (error) => trace?.(`(no browser opened: ${error.message})`));
  } catch (error) {
    trace?.(`(no browser opened: ${error instanceof Error ? error.message : String(error)})`);
  }
}

export interface SignInTokenOptions {
  /** The profile the sign-in is kept in, re-read under the lock. */
  profile: string;
  baseUrl: string;
  signIn: OAuthSignIn;
  /** Just issued (at login): used to its end, not renewed ahead. */
  fresh?: boolean;
  trace?: (line: string) => void;
}

/**
 * The access token of a profile's sign-in, renewed when it is about to lapse or refused. A renewal takes the config
 * file's lock and re-reads the profile: when another command renewed it meanwhile, its token is used as it is;
 * otherwise the refresh token is used, and the rotated pair saved before the lock is let go.
 */
export function signInTokens({ profile, baseUrl, signIn, fresh: issuedNow = false, trace }: SignInTokenOptions): TokenSource {
  let current = signIn;
  // A token this command got (a renewal) is used to its end, not renewed again ahead: a short-lived one would be at once.
  const fresh = new Set<string>(issuedNow ? [signIn.accessToken] : []);
  let renewing: Promise<OAuthSignIn> | undefined;
  const renew = (stale: string) =>
    (renewing ??= withConfigLock(async () => {
      const config = await readConfig();
      const stored = config.profiles[profile]?.oauth;
      if (!stored) throw signedOut(profile, ' (the profile no longer holds it)');
      if (stored.accessToken !== stale && !lapsed(stored, 0)) {
        trace?.('(the access token was renewed by another postwise command; using it)');
        return stored;
      }
      if (!stored.refreshToken) throw signedOut(profile);
      const info = await discover(baseUrl);
      if (info.metadata.issuer !== stored.issuer) throw signedOut(profile, ` (the server's sign-in is now issued by ${info.metadata.issuer}, not ${stored.issuer})`);
      trace?.('> POST (the token endpoint: the access token renewed, not shown)');
      let tokens: OAuthTokens;
      try {
        tokens = await refreshAuthorization(info.authorizationServerUrl, {
          metadata: info.metadata,
          clientInformation: { client_id: stored.clientId },
          refreshToken: stored.refreshToken,
          resource: info.resource,
        });
      } catch (error) {
        // invalid_grant: disconnected in the dashboard, lapsed, or its refresh token used twice (which ends it).
        if (error instanceof OAuthError && error.code === OAuthErrorCode.InvalidGrant) throw signedOut(profile);
        throw failureOf(error, baseUrl, 'REFRESH_FAILED', 'Could not renew the access token of this sign-in');
      }
      const renewed = signInOf(tokens, stored.issuer);
      config.profiles[profile] = { ...config.profiles[profile], oauth: renewed };
      await writeConfig(config);
      return renewed;
    })
      .then((renewed) => (fresh.add(renewed.accessToken), renewed))
      .finally(() => (renewing = undefined)));
  return {
    async token() {
      if (lapsed(current, fresh.has(current.accessToken) ? 0 : RENEW_BEFORE_MS)) current = await renew(current.accessToken);
      return current.accessToken;
    },
    async refresh(rejected) {
      current = await renew(rejected);
      return current.accessToken;
    },
    refused: () => signedOut(profile),
  };
}

/** Whether the access token lapses within `marginMs` (never, as far as is known, without its expiry). */
const lapsed = (signIn: OAuthSignIn, marginMs: number) => signIn.expiresAt !== undefined && Date.parse(signIn.expiresAt) - Date.now() < marginMs;

/**
 * Ends the sign-in on the server (RFC 7009: revoking its refresh token ends the whole connection, its access tokens
 * included). Best effort: answers what happened, in words, and never throws.
 */
export async function revokeSignIn(baseUrl: string, signIn: OAuthSignIn): Promise<string | undefined> {
  try {
    const metadata = (await discover(baseUrl).catch(() => undefined))?.metadata as { revocation_endpoint?: string } | undefined;
    const endpoint = metadata?.revocation_endpoint ?? `${baseUrl}/oauth/revoke`;
    const body = new URLSearchParams({
      token: signIn.refreshToken ?? signIn.accessToken,
      token_type_hint: signIn.refreshToken ? 'refresh_token' : 'access_token',
      client_id: signIn.clientId,
    });
    const response = await fetch(endpoint, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' }, body, signal: AbortSignal.timeout(10_000) });
    await response.arrayBuffer();
    return response.ok ? undefined : `the server answered ${response.status}`;
  } catch (error) {
    const cause = (error as { cause?: { code?: string } }).cause?.code;
    return cause ?? (error instanceof Error ? error.message : String(error));
  }
}
