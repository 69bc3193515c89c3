import { randomUUID } from 'node:crypto';
import type { Sql } from '../db/index.js';
import { platforms, PlatformError, type AccountChoice, type Platform } from '../platforms/index.js';
import type { AppContext } from '../registry/context.js';
import { enqueueRefresh } from '../worker/queue.js';
import { recordIntegrationEvent } from '../../operations/events/event.js';
import { PENDING_SELECTION_TTL_HOURS } from '../../operations/integrations/integration.js';
import { authorizationUrl, completeConsent, instanceApp, instanceHost, learnInstance } from './mastodon-instance.js';

/**
 * Connecting an account: the link a user follows (`POST /integrations/connect`), the state it carries, and the
 * integration a successful connect creates or reconnects, for both kinds of platform: those checked through this
 * service's own form (Bluesky: handle and app password) and those connected through OAuth (LinkedIn: the platform's
 * consent page, then the callback, then, when the member administers pages, this service's account picker). The pages
 * themselves are src/http/connect-pages.ts.
 */

/** How long a connect link works. */
export const STATE_TTL_MS = 15 * 60_000;
/** How long the account picker shown after an OAuth callback works. */
export const SELECTION_TTL_MS = 60 * 60_000;

export interface ConnectState {
  nonce: string;
  workspaceId: string;
  userId: string;
  platform: Platform;
  /** Mastodon: the instance the member named, once named (the consent is on that server). */
  instance?: string;
  expiresAt: Date;
}

export type Refused = { refused: string };

const USED: Refused = { refused: 'This connect link has been used already. Ask for a new one.' };

/** `<payload>.<HMAC>`: signed with a key derived from the encryption key; `k` says what the token is for. */
function signToken(app: AppContext, data: Record<string, unknown>): string {
  const payload = Buffer.from(JSON.stringify(data)).toString('base64url');
  return `${payload}.${app.secrets.sign(payload)}`;
}

function readToken<T extends { k: string; e: number }>(app: AppContext, token: unknown, kind: string): T | undefined {
  if (typeof token !== 'string' || token.length > 1000) return undefined;
  const [payload, signature] = token.split('.');
  if (!payload || !signature || !app.secrets.verify(payload, signature)) return undefined;
  try {
    const parsed = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as T;
    return parsed.k === kind ? parsed : undefined;
  } catch {
    return undefined;
  }
}

/** Where an OAuth platform sends the member back: outside /api/v1, as the platform's app registration names it. */
export const callbackUrl = (app: AppContext, platform: Platform) => `${app.publicUrl}/oauth/${platform.toLowerCase()}/callback`;

/** Why `platform` cannot be connected on this server now, or null. */
export function connectUnavailable(app: AppContext, platform: Platform): string | null {
  const publisher = platforms[platform].publisher;
  if (!publisher) return `${platforms[platform].label} cannot be connected yet`;
  return publisher.oauth?.unavailable(app.config) ?? null;
}

/**
 * A new link to connect `platform`: this service's connect page (form platforms), or the platform's consent page
 * (OAuth platforms). Its state is signed (proving this service made it), expires, and its nonce's row makes it single-use.
 */
export async function createConnectLink(
  app: AppContext,
  member: { workspaceId: string; userId: string },
  platform: Platform,
  input: { instance?: string } = {},
): Promise<string | Refused> {
  const nonce = randomUUID();
  const expiresAt = new Date(Date.now() + STATE_TTL_MS);
  // Mastodon's server is checked before anything is kept: a link to a server that is not one is no link.
  const instance = platform === 'MASTODON' && input.instance !== undefined ? instanceHost(input.instance) : undefined;
  if (typeof instance === 'object') return instance;
  await app.db`
    INSERT INTO connect_states (nonce, organization_id, user_id, platform, expires_at)
    VALUES (${nonce}, ${member.workspaceId}, ${member.userId}, ${platform}, ${expiresAt})`;
  const state = { nonce, workspaceId: member.workspaceId, userId: member.userId, platform, expiresAt };
  if (instance) return mastodonConsentUrl(app, state, instance, AbortSignal.timeout(60_000));
  const token = signToken(app, { k: 'state', n: nonce, w: member.workspaceId, u: member.userId, p: platform, e: expiresAt.getTime() });
  const oauth = platforms[platform].publisher?.oauth;
  if (oauth) return oauth.authorizationUrl(app.config, { redirectUri: callbackUrl(app, platform), state: token });
  return `${app.publicUrl}/connect/${platform.toLowerCase()}?state=${encodeURIComponent(token)}`;
}

/**
 * The consent page on the member's Mastodon server for a connect link (its nonce, for its workspace and member): the
 * server read and this service's app there registered (both through the fetch guard), the state then naming the server,
 * so the callback knows where the code comes from. Or why that server cannot be connected.
 */
export async function mastodonConsentUrl(
  app: AppContext,
  state: { nonce: string; workspaceId: string; userId: string; expiresAt: Date },
  host: string,
  signal: AbortSignal,
): Promise<string | Refused> {
  const instance = await learnInstance(app, host, signal);
  if ('refused' in instance) return instance;
  const redirectUri = callbackUrl(app, 'MASTODON');
  const client = await instanceApp(app, instance, redirectUri, signal);
  if ('refused' in client) return client;
  const token = signToken(app, { k: 'state', n: state.nonce, w: state.workspaceId, u: state.userId, p: 'MASTODON', e: state.expiresAt.getTime(), i: host });
  return authorizationUrl(app, instance, client, { redirectUri, state: token, nonce: state.nonce });
}

/** The state, when it is this service's, unexpired and unused; otherwise why not, for the page. */
export async function readState(app: AppContext, state: unknown, platform: Platform): Promise<ConnectState | Refused> {
  const refused = { refused: 'This connect link is not valid. Ask for a new one (POST /integrations/connect).' };
  const parsed = readToken<{ k: string; n: string; w: string; u: string; p: Platform; e: number; i?: string }>(app, state, 'state');
  if (!parsed || parsed.p !== platform) return refused;
  if (parsed.e <= Date.now()) return { refused: 'This connect link has expired (links work for 15 minutes). Ask for a new one.' };
  const [row] = await app.db<{ usedAt: Date | null; member: boolean }[]>`
    SELECT used_at, EXISTS (SELECT 1 FROM memberships m WHERE m.organization_id = c.organization_id AND m.user_id = c.user_id) AS member
    FROM connect_states c WHERE nonce = ${parsed.n} AND organization_id = ${parsed.w} AND user_id = ${parsed.u}`;
  if (!row) return refused;
  if (row.usedAt) return USED;
  // Bound to the user as a member of the workspace: a user removed since the link was made connects nothing there.
  if (!row.member) return { refused: 'Whoever asked for this connect link is no longer a member of the workspace. Nothing was connected.' };
  return { nonce: parsed.n, workspaceId: parsed.w, userId: parsed.u, platform: parsed.p, ...(parsed.i && { instance: parsed.i }), expiresAt: new Date(parsed.e) };
}

/**
 * Uses up a state's nonce: a replay, or a second tab, connects nothing. A form platform's in the transaction that connects
 * (a mistyped password may be corrected on the same page); an OAuth platform's at its callback's start.
 */
async function useState(tx: Sql, nonce: string | undefined): Promise<boolean> {
  if (!nonce) return true;
  const [used] = await tx`UPDATE connect_states SET used_at = now() WHERE nonce = ${nonce} AND used_at IS NULL RETURNING nonce`;
  return Boolean(used);
}

interface Connected {
  workspaceId: string;
  platform: Platform;
  accountId: string;
  name: string;
  image: string | null;
  credentials: object;
  expiresAt: Date | null;
  refreshable: boolean;
  /** `@user@domain` on Mastodon, `@user` on Threads. */
  handle?: string;
  /** Mastodon: the instance its limits come from. */
  instanceHost?: string;
}

/**
 * Creates the integration ACTIVE with tokenStatus VALID, or reconnects the workspace's integration of the same account
 * (its schedules stay); queues the token's refresh where there is one.
 */
async function saveConnection(app: AppContext, tx: Sql, c: Connected): Promise<string> {
  const sealed = app.secrets.seal(Buffer.from(JSON.stringify(c.credentials)));
  const [row] = await tx<{ id: string }[]>`
    INSERT INTO integrations (organization_id, platform, name, image, account_id, credentials, token_status, connect_status, last_validated_at,
      expires_at, auto_refresh_unavailable, handle, instance_host)
    VALUES (${c.workspaceId}, ${c.platform}, ${c.name}, ${c.image}, ${c.accountId}, ${sealed}, 'VALID', 'ACTIVE', now(), ${c.expiresAt},
      ${c.expiresAt !== null && !c.refreshable}, ${c.handle ?? null}, ${c.instanceHost ?? null})
    ON CONFLICT (organization_id, platform, account_id) DO UPDATE SET
      name = EXCLUDED.name, image = EXCLUDED.image, credentials = EXCLUDED.credentials, token_status = 'VALID', connect_status = 'ACTIVE',
      handle = EXCLUDED.handle, instance_host = EXCLUDED.instance_host,
      connection_error_code = NULL, connection_error = NULL, last_validated_at = now(), expires_at = EXCLUDED.expires_at,
      auto_refresh_unavailable = EXCLUDED.auto_refresh_unavailable, updated_at = now()
    RETURNING id`;
  if (c.expiresAt && c.refreshable) await enqueueRefresh(tx, row!.id, c.expiresAt);
  await recordIntegrationEvent(tx, c.workspaceId, 'integration.connected', row!.id);
  return row!.id;
}

export interface ConnectRequest {
  workspaceId: string;
  platform: Platform;
  identifier: string;
  password: string;
  serviceUrl: string;
  /** From a connect page: used up in the transaction that connects, so a replay connects nothing. */
  nonce?: string;
}

export type ConnectResult = { integrationId: string } | Refused;

/**
 * A form platform (Bluesky): checks the credentials against the platform, then creates or reconnects the integration.
 * Wrong credentials create nothing.
 */
export async function connectAccount(app: AppContext, request: ConnectRequest, signal: AbortSignal): Promise<ConnectResult> {
  const publisher = platforms[request.platform].publisher;
  if (!publisher?.connect) return { refused: `${platforms[request.platform].label} cannot be connected with a password` };
  let connection;
  try {
    connection = await publisher.connect(
      { identifier: request.identifier, password: request.password, serviceUrl: request.serviceUrl },
      { signal, timeoutMs: app.config.platformTimeoutMs },
    );
  } catch (error) {
    if (!(error instanceof PlatformError)) throw error;
    if (error.kind === 'credentials') return { refused: 'That handle and app password were not accepted. Check them and try again.' };
    return { refused: `${platforms[request.platform].label} could not check them now (${error.message}). Try again in a moment.` };
  }
  return app.db.begin(async (tx: Sql) => {
    if (!(await useState(tx, request.nonce))) return USED;
    const integrationId = await saveConnection(app, tx, {
      workspaceId: request.workspaceId,
      platform: request.platform,
      accountId: connection.accountId,
      name: connection.name,
      image: null,
      credentials: connection.credentials,
      expiresAt: null,
      refreshable: false,
    });
    return { integrationId };
  });
}

export type OAuthResult =
  | { integrationId: string; name: string }
  | { integrationId: string; pending: { choices: AccountChoice[]; selection: string } }
  | Refused;

/**
 * An OAuth platform's callback (`url` as the browser requested it): checks the state, reads the platform's answer
 * (a denial, or a code to exchange), and creates the integration: ACTIVE when the member can only post as itself,
 * PENDING_SELECTION with the choices to show otherwise. Anything refused creates nothing.
 */
export async function completeOAuth(app: AppContext, platform: Platform, url: URL, signal: AbortSignal): Promise<OAuthResult> {
  const state = await readState(app, url.searchParams.get('state'), platform);
  if ('refused' in state) return state;
  // Used up by its first callback, whatever LinkedIn answered there (a code, a denial): a replay, even while the first is
  // still exchanging its code, or after a denied consent, connects nothing. The page says to ask for a new link.
  if (!(await useState(app.db, state.nonce))) return USED;
  const oauth = platforms[platform].publisher!.oauth!;
  let connection;
  try {
    connection = await oauth.complete(app.config, { url, state: url.searchParams.get('state')!, redirectUri: callbackUrl(app, platform) }, { signal, fetch: app.platformFetch });
  } catch (error) {
    if (!(error instanceof PlatformError)) throw error;
    app.logger.warn('connect callback refused', { platform, reason: error.message, code: error.detail.platformCode });
    if (error.detail.platformCode && /cancel|denied/i.test(error.detail.platformCode)) return { refused: error.message };
    return { refused: `${platforms[platform].label} could not be connected: ${error.message}. Nothing was connected; ask for a new link to try again.` };
  }
  const { choices, credentials, expiresAt, refreshable } = connection;
  return app.db.begin(async (tx: Sql): Promise<OAuthResult> => {
    if (choices.length === 1) {
      const [only] = choices;
      const integrationId = await saveConnection(app, tx, { workspaceId: state.workspaceId, platform, ...only!, credentials: { ...credentials, account: only!.accountId }, expiresAt, refreshable });
      return { integrationId, name: only!.name };
    }
    // No account yet (account_id NULL never conflicts): picking one makes it ACTIVE, or reconnects that account's channel.
    const sealed = app.secrets.seal(Buffer.from(JSON.stringify({ ...credentials, choices })));
    const [row] = await tx<{ id: string }[]>`
      INSERT INTO integrations (organization_id, platform, name, image, credentials, token_status, connect_status, last_validated_at, expires_at, auto_refresh_unavailable)
      VALUES (${state.workspaceId}, ${platform}, ${choices[0]!.name}, ${choices[0]!.image}, ${sealed}, 'VALID', 'PENDING_SELECTION', now(), ${expiresAt},
        ${expiresAt !== null && !refreshable})
      RETURNING id`;
    const selection = signToken(app, { k: 'select', i: row!.id, w: state.workspaceId, e: Date.now() + SELECTION_TTL_MS });
    return { integrationId: row!.id, pending: { choices, selection } };
  });
}

/**
 * Mastodon's callback: the state (naming the server), used up at once as for every OAuth platform, the consent's code
 * exchanged on that server and the account read; the channel created, or the same account's reconnected.
 */
export async function completeMastodon(app: AppContext, url: URL, signal: AbortSignal): Promise<{ integrationId: string; name: string } | Refused> {
  const state = await readState(app, url.searchParams.get('state'), 'MASTODON');
  if ('refused' in state) return state;
  if (!state.instance) return { refused: 'This connect link names no server. Ask for a new one.' };
  if (!(await useState(app.db, state.nonce))) return USED;
  const account = await completeConsent(app, { host: state.instance, nonce: state.nonce, url, state: url.searchParams.get('state')!, redirectUri: callbackUrl(app, 'MASTODON') }, signal);
  if ('refused' in account) return account;
  const integrationId = await app.db.begin((tx: Sql) =>
    saveConnection(app, tx, {
      workspaceId: state.workspaceId,
      platform: 'MASTODON',
      accountId: account.accountId,
      name: account.name,
      image: account.image,
      credentials: account.credentials,
      expiresAt: null,
      refreshable: false,
      handle: account.handle,
      instanceHost: state.instance!,
    }),
  );
  return { integrationId, name: `${account.name} (${account.handle})` };
}

/** The integration an account picker form is for, when its signed token is valid and unexpired. */
export function readSelection(app: AppContext, token: unknown): { integrationId: string; workspaceId: string } | Refused {
  const parsed = readToken<{ k: string; i: string; w: string; e: number }>(app, token, 'select');
  if (!parsed) return { refused: 'This account picker is not valid. Connect again (POST /integrations/connect).' };
  if (parsed.e <= Date.now()) return { refused: 'This account picker has expired. Connect again (POST /integrations/connect).' };
  return { integrationId: parsed.i, workspaceId: parsed.w };
}

export type SelectResult = { integrationId: string; name: string } | { refused: string; code: 'NOT_FOUND' | 'INVALID_STATE' | 'VALIDATION_ERROR' };

/**
 * Picks the account a PENDING_SELECTION integration posts as (one of the choices stored at connect): it becomes ACTIVE,
 * or, when the workspace already has a channel for that account, that channel is reconnected and this one removed.
 */
export async function selectAccount(app: AppContext, workspaceId: string, integrationId: string, accountId: string): Promise<SelectResult> {
  return app.db.begin(async (tx: Sql): Promise<SelectResult> => {
    const [row] = await tx<{ platform: Platform; connectStatus: string; credentials: Buffer | null; expiresAt: Date | null; autoRefreshUnavailable: boolean }[]>`
      SELECT platform, connect_status, credentials, expires_at, auto_refresh_unavailable FROM integrations
      WHERE id = ${integrationId} AND organization_id = ${workspaceId} FOR UPDATE`;
    if (!row) return { refused: 'No such integration', code: 'NOT_FOUND' };
    if (row.connectStatus !== 'PENDING_SELECTION') {
      return { refused: `This integration is ${row.connectStatus}: its account was chosen already`, code: 'INVALID_STATE' };
    }
    if (!row.credentials) {
      const why = `disconnected, or its account was not picked within ${PENDING_SELECTION_TTL_HOURS} hours`;
      return { refused: `This integration holds no connection to pick an account from (${why}): connect it again (POST /integrations/connect)`, code: 'INVALID_STATE' };
    }
    const { choices = [], ...credentials } = JSON.parse(app.secrets.open(row.credentials).toString('utf8')) as { choices?: AccountChoice[] };
    const choice = choices.find((c) => c.accountId === accountId);
    if (!choice) return { refused: `account: ${accountId} is not one of ${choices.map((c) => c.accountId).join(', ')}`, code: 'VALIDATION_ERROR' };
    // The upsert below then updates this row in place, or the workspace's channel of that account (this row removed).
    const [existing] = await tx`
      SELECT id FROM integrations WHERE organization_id = ${workspaceId} AND platform = ${row.platform} AND account_id = ${accountId}`;
    if (existing) await tx`DELETE FROM integrations WHERE id = ${integrationId}`;
    else await tx`UPDATE integrations SET account_id = ${accountId} WHERE id = ${integrationId}`;
    const id = await saveConnection(app, tx, {
      workspaceId,
      platform: row.platform,
      ...choice,
      credentials: { ...credentials, account: choice.accountId },
      expiresAt: row.expiresAt,
      refreshable: row.expiresAt !== null && !row.autoRefreshUnavailable,
    });
    return { integrationId: id, name: choice.name };
  });
}
