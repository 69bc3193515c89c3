import type { Sql } from '../db/index.js';
import { noDetail, platforms, PlatformError, type Platform, type PublishingAccount } from '../platforms/index.js';
import type { AppContext } from '../registry/context.js';
import { enqueueRefresh } from '../worker/queue.js';
import { recordIntegrationEvent } from '../../operations/events/event.js';


/** What opening an account reads of an integration. */
export interface StoredIntegration {
  platform: Platform;
  tokenStatus: string;
  connectStatus: string;
  credentials: Buffer | null;
}

interface Opened {
  sealed: Buffer;
  fetch: typeof fetch | undefined;
  timeoutMs: number;
  account: PublishingAccount;
}

/**
 * Accounts opened under a signal, by integration. Every job of a worker is given its pool's signal, so the jobs of
 * a channel share one client: building @atproto/api's client costs more CPU than a publish to a fast platform, and
 * a shared one keeps its session in memory. An entry serves while the stored credentials are the same bytes (a
 * reconnect, a revocation or a session another process renewed make a new one); a request's own signal (DELETE
 * /schedules/{id}) makes an entry no one else finds.
 */
const openedUnder = new WeakMap<AbortSignal, Map<string, Opened>>();
/** Channels kept open per worker; the oldest opened is dropped past it. */
const MAX_OPEN = 1000;

/**
 * The connected account of an integration, ready to act, its renewed credentials stored back sealed; or a
 * PlatformError saying why it cannot act (not connected, revoked, expired, unreadable credentials), without a platform call.
 */
export async function openAccount(
  app: AppContext,
  integrationId: string,
  signal: AbortSignal,
  /** The integration's row when the caller read it already (the worker's claim does): saves a query per job. */
  row?: StoredIntegration,
): Promise<{ account: PublishingAccount; label: string }> {
  const [integration] = row ? [row] : await app.db<StoredIntegration[]>`
    SELECT platform, token_status, connect_status, credentials FROM integrations WHERE id = ${integrationId}`;
  const { publisher, label } = platforms[integration!.platform];
  if (!publisher) throw new PlatformError('permanent', `${label} cannot be published to yet`, noDetail);
  if (!integration!.credentials || integration!.tokenStatus === 'MISSING') {
    throw new PlatformError('permanent', 'This channel is not connected: connect it (POST /integrations/connect), then retry', noDetail);
  }
  if (integration!.connectStatus === 'PENDING_SELECTION') {
    throw new PlatformError('permanent', 'This channel\'s account is not chosen yet: pick it on the connect page (or with the admin command select-account), then retry', noDetail);
  }
  if (integration!.tokenStatus === 'REVOKED' || integration!.tokenStatus === 'EXPIRED') {
    const state = integration!.tokenStatus === 'REVOKED' ? 'no longer accepts' : 'has expired';
    throw new PlatformError('credentials', `${label} ${state} this channel's credentials: reconnect the channel, then retry`, noDetail, undefined, {
      tokenStatus: integration!.tokenStatus,
      code: integration!.tokenStatus === 'REVOKED' ? 'REFRESH_TOKEN_REVOKED' : 'ACCESS_TOKEN_EXPIRED',
    });
  }
  const sealed = integration!.credentials;
  let opened = openedUnder.get(signal);
  if (!opened) openedUnder.set(signal, (opened = new Map()));
  const cached = opened.get(integrationId);
  if (cached && cached.sealed.equals(sealed) && cached.fetch === app.platformFetch && cached.timeoutMs === app.config.platformTimeoutMs) {
    return { account: cached.account, label };
  }
  let credentials: unknown;
  try {
    credentials = JSON.parse(app.secrets.open(sealed).toString('utf8'));
  } catch {
    // Sealed under another ENCRYPTION_KEY (or altered): only connecting again can mend it.
    throw new PlatformError('credentials', 'This channel\'s stored credentials cannot be read with this ENCRYPTION_KEY: reconnect the channel, then retry', noDetail, undefined, {
      tokenStatus: 'REVOKED',
      code: 'CREDENTIALS_UNREADABLE',
    });
  }
  const entry: Opened = { sealed, fetch: app.platformFetch, timeoutMs: app.config.platformTimeoutMs, account: undefined as never };
  const account = publisher.open(credentials, {
    signal,
    timeoutMs: entry.timeoutMs,
    config: app.config,
    fetch: entry.fetch,
    saveCredentials: async (renewed, expiresAt) => {
      const resealed = app.secrets.seal(Buffer.from(JSON.stringify(renewed)));
      await app.db.begin(async (tx) => {
        if (expiresAt === undefined) {
          await tx`UPDATE integrations SET credentials = ${resealed}, updated_at = now() WHERE id = ${integrationId}`;
          return;
        }
        // A new token: the channel is healthy again, and its next refresh is queued.
        const [row] = await tx<{ autoRefreshUnavailable: boolean }[]>`
          UPDATE integrations SET credentials = ${resealed}, expires_at = ${expiresAt}, token_status = 'VALID', connection_error_code = NULL,
            connection_error = NULL, last_validated_at = now(), updated_at = now()
          WHERE id = ${integrationId} RETURNING auto_refresh_unavailable`;
        if (expiresAt && row && !row.autoRefreshUnavailable) await enqueueRefresh(tx, integrationId, expiresAt);
      });
      entry.sealed = resealed; // what the next job reads: it goes on with this account
    },
  });
  entry.account = refreshingWhenRefused(account);
  opened.delete(integrationId);
  opened.set(integrationId, entry);
  if (opened.size > MAX_OPEN) opened.delete(opened.keys().next().value!);
  return { account: entry.account, label };
}

/**
 * The account whose calls, when the platform refuses its credentials (an expired or revoked session), renew them
 * (refreshCredentials) and are made once more; nothing was written by a refused call, so repeating it is safe. A
 * second refusal, or one of the renewal itself, is the caller's `credentials` failure (the channel is revoked).
 */
function refreshingWhenRefused(account: PublishingAccount): PublishingAccount {
  const again =
    <A extends unknown[], T>(call: (...args: A) => Promise<T>) =>
    async (...args: A): Promise<T> => {
      try {
        return await call(...args);
      } catch (error) {
        if (!(error instanceof PlatformError) || error.kind !== 'credentials') throw error;
        await account.refreshCredentials();
        return call(...args);
      }
    };
  return {
    refreshCredentials: () => account.refreshCredentials(),
    publish: again((post) => account.publish(post)),
    // Absent where the platform cannot be asked (see PublishingAccount.lookUp, findSent): the engine reads their absence.
    ...(account.lookUp && { lookUp: again(account.lookUp.bind(account)) }),
    ...(account.findSent && { findSent: again(account.findSent.bind(account)) }),
    delete: again((postId) => account.delete(postId)),
  };
}

/**
 * What a `credentials` failure leaves on the channel: its tokenStatus, connectionErrorCode and connectionError, and the
 * integration.error event; `tx` is a transaction, so that the two go together.
 */
export async function markConnectionFailed(tx: Sql, integrationId: string, error: PlatformError): Promise<void> {
  const connection = error.connection ?? { tokenStatus: 'REVOKED', code: 'REFRESH_TOKEN_REVOKED' };
  // A channel already REVOKED or EXPIRED is refused before any call (openAccount): its own error, which says why, stays.
  const [marked] = await tx<{ organizationId: string }[]>`
    UPDATE integrations SET token_status = ${connection.tokenStatus}, connection_error_code = ${connection.code},
      connection_error = ${error.message}, updated_at = now()
    WHERE id = ${integrationId} AND token_status NOT IN ('REVOKED', 'EXPIRED')
    RETURNING organization_id`;
  if (marked) await recordIntegrationEvent(tx, marked.organizationId, 'integration.error', integrationId);
}

/**
 * Refreshes the channel's token now where it can be (storing the new one and queuing the next refresh), or checks it
 * with the platform where it cannot, and records the outcome: lastValidatedAt when good; tokenStatus,
 * connectionErrorCode and connectionError when the platform no longer accepts it. Throws the PlatformError.
 */
export async function renewCredentials(app: AppContext, integrationId: string, signal: AbortSignal): Promise<void> {
  const { account } = await openAccount(app, integrationId, signal);
  try {
    await account.refreshCredentials();
  } catch (error) {
    if (error instanceof PlatformError && error.kind === 'credentials') await app.db.begin((tx) => markConnectionFailed(tx, integrationId, error));
    throw error;
  }
  await app.db`
    UPDATE integrations SET last_validated_at = now(), token_status = 'VALID', connection_error_code = NULL, connection_error = NULL, updated_at = now()
    WHERE id = ${integrationId}`;
}

/** Credentials this service has just erased from an integration, as they were stored. */
export interface ErasedCredentials {
  integrationId: string;
  platform: Platform;
  credentials: Buffer | null;
}

/**
 * Revokes at the platform the tokens of credentials just erased, best effort: the outcome is logged (never a token),
 * nothing is thrown, and the platform gets PLATFORM_TIMEOUT_MS at most. Call it once the transaction that erased them
 * has committed, so that a slow or refusing platform can neither delay nor undo forgetting them.
 */
export async function revokeErased(app: AppContext, erased: ErasedCredentials, signal: AbortSignal = new AbortController().signal): Promise<void> {
  const { integrationId, platform, credentials } = erased;
  const publisher = platforms[platform].publisher;
  if (!credentials || !publisher?.revoke) return;
  let opened: unknown;
  try {
    opened = JSON.parse(app.secrets.open(credentials).toString('utf8'));
  } catch {
    app.logger.warn('erased credentials could not be revoked: they cannot be read with this ENCRYPTION_KEY', { integrationId, platform });
    return;
  }
  try {
    await publisher.revoke(opened, { signal, timeoutMs: app.config.platformTimeoutMs, config: app.config, fetch: app.platformFetch });
    app.logger.info('erased credentials revoked at the platform', { integrationId, platform });
  } catch (error) {
    const detail = error instanceof PlatformError ? { status: error.detail.status, platformCode: error.detail.platformCode, platformMessage: error.detail.platformMessage } : {};
    app.logger.warn('erased credentials could not be revoked at the platform; they stay valid there until they expire', {
      integrationId,
      platform,
      reason: error instanceof Error ? error.message : String(error),
      ...detail,
    });
  }
}
