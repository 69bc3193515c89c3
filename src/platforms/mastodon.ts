import { deadline } from '../process/deadline.js';
import { createHash } from 'node:crypto';
import { createRestAPIClient, MastoHttpError, MastoTimeoutError, type mastodon as masto } from 'masto';
import * as oauth from 'oauth4webapi';
import { postLanguages } from './languages.js';
import { mastodonDefaultRules, MASTODON_DEFAULT_LIMITS, type InstanceLimits, type MastodonVisibility } from './rules.js';
import {
  noDetail,
  PlatformError,
  TEXT_TOO_LONG,
  type FailureDetail,
  type ImageVersion,
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

/** A schedule's settings on Mastodon, as checked when it was written (checkSettings in ./rules.ts). */
interface MastodonSettings {
  visibility?: MastodonVisibility;
  spoilerText?: string;
  sensitive?: boolean;
  focalPoints?: ({ x: number; y: number } | null)[];
}

/** A reply in a thread (a part, the first comment) is seen by whom its post is: its own visibility, else the thread's. */
const visibilityOf = (post: OutgoingPost) => (post.settings as MastodonSettings).visibility ?? (post.languageSources?.threadSettings as MastodonSettings | null | undefined)?.visibility;
/** The content warning is its post's, counted with its text only: a reply has none (its own text says what it is). */
const spoilerTextOf = (post: OutgoingPost) => (post.replyTo ? undefined : (post.settings as MastodonSettings).spoilerText || undefined);

/** How long a processing image is waited for, polled this often, before the send is tried again later. */
const MEDIA_POLL_MS = 500;

/** How far before its mark a status found by findSent may say it was made (the instance's clock against ours). */
const CLOCK_SKEW_MS = 5 * 60_000;
/** Pages of the account's statuses (40 each, newest first) findSent reads back towards the mark, at most. */
const FIND_PAGES = 5;

/** The key of one send: the same for each attempt of it (its mark), another after a refusal (a new mark). */
export function idempotencyKey(key: PostKey, sentAt = key.createdAt): string {
  return createHash('sha256').update(`${key.scheduleId}:${key.kind}:${sentAt.toISOString()}`).digest('base64url');
}

/** A status's HTML as the words it shows, for comparing with a text where the server cannot give its source. */
function shownWords(text: string): string {
  const entities: Record<string, string> = {
    amp: '&',
    lt: '<',
    gt: '>',
    quot: '"',
    apos: "'",
    nbsp: ' ',
  };
  return text
    .replace(/<[^>]*>/g, '')
    .replace(/&(#x[0-9a-f]+|#\d+|\w+);/gi, (all, name: string) => (name[0] === '#' ? String.fromCodePoint(Number.parseInt(name.slice(name[1] === 'x' ? 2 : 1), name[1] === 'x' ? 16 : 10)) : (entities[name] ?? all)))
    .replace(/\s+/g, '');
}

/**
 * How a call failed, for the engine: a refusal with Mastodon's words is permanent, a refused token marks the channel, a
 * rate limit waits for its reset, and anything without an answer is unknown for a write (the key settles a re-send).
 */
function classify(error: unknown, host: string, write: boolean): PlatformError {
  if (error instanceof PlatformError) return error;
  if (error instanceof MastoHttpError) {
    const response = error.cause instanceof Response ? error.cause : undefined;
    // Mastodon's "character limit of N exceeded", GoToSocial's "status too long": the instance's limit changed.
    const tooLong = error.statusCode >= 400 && error.statusCode < 500 && /character limit|too long/i.test(error.message);
    const detail: FailureDetail = {
      status: error.statusCode,
      platformMessage: error.description ?? error.message,
      platformCode: tooLong ? TEXT_TOO_LONG : null,
      traceId: response?.headers.get('x-request-id') ?? null,
      raw: { error: error.message },
    };
    if (error.statusCode === 401) {
      return new PlatformError('credentials', `${host} no longer accepts this channel's token (revoked, or the app was removed): reconnect the channel`, detail, undefined, {
        tokenStatus: 'REVOKED',
        code: 'ACCESS_TOKEN_REVOKED',
      });
    }
    if (error.statusCode === 403) {
      return new PlatformError('credentials', `${host} refused this channel's account: ${error.message}`, detail, undefined, {
        tokenStatus: 'REVOKED',
        code: 'ACCOUNT_DISABLED',
      });
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

/**
 * The first version of an image the instance takes (type, bytes, pixels), a GIF first (an animation stays one), else
 * the first: the instance then says why not.
 */
function versionFor(image: OutgoingImage, limits: InstanceLimits) {
  const takes = (version: ImageVersion) =>
    limits.imageTypes.includes(version.mimeType) && (limits.imageSizeLimit === null || version.sizeBytes <= limits.imageSizeLimit) && (limits.imageMatrixLimit === null || version.width * version.height <= limits.imageMatrixLimit);
  const taken = image.versions.filter(takes);
  return taken.find((version) => version.mimeType === 'image/gif') ?? taken[0] ?? image.versions[0]!;
}

const publisher: Publisher = {
  /** `POST /oauth/revoke` with this service's app on the instance and the member's token (RFC 7009). */
  async revoke(stored, { signal, timeoutMs, fetch: send }) {
    const credentials = stored as MastodonCredentials;
    const server: oauth.AuthorizationServer = {
      issuer: credentials.apiBase,
      revocation_endpoint: `${credentials.apiBase}/oauth/revoke`,
    };
    try {
      const response = await oauth.revocationRequest(server, { client_id: credentials.clientId }, oauth.ClientSecretPost(credentials.clientSecret), credentials.accessToken, {
        signal: AbortSignal.any([signal, deadline(timeoutMs)]),
        [oauth.allowInsecureRequests]: credentials.apiBase.startsWith('http:'),
        ...(send && {
          [oauth.customFetch]: (url: string, init: RequestInit) => send(url, init),
        }),
      });
      await oauth.processRevocationResponse(response);
    } catch (error) {
      const message = error instanceof oauth.ResponseBodyError ? (error.error_description ?? error.error) : error instanceof Error ? error.message : String(error);
      throw new PlatformError('transient', `${credentials.host} did not revoke the token (${message})`, { ...noDetail, platformMessage: message });
    }
  },

  open(stored, { signal, timeoutMs }): PublishingAccount {
    const credentials = stored as MastodonCredentials;
    const client = createRestAPIClient({
      url: credentials.apiBase,
      accessToken: credentials.accessToken,
      requestInit: { signal },
    });
    // Each request's own deadline, not masto's `timeout` option: that one is an AbortSignal.timeout inside
    // AbortSignal.any, which Node 20 may collect before it fires (see `deadline`), leaving a request unbounded.
    const bounded = (headers?: Record<string, string>) => ({
      requestInit: { signal: deadline(timeoutMs), ...(headers && { headers }) },
    });
    const host = credentials.host;

    const upload = async (image: OutgoingImage, limits: InstanceLimits, focus: { x: number; y: number } | null | undefined): Promise<string> => {
      const version = versionFor(image, limits);
      const file = new File([new Uint8Array(await version.read())], `image.${version.mimeType.split('/')[1]}`, { type: version.mimeType });
      try {
        let media = await client.v2.media.create(
          {
            file,
            ...(image.altText && { description: image.altText }),
            ...(focus && { focus: `${focus.x},${focus.y}` }),
            skipPolling: true,
          },
          bounded(),
        );
        // 202 while processing: waited for here (abortable, bounded by the platform timeout), not by masto's fixed sleep.
        for (let waited = 0; !media.url && waited < timeoutMs; waited += MEDIA_POLL_MS) {
          await new Promise((resolve) => setTimeout(resolve, MEDIA_POLL_MS));
          signal.throwIfAborted();
          media = await client.v1.media.$select(media.id).fetch(undefined, bounded());
        }
        if (!media.url) throw new PlatformError('transient', `${host} is still processing an image`, noDetail);
        return media.id;
      } catch (error) {
        // Uploading publishes nothing: whatever went wrong, trying again later is safe.
        const failure = classify(error, host, false);
        throw failure.kind === 'unknown' ? new PlatformError('transient', failure.message, failure.detail) : failure;
      }
    };

    let accountId: Promise<string> | undefined;
    const ownId = () =>
      (accountId ??= client.v1.accounts.verifyCredentials(undefined, bounded()).then(
        (account) => account.id,
        (error: unknown) => {
          accountId = undefined; // asked again next time
          throw error;
        },
      ));

    /** Whether `status` (a candidate found by findSent) says what `post` says, by its source where the server gives it. */
    const says = async (status: masto.v1.Status, post: OutgoingPost): Promise<boolean> => {
      try {
        return (await client.v1.statuses.$select(status.id).source.fetch(undefined, bounded())).text.trim() === post.text.trim();
      } catch (error) {
        if (!(error instanceof MastoHttpError) || error.statusCode >= 500 || error.statusCode === 429) throw error;
        // A server without the source (it answers 404): the words it shows, mentions without their domain as shown.
        return shownWords(status.content) === shownWords(post.text.replace(/(@[\w.-]+)@[\w.-]+\.[a-z]+/gi, '$1'));
      }
    };

    return {
      /** Tokens do not expire on Mastodon: this checks the token still works (a revoked one marks the channel). */
      async refreshCredentials() {
        try {
          await client.v1.accounts.verifyCredentials(undefined, bounded());
        } catch (error) {
          throw classify(error, host, false);
        }
      },

      async publish(post: OutgoingPost): Promise<PublishedPost> {
        const settings = post.settings as MastodonSettings;
        const mediaIds: string[] = [];
        for (const [index, image] of (post.images ?? []).entries()) {
          mediaIds.push(await upload(image, post.limits ?? MASTODON_DEFAULT_LIMITS, settings.focalPoints?.[index]));
        }
        // Mastodon takes one ISO 639 language: the primary subtag of the post's first (as Bluesky's langs are chosen).
        const language = (await postLanguages(post))?.[0]?.split('-')[0];
        try {
          const status = await client.v1.statuses.create(
            {
              status: post.text,
              ...(mediaIds.length > 0 && { mediaIds }),
              ...(post.replyTo && { inReplyToId: post.replyTo.parent.id }),
              ...(visibilityOf(post) && { visibility: visibilityOf(post) }),
              ...(spoilerTextOf(post) && { spoilerText: spoilerTextOf(post) }),
              ...(settings.sensitive !== undefined && {
                sensitive: settings.sensitive,
              }),
              ...(language && { language }),
            },
            bounded({
              'Idempotency-Key': idempotencyKey(post.key, post.sentAt),
            }),
          );
          return {
            id: status.id,
            url: status.url ?? status.uri,
            ref: status.id,
          };
        } catch (error) {
          throw classify(error, host, true);
        }
      },

      /**
       * The status a lost send made: the account's statuses back to the mark (less the clocks' skew, FIND_PAGES pages at
       * most), those replying where it replies with its content warning and number of images, whose text is the post's
       * (the oldest, if several: one of them is this send's). Null when none: the engine sends it again, under the same
       * key, which Mastodon answers with a status made within the hour.
       */
      async findSent(post) {
        const since = post.sentAt.getTime() - CLOCK_SKEW_MS;
        const parent = post.replyTo?.parent.id ?? null;
        try {
          const id = await ownId();
          let found: masto.v1.Status | null = null;
          let maxId: string | undefined;
          for (let page = 0; page < FIND_PAGES; page++) {
            const statuses = await client.v1.accounts.$select(id).statuses.list({ limit: 40, excludeReblogs: true, ...(maxId && { maxId }) }, bounded());
            for (const status of statuses) {
              if (Date.parse(status.createdAt) < since)
                return (
                  found && {
                    id: found.id,
                    url: found.url ?? found.uri,
                    ref: found.id,
                  }
                );
              const alike = (status.inReplyToId ?? null) === parent && status.spoilerText === (spoilerTextOf(post) ?? '').trim() && status.mediaAttachments.length === (post.images?.length ?? 0);
              if (alike && (await says(status, post))) found = status;
            }
            if (statuses.length < 40) break;
            maxId = statuses.at(-1)!.id;
          }
          return (
            found && {
              id: found.id,
              url: found.url ?? found.uri,
              ref: found.id,
            }
          );
        } catch (error) {
          // Reading wrote nothing: the mark stays, and the next attempt asks again.
          throw classify(error, host, false);
        }
      },

      async delete(postId) {
        try {
          await client.v1.statuses.$select(postId).remove(undefined, bounded());
        } catch (error) {
          if (error instanceof MastoHttpError && error.statusCode === 404) return; // gone already
          throw classify(error, host, false);
        }
      },
    };
  },
};

export const mastodon: PlatformRules = { ...mastodonDefaultRules, publisher };
