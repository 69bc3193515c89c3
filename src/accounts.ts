import type { Sql } from './db/index.js';
import { platforms, PlatformError, type Platform, type PublishingAccount } from './platforms/index.js';
import type { AppContext } from './registry/context.js';
import { enqueueRefresh } from './worker/jobs.js';

const noDetail = { status: null, platformMessage: null, platformCode: null, traceId: null, raw: null };

/**
 * The connected account of an integration, ready to act, its renewed credentials stored back sealed; or a
 * PlatformError saying why it cannot act (not connected, revoked, expired, unreadable credentials), without a platform call.
 */
export async function openAccount(app: AppContext, integrationId: string, signal: AbortSignal): Promise<{ account: PublishingAccount; label: string }> {
  const [integration] = await app.db<{ platform: Platform; tokenStatus: string; connectStatus: string; credentials: Buffer | null }[]>`
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
  let credentials: unknown;
  try {
    credentials = JSON.parse(app.secrets.open(integration!.credentials).toString('utf8'));
  } catch {
    // Sealed under another ENCRYPTION_KEY (or altered): only connecting again can mend it.
    throw new PlatformError('credentials', 'This channel\'s stored credentials cannot be read with this ENCRYPTION_KEY: reconnect the channel, then retry', noDetail, undefined, {
      tokenStatus: 'REVOKED',
      code: 'CREDENTIALS_UNREADABLE',
    });
  }
  const account = publisher.open(credentials, {
    signal,
    config: app.config,
    fetch: app.platformFetch,
    saveCredentials: async (renewed, expiresAt) => {
      const sealed = app.secrets.seal(Buffer.from(JSON.stringify(renewed)));
      await app.db.begin(async (tx) => {
        if (expiresAt === undefined) {
          await tx`UPDATE integrations SET credentials = ${sealed}, updated_at = now() WHERE id = ${integrationId}`;
          return;
        }
        // A new token: the channel is healthy again, and its next refresh is queued.
        const [row] = await tx<{ autoRefreshUnavailable: boolean }[]>`
          UPDATE integrations SET credentials = ${sealed}, expires_at = ${expiresAt}, token_status = 'VALID', connection_error_code = NULL,
            connection_error = NULL, last_validated_at = now(), updated_at = now()
          WHERE id = ${integrationId} RETURNING auto_refresh_unavailable`;
        if (expiresAt && row && !row.autoRefreshUnavailable) await enqueueRefresh(tx, integrationId, expiresAt);
      });
    },
  });
  return { account, label };
}

/** What a `credentials` failure leaves on the channel: its tokenStatus, connectionErrorCode and connectionError. */
export async function markConnectionFailed(db: Sql, integrationId: string, error: PlatformError): Promise<void> {
  const connection = error.connection ?? { tokenStatus: 'REVOKED', code: 'REFRESH_TOKEN_REVOKED' };
  await db`
    UPDATE integrations SET token_status = ${connection.tokenStatus}, connection_error_code = ${connection.code},
      connection_error = ${error.message}, updated_at = now()
    WHERE id = ${integrationId}`;
}

/**
 * Refreshes the channel's token now where it can be (storing the new one and queuing the next refresh), or checks it
 * with the platform where it cannot, and records the outcome: lastValidatedAt when good; tokenStatus,
 * connectionErrorCode and connectionError when the platform no longer accepts it. Throws the PlatformError.
 */
export async function renewCredentials(app: AppContext, integrationId: string, signal: AbortSignal): Promise<void> {
  const { account } = await openAccount(app, integrationId, signal);
  try {
    await account.renew?.();
  } catch (error) {
    if (error instanceof PlatformError && error.kind === 'credentials') await markConnectionFailed(app.db, integrationId, error);
    throw error;
  }
  await app.db`
    UPDATE integrations SET last_validated_at = now(), token_status = 'VALID', connection_error_code = NULL, connection_error = NULL, updated_at = now()
    WHERE id = ${integrationId}`;
}
