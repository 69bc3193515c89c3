import { deadline } from '../process/deadline.js';
import { createHash } from 'node:crypto';
import type { AtpSessionData, CredentialSession, XRPCError } from '@atproto/api';
import { TID } from '@atproto/common-web';
import { postLanguages } from './languages.js';
import { BLUESKY_MAX_IMAGE_BYTES, blueskyRules } from './rules.js';
import {
  noDetail,
  PlatformError,
  type Connection,
  type OutgoingImage,
  type PostKey,
  type PlatformRules,
  type PublishedPost,
  type Publisher,
  type PublishingAccount,
} from './publishing.js';

const POST = 'app.bsky.feed.post';
const MENTION = 'app.bsky.richtext.facet#mention';
// app.bsky.embed.images: each blob at most 1,000,000 bytes (the rules, shared with the composer, are in ./rules.ts).
export const MAX_IMAGE_BYTES = BLUESKY_MAX_IMAGE_BYTES;

/**
 * @atproto/api takes about a second to load: it is loaded on first use, so the processes that never talk to
 * Bluesky (the admin command's other commands, an API without connect requests) start as fast as before.
 */
const importAtproto = () => import('@atproto/api');
let atproto: ReturnType<typeof importAtproto> | undefined;
const loadAtproto = () => (atproto ??= importAtproto());

/** An error answered by (or on the way to) an XRPC service; recognised by shape, as its class loads lazily. */
function isXrpcError(error: unknown): error is XRPCError {
  return error instanceof Error && typeof (error as XRPCError).status === 'number' && typeof (error as XRPCError).error === 'string';
}

/** `at://did/collection/rkey` → its parts. */
function parseAtUri(uri: string): { repo: string; rkey: string } {
  const [repo = '', , rkey = ''] = uri.replace(/^at:\/\//, '').split('/');
  return { repo, rkey };
}

export { countGraphemes } from './rules.js';

/** What is stored, sealed, for a connected account. */
interface BlueskyCredentials {
  serviceUrl: string;
  /** The account's DID: it stays when the handle changes. */
  identifier: string;
  appPassword: string;
  /** The last session, reused: createSession is limited to 30 per 5 minutes. */
  session?: AtpSessionData;
  /** The PDS of the account's DID document, where the client sends its calls once logged in (serviceUrl when absent). */
  pdsUrl?: string;
}

/**
 * The record key of a post, derived from its schedule, so that publishing it twice is impossible (the PDS refuses
 * a second record under the same key) and an unknown outcome is settled by one exact lookup. app.bsky.feed.post
 * requires a TID key: 53 bits of microseconds and a 10-bit clock id. The microseconds are the schedule's
 * created_at plus an offset under one second, and the clock id's upper 9 bits come from a SHA-256 of the schedule
 * id: 29 bits that tell apart schedules created in the same transaction. The lowest bit tells the post (0) from
 * its first comment (1).
 */
export function recordKey(key: PostKey): string {
  const digest = createHash('sha256').update(key.scheduleId).digest();
  const micros = key.createdAt.getTime() * 1000 + (digest.readUInt32BE(0) % 1_000_000);
  const clockId = (digest.readUInt16BE(4) % 512) * 2 + (key.kind === 'firstComment' ? 1 : 0);
  return TID.fromTime(micros, clockId).toString();
}

export const releaseUrl = (handleOrDid: string, rkey: string) => `https://bsky.app/profile/${handleOrDid}/post/${rkey}`;


const CREDENTIAL_ERRORS = new Set(['InvalidToken', 'ExpiredToken', 'AuthenticationRequired', 'AccountTakedown', 'AccountDeactivated', 'AuthMissing']);

/** A failed call as the engine needs it (see FailureKind). `write`: whether the call may have changed something. */
export function classify(error: unknown, write: boolean): PlatformError {
  if (error instanceof PlatformError) return error;
  if (!isXrpcError(error)) {
    const message = error instanceof Error ? error.message : String(error);
    const detail = { status: null, platformMessage: message, platformCode: null, traceId: null, raw: { message } };
    return new PlatformError(write ? 'unknown' : 'transient', 'Bluesky could not be reached', detail);
  }
  const headers = error.headers ?? {};
  // Status 1 is the client's own: the request failed in transit, timed out or was aborted. No HTTP status, no code
  // (the client's "Unknown"): a network failure is said as such.
  const inTransit = error.status === 1;
  const detail = {
    status: inTransit ? null : error.status,
    platformMessage: error.message || null,
    platformCode: inTransit ? null : error.error || null,
    traceId: headers['x-trace-id'] ?? headers['traceparent'] ?? null,
    raw: { status: error.status, error: error.error, message: error.message },
  };
  if (inTransit) return new PlatformError(write ? 'unknown' : 'transient', 'Bluesky did not answer', detail);
  if (error.status === 429) return new PlatformError('transient', 'Bluesky is rate limiting this account', detail, retryAfterMs(headers));
  if (error.status >= 500) return new PlatformError(write ? 'unknown' : 'transient', `Bluesky answered ${error.status}`, detail);
  if (error.status === 401 || CREDENTIAL_ERRORS.has(error.error)) {
    return new PlatformError('credentials', 'Bluesky no longer accepts this channel\'s app password: reconnect the channel', detail);
  }
  return new PlatformError('permanent', `Bluesky refused the post: ${error.message || error.error}`, detail);
}

function retryAfterMs(headers: Record<string, string | undefined>): number | undefined {
  const seconds = Number(headers['retry-after']);
  if (Number.isFinite(seconds) && seconds >= 0) return seconds * 1000;
  const reset = Number(headers['ratelimit-reset']); // epoch seconds
  if (Number.isFinite(reset) && reset > 0) return Math.max(0, reset * 1000 - Date.now());
  return undefined;
}

/**
 * fetch, ended by `signal` (the worker shutting down) or after `timeoutMs` without an answer, whichever first, and by
 * the caller's own. A write abandoned so has an unknown outcome, which the engine settles by a lookup.
 */
function fetchUntil(signal: AbortSignal, timeoutMs: number, send: typeof fetch = fetch): typeof fetch {
  return (input, init) => {
    const signals = [signal, deadline(timeoutMs)];
    if (init?.signal) signals.push(init.signal);
    return send(input, { ...init, signal: AbortSignal.any(signals) });
  };
}

async function login(session: CredentialSession, identifier: string, password: string): Promise<void> {
  try {
    await session.login({ identifier, password });
  } catch (error) {
    throw classify(error, false);
  }
}

const publisher: Publisher = {
  async connect({ identifier, password, serviceUrl }, { signal, timeoutMs }): Promise<Connection> {
    const { CredentialSession } = await loadAtproto();
    const session = new CredentialSession(new URL(serviceUrl), fetchUntil(signal, timeoutMs));
    await login(session, identifier, password);
    const data = session.session!;
    const credentials: BlueskyCredentials = { serviceUrl, identifier: data.did, appPassword: password, session: data, pdsUrl: session.pdsUrl?.href };
    return { accountId: data.did, name: data.handle, credentials };
  },

  open(stored, { signal, timeoutMs, saveCredentials, fetch: send }): PublishingAccount {
    const credentials = stored as BlueskyCredentials;
    let session: CredentialSession;
    let agent: import('@atproto/api').Agent;
    let RichText: typeof import('@atproto/api').RichText;
    let ready: Promise<void> | undefined;
    // Both tokens: an access token made in the same second for the same account can be the same string.
    const tokensOf = (data: AtpSessionData | undefined) => `${data?.accessJwt} ${data?.refreshJwt}`;
    let saved = tokensOf(credentials.session);
    /** The storing of the last renewed session, awaited before a call returns; it never rejects (see keepSession). */
    let pending: Promise<void> = Promise.resolve();
    /** Why the last renewed session could not be stored, until an explicit refresh reports it. */
    let unsaved: unknown;

    /**
     * Takes up the stored session as it is, without a call: the client refreshes its access token when the PDS says
     * it expired (and persistSession stores the renewed one). Only without a stored session does it log in.
     */
    const start = async () => {
      const loaded = await loadAtproto();
      session = new loaded.CredentialSession(new URL(credentials.serviceUrl), fetchUntil(signal, timeoutMs, send), (event) => {
        if (event === 'update' || event === 'create') pending = pending.then(keepSession);
      });
      agent = new loaded.Agent(session);
      RichText = loaded.RichText;
      if (credentials.session) {
        session.session = credentials.session;
        if (credentials.pdsUrl) session.pdsUrl = new URL(credentials.pdsUrl);
      } else {
        await login(session, credentials.identifier, credentials.appPassword);
      }
    };
    /**
     * Stores a renewed session (sealed, by the engine), so the next job neither refreshes nor logs in again. A store
     * that fails (the database away for a moment) fails no call: the session in hand works, the next renewal stores
     * again, and a process that reads the older session logs in again with the app password. refreshCredentials,
     * whose purpose the store is, reports it.
     */
    const keepSession = async () => {
      const current = session.session;
      if (!current || tokensOf(current) === saved) return;
      const before = saved;
      saved = tokensOf(current);
      try {
        await saveCredentials({ ...credentials, session: current, pdsUrl: session.pdsUrl?.href });
        unsaved = undefined;
      } catch (error) {
        saved = before;
        unsaved = error;
      }
    };
    /** Runs `call` in the session; what fails is classified (a credentials failure is for the engine to refresh). */
    const withSession = async <T>(call: () => Promise<T>, write: boolean): Promise<T> => {
      try {
        // A start that failed is tried again by the next call (the account may serve many jobs: src/channels/open-account.ts).
        ready ??= start().catch((error: unknown) => {
          ready = undefined;
          throw error;
        });
        await ready;
        return await call();
      } catch (error) {
        throw classify(error, write);
      } finally {
        await pending;
      }
    };
    const published = (uri: string, cid: string): PublishedPost => ({
      id: uri,
      ref: cid,
      url: releaseUrl(session.session?.handle ?? parseAtUri(uri).repo, parseAtUri(uri).rkey),
    });

    return {
      refreshCredentials: () =>
        withSession(async () => {
          // The refresh token first (no createSession spent); when the PDS refuses it, a new login with the app password.
          const renew = async () => {
            if (session.session) {
              try {
                await session.refreshSession();
                return;
              } catch (error) {
                if (classify(error, false).kind !== 'credentials') throw error;
              }
            }
            await login(session, credentials.identifier, credentials.appPassword);
          };
          await renew();
          await pending;
          if (unsaved) throw unsaved;
        }, false),
      publish: (post) =>
        withSession(async () => {
          const text = new RichText({ text: post.text });
          // Mentions are resolved to DIDs through the account's PDS; links and hashtags are found in the text.
          await text.detectFacets(agent);
          // A handle that does not resolve (no such account, or the lookup failed) stays plain text, as Bluesky's app
          // leaves it: a mention without a DID would make the PDS refuse the whole record.
          const facets = text.facets
            ?.map((facet) => ({ ...facet, features: facet.features.filter((feature) => !(feature.$type === MENTION && !(feature as { did?: string }).did)) }))
            .filter((facet) => facet.features.length > 0);
          const reply = post.replyTo && {
            root: { uri: post.replyTo.root.id, cid: post.replyTo.root.ref },
            parent: { uri: post.replyTo.parent.id, cid: post.replyTo.parent.ref },
          };
          const embed = post.images?.length ? await embedImages(post.images) : undefined;
          const record = {
            $type: POST,
            text: text.text,
            facets: facets?.length ? facets : undefined,
            langs: await postLanguages(post),
            createdAt: new Date().toISOString(),
            ...(reply && { reply }),
            ...(embed && { embed }),
          };
          const rkey = recordKey(post.key);
          try {
            const { data } = await agent.com.atproto.repo.createRecord({ repo: session.did!, collection: POST, rkey, record });
            return published(data.uri, data.cid);
          } catch (error) {
            // A second record under a key answers 500 on the PDS: it may already exist, which the lookup settles.
            const failure = classify(error, true);
            if (failure.kind !== 'unknown') throw failure;
            const found = await lookUp(rkey).catch(() => null);
            if (found) return found;
            throw failure;
          }
        }, true),
      lookUp: (key) => withSession(() => lookUp(recordKey(key)), false),
      delete: (postId) =>
        withSession(async () => {
          await agent.com.atproto.repo.deleteRecord({ repo: session.did!, collection: POST, rkey: parseAtUri(postId).rkey });
        }, true),
    };

    /**
     * Uploads each image's first version that fits a blob (its `source` variant, made to fit) and embeds them with their
     * alt text and aspect ratio. A blob is stored by its hash, so uploading it again on a retry stores nothing new.
     */
    async function embedImages(images: OutgoingImage[]) {
      const embedded = [];
      for (const [index, image] of images.entries()) {
        const version = image.versions.find((candidate) => candidate.sizeBytes <= MAX_IMAGE_BYTES);
        if (!version) throw new PlatformError('permanent', `Image ${index + 1} has no version of at most ${MAX_IMAGE_BYTES} bytes for Bluesky`, noDetail);
        const { data } = await agent.com.atproto.repo.uploadBlob(await version.read(), { encoding: version.mimeType });
        embedded.push({ image: data.blob, alt: image.altText, aspectRatio: { width: version.width, height: version.height } });
      }
      return { $type: 'app.bsky.embed.images', images: embedded };
    }

    async function lookUp(rkey: string): Promise<PublishedPost | null> {
      try {
        const { data } = await agent.com.atproto.repo.getRecord({ repo: session.did!, collection: POST, rkey });
        return published(data.uri, data.cid!);
      } catch (error) {
        if (isXrpcError(error) && error.error === 'RecordNotFound') return null;
        throw classify(error, false);
      }
    }
  },
};

export const bluesky: PlatformRules = { ...blueskyRules, publisher };
