import { deadline } from '../process/deadline.js';
import type { ThreadsConfig } from '../process/config.js';
import { THREADS_IMAGE_TYPES, THREADS_MAX_IMAGE_BYTES, threadsRules } from './rules.js';
import {
  noDetail,
  PlatformError,
  TEXT_TOO_LONG,
  type ConnectionFailure,
  type FailureDetail,
  type OAuthConnect,
  type OutgoingImage,
  type OutgoingPost,
  type PlatformRules,
  type PublishedPost,
  type Publisher,
  type PublishingAccount,
} from './publishing.js';

/**
 * Threads, through Meta's Threads API (graph.threads.net; developers.facebook.com/docs/threads). Connecting is the
 * operator's Meta app (THREADS_APP_ID, THREADS_APP_SECRET): the member's consent, its code exchanged for a short-lived
 * token and at once for a long-lived one (60 days), refreshed by the worker a week before it ends. Publishing is by
 * containers: one per post (TEXT, IMAGE, or a CAROUSEL of 2 to 20 image containers), waited on until FINISHED, then
 * published (`threads_publish`); replies (thread parts, the first comment) name the post they answer (`reply_to_id`).
 *
 * Never twice: a container is kept (`remember`, src/worker/publish-schedule.ts) before it is published, so an attempt
 * after a lost answer asks the container first (findSent): PUBLISHED is done, anything else was never published.
 * docs/publishing.md#threads.
 */

/** What a Threads channel stores, sealed: the member's long-lived token, when it ends, and the Threads user it acts as. */
export interface ThreadsCredentials {
  accessToken: string;
  expiresAt: string;
  userId: string;
  username: string;
}

/** A container is polled while Meta processes it (its images fetched from the store): soon, then this often, for the platform timeout at most. */
const CONTAINER_POLL_MS = 1000;
/** How far before its mark a post found by findSent may say it was made (Meta's clock against ours). */
const CLOCK_SKEW_MS = 5 * 60_000;
/** Pages of the account's posts (or replies) findSent reads back towards the mark, at most, of this many each. */
const FIND_PAGES = 5;
const PAGE = 50;

/** Meta's error object (Graph API errors). */
interface GraphError {
  message?: string;
  type?: string;
  code?: number;
  error_subcode?: number;
  fbtrace_id?: string;
  error_user_msg?: string;
}

/** Rate limits: the application's (4), the user's (17), the API's (32, 613). */
const RATE_LIMITED = new Set([4, 17, 32, 613]);

/**
 * How a Threads call failed, for the engine: an expired or revoked token (190) marks the channel; a rate limit waits; a
 * refusal of the content fails with Meta's words; no answer, or Meta's own failure, is unknown for a write.
 */
function classify(status: number | null, error: GraphError | null, write: boolean, traceId: string | null): PlatformError {
  const words = error?.error_user_msg ?? error?.message ?? (status === null ? 'no answer' : `status ${status}`);
  const detail: FailureDetail = {
    status,
    platformMessage: error?.message ?? null,
    platformCode: error?.code === undefined ? null : `${error.code}${error.error_subcode ? `/${error.error_subcode}` : ''}`,
    traceId: error?.fbtrace_id ?? traceId,
    raw: error,
  };
  if (status === null) return new PlatformError(write ? 'unknown' : 'transient', `Threads did not answer (${words})`, detail);
  if (error?.code === 190) {
    // 463: expired; 460: the password changed; 458: the app was removed; others: invalid.
    const failure: ConnectionFailure =
      error.error_subcode === 463 ? { tokenStatus: 'EXPIRED', code: 'ACCESS_TOKEN_EXPIRED' } : { tokenStatus: 'REVOKED', code: 'ACCESS_TOKEN_REVOKED' };
    return new PlatformError('credentials', `Threads no longer accepts this channel's token (${words}): reconnect the channel`, detail, undefined, failure);
  }
  if (error?.code === 10 || (error?.code !== undefined && error.code >= 200 && error.code < 300)) {
    return new PlatformError('credentials', `Threads refused this channel's permissions (${words}): reconnect the channel and allow what Postwise asks`, detail, undefined, {
      tokenStatus: 'REVOKED',
      code: 'PERMISSION_DENIED',
    });
  }
  if (status === 429 || (error?.code !== undefined && RATE_LIMITED.has(error.code))) {
    return new PlatformError('transient', `Threads asks to slow down (${words})`, detail, 15 * 60_000);
  }
  if (status >= 500 || error?.code === 1 || error?.code === 2) return new PlatformError(write ? 'unknown' : 'transient', `Threads answered ${status} (${words})`, detail);
  if (/too long|characters/i.test(words)) detail.platformCode = TEXT_TOO_LONG;
  return new PlatformError('permanent', `Threads refused it: ${words}`, detail);
}

interface Call {
  config: ThreadsConfig;
  signal: AbortSignal;
  timeoutMs: number;
  send?: typeof fetch;
  /** Whether the call may make something (then no answer is an unknown outcome). */
  write?: boolean;
}

/**
 * One request to the Graph API (`path` below THREADS_API_URL: versioned, or a token endpoint), its parameters in the
 * query (GET, DELETE) or a form (POST), the token in the Authorization header; the answer's JSON, or a PlatformError.
 */
async function graph<T>(method: 'GET' | 'POST' | 'DELETE', path: string, params: Record<string, string | undefined>, token: string | null, call: Call): Promise<T> {
  const url = new URL(`${call.config.apiUrl}${path}`);
  const given = Object.fromEntries(Object.entries(params).filter((entry): entry is [string, string] => entry[1] !== undefined));
  const form = method === 'POST' ? new URLSearchParams(given) : undefined;
  if (!form) for (const [name, value] of Object.entries(given)) url.searchParams.set(name, value);
  let response: Response;
  try {
    response = await (call.send ?? fetch)(url, {
      method,
      headers: { ...(token && { authorization: `Bearer ${token}` }), ...(form && { 'content-type': 'application/x-www-form-urlencoded' }) },
      body: form,
      signal: AbortSignal.any([call.signal, deadline(call.timeoutMs)]),
    });
  } catch (error) {
    throw classify(null, { message: error instanceof Error ? error.message : String(error) }, call.write ?? false, null);
  }
  const text = await response.text().catch(() => '');
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    body = undefined;
  }
  if (response.ok && body !== undefined) return body as T;
  const error = (body as { error?: GraphError } | undefined)?.error ?? { message: text.slice(0, 300) || `status ${response.status}` };
  throw classify(response.status, error, (call.write ?? false) && response.status >= 500, response.headers.get('x-fb-trace-id'));
}

const versioned = (config: ThreadsConfig, path: string) => `/${config.version}${path}`;

/** The first version of an image Meta takes (JPEG or PNG, at most 8 MB), or none. */
function versionFor(image: OutgoingImage) {
  return image.versions.find((version) => THREADS_IMAGE_TYPES.includes(version.mimeType) && version.sizeBytes <= THREADS_MAX_IMAGE_BYTES);
}

const oauthConnect: OAuthConnect = {
  settings: ['THREADS_APP_ID', 'THREADS_APP_SECRET'],
  unavailable: ({ threads }) =>
    threads.appId && threads.appSecret
      ? null
      : 'Threads is not configured on this server: set THREADS_APP_ID and THREADS_APP_SECRET (the Threads app of a Meta app) to connect Threads channels',

  authorizationUrl({ threads }, { redirectUri, state }) {
    const url = new URL(`${threads.authUrl}/oauth/authorize`);
    url.search = new URLSearchParams({ client_id: threads.appId!, redirect_uri: redirectUri, scope: threads.scopes.join(','), response_type: 'code', state }).toString();
    return url.toString();
  },

  async complete({ threads, platformTimeoutMs: timeoutMs }, callback, { signal, fetch: send }) {
    const error = callback.url.searchParams.get('error');
    if (error) {
      const reason = callback.url.searchParams.get('error_description') ?? callback.url.searchParams.get('error_reason') ?? error;
      const cancelled = /denied|cancel/i.test(`${error} ${reason}`);
      throw new PlatformError('permanent', cancelled ? 'The Threads consent was cancelled: nothing was connected' : `Threads did not authorize the connection (${reason})`, {
        ...noDetail,
        platformCode: error,
        platformMessage: reason,
      });
    }
    const code = callback.url.searchParams.get('code');
    if (!code) throw new PlatformError('permanent', 'Threads sent the member back without a code: try connecting again', noDetail);
    const call: Call = { config: threads, signal, timeoutMs, send };
    // Meta documents the code exchange and the long-lived exchange as separate steps; the short-lived token lives an hour.
    const short = await graph<{ access_token: string; user_id: number | string }>(
      'POST',
      '/oauth/access_token',
      { client_id: threads.appId, client_secret: threads.appSecret, grant_type: 'authorization_code', redirect_uri: callback.redirectUri, code },
      null,
      call,
    );
    const long = await graph<{ access_token: string; expires_in: number }>(
      'GET',
      '/access_token',
      { grant_type: 'th_exchange_token', client_secret: threads.appSecret, access_token: short.access_token },
      null,
      call,
    );
    const me = await graph<{ id: string; username: string; name?: string; threads_profile_picture_url?: string }>(
      'GET',
      versioned(threads, '/me'),
      { fields: 'id,username,name,threads_profile_picture_url' },
      long.access_token,
      call,
    );
    const expiresAt = new Date(Date.now() + long.expires_in * 1000);
    const credentials: ThreadsCredentials = { accessToken: long.access_token, expiresAt: expiresAt.toISOString(), userId: me.id, username: me.username };
    return {
      choices: [{ accountId: me.id, name: me.name || me.username, image: me.threads_profile_picture_url ?? null, handle: `@${me.username}` }],
      credentials,
      expiresAt,
      refreshable: true,
    };
  },
};

/** A container's state (GET /{container-id}?fields=status,error_message). */
interface Container {
  id: string;
  status: 'IN_PROGRESS' | 'FINISHED' | 'PUBLISHED' | 'ERROR' | 'EXPIRED';
  error_message?: string;
}

const publisher: Publisher = {
  oauth: oauthConnect,

  open(stored, { signal, timeoutMs, saveCredentials, fetch: send, config }): PublishingAccount {
    let credentials = stored as ThreadsCredentials;
    const threads = config!.threads;
    const read: Call = { config: threads, signal, timeoutMs, send };
    const write: Call = { ...read, write: true };
    const api = <T>(method: 'GET' | 'POST' | 'DELETE', path: string, params: Record<string, string | undefined>, call = read) =>
      graph<T>(method, versioned(threads, path), params, credentials.accessToken, call);

    const status = (id: string) => api<Container>('GET', `/${id}`, { fields: 'id,status,error_message' });

    /** Waits until Meta has processed `id` (fetched its images), within the platform timeout; a failure is permanent. */
    const finished = async (id: string) => {
      for (let waited = 0, wait = CONTAINER_POLL_MS / 4; ; waited += wait, wait = Math.min(wait * 2, CONTAINER_POLL_MS)) {
        const container = await status(id);
        if (container.status === 'FINISHED') return;
        if (container.status === 'ERROR') throw new PlatformError('permanent', `Threads could not prepare the post: ${container.error_message ?? 'ERROR'}`, { ...noDetail, platformCode: container.error_message ?? 'ERROR' });
        if (container.status === 'EXPIRED' || container.status === 'PUBLISHED') throw new PlatformError('transient', `Threads' container ${container.status.toLowerCase()}: made again`, noDetail);
        if (waited >= timeoutMs) throw new PlatformError('transient', 'Threads is still preparing the post (its images)', noDetail);
        await new Promise((resolve) => setTimeout(resolve, wait));
        signal.throwIfAborted();
      }
    };

    /** The container of `post` (its image containers first, for a carousel). Makes nothing visible: redoing it is safe. */
    const contain = async (post: OutgoingPost): Promise<string> => {
      const images = post.images ?? [];
      const urls = images.map((image, index) => {
        const version = versionFor(image);
        if (!version) throw new PlatformError('permanent', `Image ${index + 1} has no version Threads takes (a JPEG or PNG of at most 8 MB)`, noDetail);
        return { url: version.url, altText: image.altText || undefined };
      });
      const common = {
        text: post.text,
        ...(post.replyTo && { reply_to_id: post.replyTo.parent.id }),
        reply_control: (post.settings as { replyControl?: string }).replyControl,
      };
      if (urls.length === 0) return (await api<{ id: string }>('POST', `/${credentials.userId}/threads`, { media_type: 'TEXT', ...common }, write)).id;
      if (urls.length === 1) {
        const [only] = urls;
        return (await api<{ id: string }>('POST', `/${credentials.userId}/threads`, { media_type: 'IMAGE', image_url: only!.url, alt_text: only!.altText, ...common }, write)).id;
      }
      const children: string[] = [];
      for (const item of urls) {
        const child = await api<{ id: string }>('POST', `/${credentials.userId}/threads`, { media_type: 'IMAGE', image_url: item.url, alt_text: item.altText, is_carousel_item: 'true' }, write);
        children.push(child.id);
      }
      for (const child of children) await finished(child);
      return (await api<{ id: string }>('POST', `/${credentials.userId}/threads`, { media_type: 'CAROUSEL', children: children.join(','), ...common }, write)).id;
    };

    /** A published post as the engine keeps it: its id, and its permalink. */
    const published = async (id: string): Promise<PublishedPost> => {
      const media = await api<{ id: string; permalink?: string }>('GET', `/${id}`, { fields: 'id,permalink' });
      return { id, url: media.permalink ?? `https://www.threads.com/@${credentials.username}`, ref: id };
    };

    /** Refuses a post beyond Meta's 24-hour quota before anything is made (posts, or replies for a reply). */
    const withinQuota = async (reply: boolean) => {
      const [limit] = (
        await api<{ data: { quota_usage?: number; config?: { quota_total: number }; reply_quota_usage?: number; reply_config?: { quota_total: number } }[] }>(
          'GET',
          `/${credentials.userId}/threads_publishing_limit`,
          { fields: 'quota_usage,config,reply_quota_usage,reply_config' },
        )
      ).data;
      const used = reply ? limit?.reply_quota_usage : limit?.quota_usage;
      const total = reply ? limit?.reply_config?.quota_total : limit?.config?.quota_total;
      if (used !== undefined && total !== undefined && used >= total) {
        const what = reply ? 'replies' : 'posts';
        throw new PlatformError('permanent', `Threads allows ${total} ${what} a day through its API, and this account has made ${used} in the last 24 hours: publish it later`, {
          ...noDetail,
          platformCode: 'PUBLISHING_LIMIT',
        });
      }
    };

    return {
      /** `th_refresh_token`: a new 60-day token for one at least a day old and not expired. */
      async refreshCredentials() {
        const renewed = await graph<{ access_token: string; expires_in: number }>(
          'GET',
          '/refresh_access_token',
          { grant_type: 'th_refresh_token', access_token: credentials.accessToken },
          null,
          read,
        );
        const expiresAt = new Date(Date.now() + renewed.expires_in * 1000);
        credentials = { ...credentials, accessToken: renewed.access_token, expiresAt: expiresAt.toISOString() };
        await saveCredentials(credentials, expiresAt);
      },

      async publish(post) {
        await withinQuota(post.replyTo !== undefined);
        // A container an earlier attempt made and kept, not published (findSent said so), is published now if it is ready.
        const earlier = post.sentRef ? await status(post.sentRef).catch(() => null) : null;
        let container: string;
        if (earlier && (earlier.status === 'FINISHED' || earlier.status === 'IN_PROGRESS')) {
          container = earlier.id;
        } else {
          container = await contain(post);
          await post.remember?.(container);
        }
        await finished(container);
        const { id } = await api<{ id: string }>('POST', `/${credentials.userId}/threads_publish`, { creation_id: container }, write);
        return published(id);
      },

      /**
       * The post a lost `threads_publish` made: its container PUBLISHED means it is there, found among the account's
       * posts (or replies) back to the mark by its text and the post it answers; any other state means nothing was
       * published (the container is published by the next send). Without a container kept, the posts are looked through
       * all the same (an attempt that stopped between publishing and keeping nothing).
       */
      async findSent(post) {
        if (post.sentRef) {
          const container = await status(post.sentRef);
          if (container.status !== 'PUBLISHED') return null;
        }
        const edge = post.replyTo ? 'replies' : 'threads';
        const since = post.sentAt.getTime() - CLOCK_SKEW_MS;
        let after: string | undefined;
        for (let page = 0; page < FIND_PAGES; page++) {
          const answer = await api<{ data: { id: string; text?: string; timestamp: string; permalink?: string; replied_to?: { id: string } }[]; paging?: { cursors?: { after?: string }; next?: string } }>(
            'GET',
            `/${credentials.userId}/${edge}`,
            { fields: 'id,text,timestamp,permalink,replied_to', limit: String(PAGE), since: String(Math.floor(since / 1000)), ...(after && { after }) },
          );
          const match = answer.data.find(
            (media) => (media.text ?? '').trim() === post.text.trim() && (!post.replyTo || media.replied_to?.id === post.replyTo.parent.id),
          );
          if (match) return { id: match.id, url: match.permalink ?? `https://www.threads.com/@${credentials.username}`, ref: match.id };
          after = answer.data.length === PAGE ? answer.paging?.cursors?.after : undefined;
          if (!after) break;
        }
        if (post.sentRef) {
          // Its container says published, yet the post is not among the account's: it is there; without its id it cannot be replied to.
          throw new PlatformError('permanent', 'Threads says the post was published, but it is not among the account\'s posts: check the account', noDetail);
        }
        return null;
      },

      async delete(postId) {
        try {
          await api('DELETE', `/${postId}`, {}, write);
        } catch (error) {
          // Gone already (deleted in the app): nothing left to do.
          if (error instanceof PlatformError && error.detail.status === 404) return;
          throw error;
        }
      },
    };
  },
};

export const threads: PlatformRules = { ...threadsRules, publisher };
