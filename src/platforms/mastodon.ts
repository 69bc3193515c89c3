import { createHash } from 'node:crypto';
import { createRestAPIClient, MastoHttpError, MastoTimeoutError, type mastodon as masto } from 'masto';
import * as oauth from 'oauth4webapi';
import { postLanguages } from './languages.js';
import { mastodonDefaultRules, MASTODON_DEFAULT_LIMITS } from './rules.js';
import {
  deadline,
  noDetail,
  PlatformError,
  type FailureDetail,
  type OutgoingImage,
  type OutgoingPost,
  type PlatformRules,
  type PostKey,
  type PublishedPost,
  type Publisher,
  type PublishingAccount,
} from './publishing.js';

/**
 * Mastodon (any instance, and Mastodon-compatible servers), through `masto` (its REST client). Connecting is the
 * channels' (src/channels/mastodon-instance.ts: the instance read through the fetch guard, this service's app
 * registered there, the member's consent with PKCE); this file acts as a connected account: statuses (text, content
 * warning, visibility, language, replies for threads and first comments), images, deletion, and revocation.
 *
 * Never twice: each send carries an `Idempotency-Key` made from the schedule's send mark (the same for every attempt
 * of one send), which Mastodon keeps an hour and answers with the status already made. docs/publishing.md#mastodon.
 */

/** What a Mastodon channel stores, sealed: its instance's API, this service's app there, and the member's token. */
export interface MastodonCredentials {
  apiBase: string;
  host: string;
  clientId: string;
  clientSecret: string;
  accessToken: string;
  scope: string;
}

/** The visibilities a status may have (the schedule's `visibility` setting; the account's default when absent). */
export const MASTODON_VISIBILITIES = ['public', 'unlisted', 'private', 'direct'] as const;

/** How long a processing image is waited for, polled this often, before the send is tried again later. */
const MEDIA_POLL_MS = 500;

/** The key of one send: the same for each attempt of it (its mark), another after a refusal (a new mark). */
export function idempotencyKey(key: PostKey): string {
  return createHash('sha256').update(`${key.scheduleId}:${key.kind}:${key.createdAt.toISOString()}`).digest('base64url');
}

/**
 * How a call failed, for the engine: a refusal with Mastodon's words is permanent, a refused token marks the channel, a
 * rate limit waits for its reset, and anything without an answer is unknown for a write (the key settles a re-send).
 */
function classify(error: unknown, host: string, write: boolean): PlatformError {
  if (error instanceof PlatformError) return error;
  if (error instanceof MastoHttpError) {
    const response = error.cause instanceof Response ? error.cause : undefined;
    const detail: FailureDetail = { status: error.statusCode, platformMessage: error.description ?? error.message, platformCode: null, traceId: response?.headers.get('x-request-id') ?? null, raw: { error: error.message } };
    if (error.statusCode === 401) {
      return new PlatformError('credentials', `${host} no longer accepts this channel's token (revoked, or the app was removed): reconnect the channel`, detail, undefined, {
        tokenStatus: 'REVOKED',
        code: 'ACCESS_TOKEN_REVOKED',
      });
    }
    if (error.statusCode === 403) {
      return new PlatformError('credentials', `${host} refused this channel's account: ${error.message}`, detail, undefined, { tokenStatus: 'REVOKED', code: 'ACCOUNT_DISABLED' });
    }
    if (error.statusCode === 429) {
      const reset = Date.parse(response?.headers.get('x-ratelimit-reset') ?? '');
      return new PlatformError('transient', `${host} asks to slow down (rate limited)`, detail, Number.isFinite(reset) ? Math.max(0, reset - Date.now()) : undefined);
    }
    if (error.statusCode === 422 && /not finished processing/i.test(error.message)) return new PlatformError('transient', `${host} is still processing an image`, detail);
    if (error.statusCode >= 500) return new PlatformError(write ? 'unknown' : 'transient', `${host} answered ${error.statusCode}`, detail);
    if (error.statusCode === 404) return new PlatformError('permanent', `${host} no longer has what this refers to (the post it replies to was deleted?): ${error.message}`, detail);
    return new PlatformError('permanent', `Mastodon (${host}) refused it: ${error.message}`, detail);
  }
  // No HTTP answer, or one masto could not read (an HTML error page): unknown for a write, to be looked up or re-sent with its key.
  const message = error instanceof Error ? error.message : String(error);
  const timedOut = error instanceof MastoTimeoutError ? ' in time' : '';
  return new PlatformError(write ? 'unknown' : 'transient', `${host} did not answer${timedOut}`, { ...noDetail, platformMessage: message, raw: { message } });
}

/** The first version of an image the instance takes (type, bytes), else the first: the instance then says why not. */
function versionFor(image: OutgoingImage, limits = MASTODON_DEFAULT_LIMITS) {
  return (
    image.versions.find((version) => limits.imageTypes.includes(version.mimeType) && (limits.imageSizeLimit === null || version.sizeBytes <= limits.imageSizeLimit)) ??
    image.versions[0]!
  );
}

const publisher: Publisher = {
  /** `POST /oauth/revoke` with this service's app on the instance and the member's token (RFC 7009). */
  async revoke(stored, { signal, timeoutMs, fetch: send }) {
    const credentials = stored as MastodonCredentials;
    const server: oauth.AuthorizationServer = { issuer: credentials.apiBase, revocation_endpoint: `${credentials.apiBase}/oauth/revoke` };
    try {
      const response = await oauth.revocationRequest(server, { client_id: credentials.clientId }, oauth.ClientSecretPost(credentials.clientSecret), credentials.accessToken, {
        signal: AbortSignal.any([signal, deadline(timeoutMs)]),
        [oauth.allowInsecureRequests]: credentials.apiBase.startsWith('http:'),
        ...(send && { [oauth.customFetch]: (url: string, init: RequestInit) => send(url, init) }),
      });
      await oauth.processRevocationResponse(response);
    } catch (error) {
      const message = error instanceof oauth.ResponseBodyError ? (error.error_description ?? error.error) : error instanceof Error ? error.message : String(error);
      throw new PlatformError('transient', `${credentials.host} did not revoke the token (${message})`, { ...noDetail, platformMessage: message });
    }
  },

  open(stored, { signal, timeoutMs }): PublishingAccount {
    const credentials = stored as MastodonCredentials;
    const client = createRestAPIClient({ url: credentials.apiBase, accessToken: credentials.accessToken, timeout: timeoutMs, requestInit: { signal } });
    const host = credentials.host;

    const upload = async (image: OutgoingImage): Promise<string> => {
      const version = versionFor(image);
      const file = new File([new Uint8Array(await version.read())], `image.${version.mimeType.split('/')[1]}`, { type: version.mimeType });
      try {
        let media = await client.v2.media.create({ file, ...(image.altText && { description: image.altText }), skipPolling: true });
        // 202 while processing: waited for here (abortable, bounded by the platform timeout), not by masto's fixed sleep.
        for (let waited = 0; !media.url && waited < timeoutMs; waited += MEDIA_POLL_MS) {
          await new Promise((resolve) => setTimeout(resolve, MEDIA_POLL_MS));
          signal.throwIfAborted();
          media = await client.v1.media.$select(media.id).fetch();
        }
        if (!media.url) throw new PlatformError('transient', `${host} is still processing an image`, noDetail);
        return media.id;
      } catch (error) {
        // Uploading publishes nothing: whatever went wrong, trying again later is safe.
        const failure = classify(error, host, false);
        throw failure.kind === 'unknown' ? new PlatformError('transient', failure.message, failure.detail) : failure;
      }
    };

    return {
      /** Tokens do not expire on Mastodon: this checks the token still works (a revoked one marks the channel). */
      async refreshCredentials() {
        try {
          await client.v1.accounts.verifyCredentials();
        } catch (error) {
          throw classify(error, host, false);
        }
      },

      async publish(post: OutgoingPost): Promise<PublishedPost> {
        const mediaIds: string[] = [];
        for (const image of post.images ?? []) mediaIds.push(await upload(image));
        const settings = post.settings as { visibility?: masto.v1.StatusVisibility; spoilerText?: string; sensitive?: boolean };
        // Mastodon takes one ISO 639 language: the primary subtag of the post's first (as Bluesky's langs are chosen).
        const language = (await postLanguages(post))?.[0]?.split('-')[0];
        try {
          const status = await client.v1.statuses.create(
            {
              status: post.text,
              ...(mediaIds.length > 0 && { mediaIds }),
              ...(post.replyTo && { inReplyToId: post.replyTo.parent.id }),
              ...(settings.visibility && { visibility: settings.visibility }),
              ...(settings.spoilerText && { spoilerText: settings.spoilerText }),
              ...(settings.sensitive !== undefined && { sensitive: settings.sensitive }),
              ...(language && { language }),
            },
            { requestInit: { headers: { 'Idempotency-Key': idempotencyKey(post.key) } } },
          );
          return { id: status.id, url: status.url ?? status.uri, ref: status.id };
        } catch (error) {
          throw classify(error, host, true);
        }
      },

      async delete(postId) {
        try {
          await client.v1.statuses.$select(postId).remove();
        } catch (error) {
          if (error instanceof MastoHttpError && error.statusCode === 404) return; // gone already
          throw classify(error, host, false);
        }
      },
    };
  },
};

export const mastodon: PlatformRules = { ...mastodonDefaultRules, publisher };
