import { platforms, PlatformError, type Platform, type PublishingAccount } from './platforms/index.js';
import type { AppContext } from './registry/context.js';

const noDetail = { status: null, platformMessage: null, platformCode: null, traceId: null, raw: null };

/**
 * The connected account of an integration, ready to act, its renewed sessions stored back sealed; or a
 * PlatformError saying why it cannot act (not connected, revoked, unreadable credentials), without a platform call.
 */
export async function openAccount(app: AppContext, integrationId: string, signal: AbortSignal): Promise<{ account: PublishingAccount; label: string }> {
  const [integration] = await app.db<{ platform: Platform; tokenStatus: string; credentials: Buffer | null }[]>`
    SELECT platform, token_status, credentials FROM integrations WHERE id = ${integrationId}`;
  const { publisher, label } = platforms[integration!.platform];
  if (!publisher) throw new PlatformError('permanent', `${label} cannot be published to yet`, noDetail);
  if (!integration!.credentials || integration!.tokenStatus === 'MISSING') {
    throw new PlatformError('permanent', 'This channel is not connected: connect it (POST /integrations/connect), then retry', noDetail);
  }
  if (integration!.tokenStatus === 'REVOKED') {
    throw new PlatformError('credentials', `${label} no longer accepts this channel's credentials: reconnect the channel, then retry`, noDetail);
  }
  let credentials: unknown;
  try {
    credentials = JSON.parse(app.secrets.open(integration!.credentials).toString('utf8'));
  } catch {
    // Sealed under another ENCRYPTION_KEY (or altered): only connecting again can mend it.
    throw new PlatformError('credentials', 'This channel\'s stored credentials cannot be read with this ENCRYPTION_KEY: reconnect the channel, then retry', noDetail);
  }
  const account = publisher.open(credentials, {
    signal,
    timeoutMs: app.config.platformTimeoutMs,
    fetch: app.platformFetch,
    saveCredentials: async (renewed) => {
      await app.db`UPDATE integrations SET credentials = ${app.secrets.seal(Buffer.from(JSON.stringify(renewed)))}, updated_at = now()
        WHERE id = ${integrationId}`;
    },
  });
  return { account: refreshingWhenRefused(account), label };
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
    lookUp: again((key) => account.lookUp(key)),
    delete: again((postId) => account.delete(postId)),
  };
}
