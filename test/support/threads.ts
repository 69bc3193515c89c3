import { createHash, randomBytes } from 'node:crypto';
import express, { type NextFunction, type Request, type Response } from 'express';
import { fileTypeFromBuffer } from 'file-type';
import sharp from 'sharp';
import { escapeHtml, flatHeaders, htmlPage, startLoopbackApp } from './loopback-app.js';

/**
 * A strict fake of Meta's Threads API on loopback (plain http), written from Meta's public documentation:
 *
 * - [get-started] developers.facebook.com/docs/threads/get-started — permissions and what each is required for, "we
 *   download media used in publishing attempts so the media must be hosted on a publicly accessible server".
 * - [tokens] …/get-started/get-access-tokens-and-permissions — the Authorization Window, its parameters ("all except
 *   state are required", scope "comma-separated or space-separated", threads_basic required), the redirect with `code`
 *   ("valid for 1 hour and can only be used once", `#_` appended), POST /oauth/access_token → `{access_token, user_id}`.
 * - [long-lived] …/get-started/long-lived-tokens — short-lived tokens last 1 hour; GET /access_token
 *   (th_exchange_token, client_secret) → `{access_token, token_type: "bearer", expires_in}`, 60 days; GET
 *   /refresh_access_token (th_refresh_token) "as long as they are at least 24 hours old but have not expired".
 * - [posts] …/docs/threads/posts — the container and publish steps, their parameters, "Text posts are limited to 500
 *   characters. Emojis are counted as the number of UTF-8 bytes", carousels of 2 to 20 items.
 * - [reference] …/threads/reference/publishing and …/reference/media-retrieval — parameter lists, media fields.
 * - [text-attachments] …/create-posts/text-attachments — "posts containing more than 5 links will fail … during the
 *   media creation step … THREADS_API__LINK_LIMIT_EXCEEDED", and how unique links are counted.
 * - [accessibility] …/posts/accessibility — `alt_text` for images and videos only, "not available for text-only posts".
 * - [troubleshooting] …/threads/troubleshooting — container statuses IN_PROGRESS, FINISHED, PUBLISHED, ERROR, EXPIRED
 *   ("not published within 24 hours"), their `error_message` values, GET /{container-id}?fields=status,error_message.
 * - [overview] …/threads/overview and …/retrieve-and-manage-replies — 250 API-published posts and 1,000 replies per
 *   24-hour moving period, "carousels count as a single post", enforced by threads_publish; GET
 *   /{threads-user-id}/threads_publishing_limit and its fields.
 * - [delete] …/posts/delete-posts — DELETE /{threads-media-id}, threads_delete, 100 deletes a day, `{success, deleted_id}`.
 * - [profiles] …/threads/threads-profiles — GET /me?fields=id,username,name,threads_profile_picture_url,threads_biography.
 * - [graph-errors] …/docs/graph-api/guides/error-handling — the error object `{ error: { message, type, code,
 *   error_subcode, error_user_title, error_user_msg, fbtrace_id } }`, codes 1, 2, 4, 10, 17, 190 and subcodes 458, 460,
 *   463, 467.
 * - [sample] github.com/fbsamples/threads_api (Meta's sample app and its Postman collection): the hosts
 *   (www.threads.net for the window, graph.threads.net for the API), `me` for the user id, parameters sent in the query
 *   string of a POST, the code exchange sent as a form, the scope list, the topic-tag rule (1 to 50 characters, no `.`
 *   or `&`), the publishing-limit answer `{ data: [ { quota_usage, config: { quota_total, quota_duration } … } ] }`.
 *
 * Where those are silent, the fake decides as Meta most plausibly does and says so where it decides: [ig-errors]
 * (developers.facebook.com/docs/instagram-platform/instagram-graph-api/reference/error-codes, the same media pipeline),
 * [fb-login] (Facebook Login's code-exchange errors, the same OAuth server), [ig-display] (Instagram Basic Display's
 * Authorization Window, which Threads' copies: `error_reason=user_denied`), and public reports of what Threads answers:
 * [observed-24] (fbsamples/threads_api#70 and others: publishing an unfinished container answers code 24, subcode
 * 4279009 "Media Not Found"), [observed-2207052] (postiz-app#1364, denali#1278: an image Meta could not download fails
 * the container's creation with code 1, subcode 2207052), [observed-unknown] (postiz-app#1364, #1991: or the container
 * ends in ERROR with error_message UNKNOWN), [observed-status] (meta-mcp#143: `status` asked of a published post is
 * "Tried accessing nonexisting field (status)", type THApiException, code 100), [observed-user-id] (clients parse
 * `user_id` of the code exchange as a JSON number: ndl_core's `user_id: u64`, and others quoting it before JSON.parse).
 *
 * Every request is checked: the graph version in the path, the token (query/body `access_token` or `Authorization:
 * Bearer`), its permissions per endpoint, required and unknown parameters. Meta ignores a parameter it does not know;
 * the fake refuses it, saying so, so that a client's mistake shows in a test rather than as a post quietly missing
 * its alt text. Time is the fake's clock (`now()`, `advance(ms)`): tokens, codes, containers and quotas age with it.
 *
 * Not modelled (refused, saying so): polls, quotes, reposts, GIFs, text attachments, spoilers, ghost posts, locations,
 * country allowlists, `auto_publish_text`, insights, keyword search, mentions, reply hiding, app access tokens.
 */

// --- Types ---

export type ContainerStatus = 'IN_PROGRESS' | 'FINISHED' | 'PUBLISHED' | 'ERROR' | 'EXPIRED';
export type ContainerMediaType = 'TEXT' | 'IMAGE' | 'VIDEO' | 'CAROUSEL';
/** A published post's `media_type` ([reference] media retrieval). */
export type PostMediaType = 'TEXT_POST' | 'IMAGE' | 'VIDEO' | 'CAROUSEL_ALBUM';

/** The Meta app the service registered: its Threads app id and secret, and its valid OAuth redirect URIs. */
export interface ThreadsApp {
  appId: string;
  appSecret: string;
  name: string;
  /** Compared exactly ([tokens]: "Make sure this exactly matches one of the base URIs"). Mutable: tests add theirs. */
  redirectUris: string[];
}

export interface ThreadsAccount {
  /** The Threads user id: 17 digits, beyond 2^53 (a JSON number loses it, see `userIdAsNumber`). */
  id: string;
  username: string;
  name: string;
  /** `threads_profile_picture_url`; by default a PNG the fake serves. */
  pictureUrl: string;
  biography: string;
  isVerified: boolean;
}

export interface ThreadsToken {
  value: string;
  /** short: from the code exchange, 1 hour; long: from th_exchange_token or th_refresh_token, 60 days. */
  kind: 'short' | 'long';
  accountId: string;
  appId: string;
  scopes: string[];
  /** Fake-clock milliseconds. A refreshed token is a new token: its age starts again. */
  issuedAt: number;
  expiresAt: number;
  /** Set by `revoke()`: the API answers code 190 with this subcode. */
  revoked: { subcode: number; message: string } | null;
  /** The token it was exchanged or refreshed from. */
  from: string | null;
}

export interface ThreadsCode {
  value: string;
  appId: string;
  accountId: string;
  redirectUri: string;
  scopes: string[];
  issuedAt: number;
  expiresAt: number;
  usedAt: number | null;
}

/** What the fake read from a container's `image_url` or `video_url`, as Meta's crawler would. */
export interface ThreadsFetch {
  url: string;
  state: 'pending' | 'done' | 'failed';
  /** The answer's status (after redirects), null when there was none. */
  httpStatus: number | null;
  /** The answer's Content-Type header, as sent. */
  contentType: string | null;
  /** The type read from the bytes (file-type). */
  mimeType: string | null;
  size: number;
  sha256: string | null;
  bytes: Buffer | null;
  failure: { reason: 'unreachable' | 'timeout' | 'status' | 'type' | 'size'; detail: string } | null;
}

export interface ThreadsContainer {
  id: string;
  accountId: string;
  mediaType: ContainerMediaType;
  isCarouselItem: boolean;
  text: string | null;
  imageUrl: string | null;
  videoUrl: string | null;
  altText: string | null;
  /** Container ids, in order (CAROUSEL). */
  children: string[];
  replyToId: string | null;
  replyControl: string | null;
  linkAttachment: string | null;
  topicTag: string | null;
  /** Every parameter as received (strings), the token left out. */
  params: Record<string, string>;
  createdAt: number;
  /** When processing ends (fake clock); the fetch must also be done. `finish(id)` sets it to now. */
  readyAt: number;
  fetch: ThreadsFetch | null;
  /** ERROR's `error_message`: a failed fetch, or `failContainers`/`failContainer` (shown once processing ends). */
  errorMessage: string | null;
  plannedError: string | null;
  /** The carousel that took this item. */
  carouselId: string | null;
  publishedAt: number | null;
  /** The post it became (not shown by the API: see `status` in GET /{container-id}). */
  postId: string | null;
}

export interface ThreadsPost {
  id: string;
  accountId: string;
  containerId: string | null;
  mediaType: PostMediaType;
  text: string | null;
  shortcode: string;
  permalink: string;
  publishedAt: number;
  replyToId: string | null;
  rootPostId: string | null;
  /** Post ids of a carousel's items (their own media objects). */
  children: string[];
  /** The carousel this item belongs to. */
  carouselParentId: string | null;
  altText: string | null;
  linkAttachment: string | null;
  topicTag: string | null;
  replyControl: string | null;
  /** false for a post the person wrote in the Threads app (`postAs`): it counts against no API quota. */
  viaApi: boolean;
  media: ThreadsFetch | null;
  deletedAt: number | null;
}

/** A request the fake received, for assertions. */
export interface ThreadsRequest {
  method: string;
  path: string;
  query: Record<string, string | string[]>;
  headers: Record<string, string>;
  body: unknown;
  /** The answer's status; absent while unanswered and for a dropped connection. */
  status?: number;
  /** Fake-clock time. */
  at: number;
}

/**
 * A fault the next request to an endpoint meets before anything else is checked: a Graph error (`type` defaults to
 * OAuthException for the rate-limit and token codes 4, 17, 32, 613, 190, THApiException otherwise), or `drop`: the
 * request is carried out (the container made, the post published, the token issued) and the connection is cut
 * unanswered; or `answer`: none, the request answered as usual (to let some through before a fault).
 */
export type ThreadsFault =
  | { status: number; code: number; subcode?: number; message?: string; type?: string; isTransient?: boolean; userTitle?: string; userMessage?: string }
  | 'drop'
  | 'answer';
/**
 * containers: POST /{user}/threads; publish: POST /{user}/threads_publish; token: the three token endpoints;
 * status: GET /{container-id}; profile: GET /me; limit: GET /{user}/threads_publishing_limit; delete: DELETE /{media-id};
 * media: GET /{media-id} (a post).
 */
export type ThreadsFaultEndpoint = 'containers' | 'publish' | 'token' | 'status' | 'profile' | 'limit' | 'delete' | 'media';

export interface FakeThreadsOptions {
  /** The Meta app; by default a random 15-digit id and 32-hex secret, no redirect URI (add yours to `app.redirectUris`). */
  app?: { appId?: string; appSecret?: string; name?: string; redirectUri?: string | string[] };
  /** The accounts; default one, `threads_ann` (Ann Example). */
  accounts?: { id?: string; username: string; name?: string; pictureUrl?: string; biography?: string }[];
  /** The graph version every API path must start with; default `v1.0` ([posts] examples). */
  version?: string;
  /** Where the Authorization Window is served (www.threads.net's `/oauth/authorize` in production); default that path. */
  authorizePath?: string;
  /** Consent at once as this account (username or id), refuse at once (`deny`), or show the page (null, default). */
  autoConsent?: string | 'deny' | null;
  /** How long a new container takes to process (fake clock, ms); default 200. */
  processingMs?: number;
  /**
   * What an image Meta cannot use does: `container` (default) — the container is made and ends in ERROR
   * ([observed-unknown]); `request` — the creation itself is refused with code 1, subcode 2207052 and the like
   * ([observed-2207052]). Videos always end in ERROR ([troubleshooting]'s FAILED_DOWNLOADING_VIDEO…).
   */
  mediaFailure?: 'container' | 'request';
  /** How long the fake waits for an image or video URL; default 5000 ms. */
  fetchTimeoutMs?: number;
  /** [ig-errors]: "The image is too large to download. It should be less than 8 MiB." Default 8 MiB. */
  maxImageBytes?: number;
  /** Media specifications: video "1 GB maximum". */
  maxVideoBytes?: number;
  /** [overview]: 250 posts, 1,000 replies; [delete]: 100 deletes, per 24 hours. */
  quotas?: Partial<{ posts: number; replies: number; deletes: number }>;
  /**
   * true (default): the code exchange answers `user_id` as a JSON number, as Meta does ([observed-user-id]) — with
   * 17-digit ids that JSON.parse rounds, so a client must read the id as text or from GET /me. false: a string.
   */
  userIdAsNumber?: boolean;
  /** true: a refresh invalidates the token it was refreshed from (Meta does not say; default false, it stays valid until its own expiry). */
  refreshRevokesOld?: boolean;
}

export interface FakeThreads {
  /** The fake's origin, `http://127.0.0.1:<port>`: graph.threads.net and www.threads.net in one. */
  url: string;
  /** `127.0.0.1:<port>`. */
  host: string;
  version: string;
  /** `${url}/v1.0`: what https://graph.threads.net/v1.0 is in production. */
  graphUrl: string;
  /** The Authorization Window, https://threads.net/oauth/authorize in production. */
  authorizeUrl: string;
  /** POST: the code exchange, https://graph.threads.net/oauth/access_token in production. */
  tokenUrl: string;
  app: ThreadsApp;
  /** By id. */
  accounts: Map<string, ThreadsAccount>;
  tokens: Map<string, ThreadsToken>;
  codes: Map<string, ThreadsCode>;
  containers: Map<string, ThreadsContainer>;
  /** Every post, including carousel items and deleted posts (`deletedAt`). */
  posts: Map<string, ThreadsPost>;
  /** Every request received, in order. */
  requests: ThreadsRequest[];
  /** Processing time of the next containers (fake-clock ms). */
  processingMs: number;
  mediaFailure: 'container' | 'request';
  quotas: { posts: number; replies: number; deletes: number };
  /** Permissions the person unticks on the consent page (granted scopes are those asked minus these). */
  withheldScopes: Set<string>;
  /** The fake clock: Date.now() plus what `advance` added. */
  now(): number;
  advance(ms: number): void;
  /** An account by username or id. */
  account(ref: string | ThreadsAccount): ThreadsAccount;
  addAccount(account: { id?: string; username: string; name?: string; pictureUrl?: string; biography?: string }): ThreadsAccount;
  /** The account signed in in the browser: the one the consent page authorizes. */
  signInAs(ref: string | ThreadsAccount): void;
  autoConsent(ref: string | ThreadsAccount | 'deny' | null): void;
  /** A token without the OAuth dance (long-lived by default; scopes default threads_basic, threads_content_publish, threads_manage_replies). */
  issueToken(ref: string | ThreadsAccount, options?: { scopes?: string | string[]; kind?: 'short' | 'long' }): string;
  /** The token stops working: code 190 with subcode 458 (the person removed the app), 460 (password changed) or 467. */
  revoke(token: string, reason?: 'deauthorized' | 'password' | 'invalidated'): void;
  failNext(endpoint: ThreadsFaultEndpoint, fault: ThreadsFault): void;
  /** The next `count` containers made end in ERROR with this error_message once processed (default UNKNOWN). */
  failContainers(count: number, errorMessage?: string): void;
  /** This container ends in ERROR (at once if already processed). */
  failContainer(id: string, errorMessage?: string): void;
  /** This container's processing ends now (its fetch must still be done). */
  finish(id: string): void;
  statusOf(containerId: string): ContainerStatus;
  /** The account's posts that still exist, oldest first (carousel items left out; replies included unless told). */
  postsOf(ref: string | ThreadsAccount, options?: { replies?: boolean }): ThreadsPost[];
  /** A post the person wrote in the Threads app (counts against no API quota): something to reply to. */
  postAs(ref: string | ThreadsAccount, text: string, options?: { replyToId?: string }): ThreadsPost;
  /** What threads_publishing_limit would answer now. */
  quotaUsage(ref: string | ThreadsAccount): { posts: number; replies: number; deletes: number };
  /** Resolves once every media fetch under way has ended. */
  settled(): Promise<void>;
  close(): Promise<void>;
}

// --- Constants from the documentation ---

/** [sample]'s SCOPES, the permissions a Threads app can ask for; [get-started] says what each is required for. */
export const THREADS_SCOPES = [
  'threads_basic', 'threads_content_publish', 'threads_manage_insights', 'threads_manage_replies', 'threads_read_replies',
  'threads_keyword_search', 'threads_manage_mentions', 'threads_delete', 'threads_location_tagging', 'threads_profile_discovery',
];
/** [tokens]: "Authorization codes are valid for 1 hour and can only be used once." */
const CODE_TTL_MS = 3600_000;
/** [long-lived]: "short-lived and are valid for one hour"; long-lived "valid for 60 days"; refresh once "at least 24 hours old". */
const SHORT_TTL_MS = 3600_000;
const LONG_TTL_MS = 60 * 86_400_000;
const REFRESH_MIN_AGE_MS = 86_400_000;
/** [troubleshooting]: EXPIRED — "The container was not published within 24 hours". */
const CONTAINER_TTL_MS = 86_400_000;
/** [overview]: a 24-hour moving period. */
const QUOTA_WINDOW_MS = 86_400_000;
/** [posts]: "Text posts are limited to 500 characters." */
export const THREADS_TEXT_LIMIT = 500;
/** [text-attachments]: "The number of links is restricted to 5 or fewer." */
export const THREADS_LINK_LIMIT = 5;
/** [posts] carousel: "at least 2 and up to 20 total images or videos". */
export const CAROUSEL_MIN = 2;
export const CAROUSEL_MAX = 20;
/** [reference] publishing: reply_control values. */
const REPLY_CONTROLS = ['everyone', 'accounts_you_follow', 'mentioned_only', 'parent_post_author_only', 'followers_only'];
/** Media specifications: "JPEG and PNG … officially supported" for images; "MOV or MP4" for videos. */
const IMAGE_TYPES = ['image/jpeg', 'image/png'];
const VIDEO_TYPES = ['video/mp4', 'video/quicktime'];
/** Meta's crawler ([sample]'s README and the media guides: Meta fetches media itself); the fake sends its User-Agent. */
const CRAWLER_USER_AGENT = 'facebookexternalhit/1.1 (+http://www.facebook.com/externalhit_uatext.php)';

const CONTAINER_PARAMS = ['media_type', 'text', 'image_url', 'video_url', 'is_carousel_item', 'children', 'reply_to_id', 'reply_control', 'alt_text', 'link_attachment', 'topic_tag'];
/** Documented in [reference]/[posts] but not modelled by the fake: refused with this reason. */
const CONTAINER_NOT_MODELLED: Record<string, string> = {
  auto_publish_text: 'auto_publish_text is not modelled by the fake: create the container, store its id, then call threads_publish',
  poll_attachment: 'polls are not modelled by the fake',
  text_entities: 'spoilers are not modelled by the fake',
  is_spoiler_media: 'spoilers are not modelled by the fake',
  text_attachment: 'text attachments are not modelled by the fake',
  gif_attachment: 'GIFs are not modelled by the fake',
  is_ghost_post: 'ghost posts are not modelled by the fake',
  quote_post_id: 'quote posts are not modelled by the fake',
  location_id: 'locations are not modelled by the fake',
  allowlisted_country_codes: 'country allowlists are not modelled by the fake',
};
/** [reference] media retrieval: the fields a media object answers. */
const POST_FIELDS = [
  'id', 'media_product_type', 'media_type', 'media_url', 'permalink', 'owner', 'username', 'text', 'timestamp', 'shortcode', 'children',
  'is_quote_post', 'alt_text', 'link_attachment_url', 'has_replies', 'is_reply', 'is_reply_owned_by_me', 'root_post', 'replied_to', 'topic_tag',
];
const POST_FIELDS_NOT_MODELLED = [
  'thumbnail_url', 'hide_status', 'reply_audience', 'quoted_post', 'reposted_post', 'gif_url', 'poll_attachment', 'is_spoiler_media',
  'text_entities', 'text_attachment', 'location_id', 'is_verified', 'profile_picture_url', 'ghost_post_status',
];
/** [troubleshooting]: a container answers `id`, `status`, `error_message`. */
const CONTAINER_FIELDS = ['id', 'status', 'error_message'];
/** [profiles] and [sample]'s fields_profile. */
const PROFILE_FIELDS = ['id', 'username', 'name', 'threads_profile_picture_url', 'threads_biography', 'is_verified'];
const PROFILE_FIELDS_NOT_MODELLED = ['recently_searched_keywords', 'is_eligible_for_geo_gating'];
/** [overview] and [sample]'s fields_quota. */
const LIMIT_FIELDS = ['quota_usage', 'config', 'reply_quota_usage', 'reply_config', 'delete_quota_usage', 'delete_config'];

/** [graph-errors]: the usual message of each code, for faults given without one. */
const DEFAULT_MESSAGES: Record<number, string> = {
  1: 'An unknown error has occurred.',
  2: 'An unexpected error has occurred. Please retry your request later.',
  4: '(#4) Application request limit reached',
  17: '(#17) User request limit reached',
  32: '(#32) Page request limit reached',
  613: '(#613) Calls to this api have exceeded the rate limit.',
  190: 'Invalid OAuth access token - Cannot parse access token',
  100: '(#100) Invalid parameter',
};

interface GraphError {
  status: number;
  message: string;
  type: string;
  code: number;
  subcode?: number;
  userTitle?: string;
  userMessage?: string;
  isTransient?: boolean;
}

type Params = Record<string, string | string[]>;
class BadRequest extends Error {}

// --- The fake ---

export async function startFakeThreads(options: FakeThreadsOptions = {}): Promise<FakeThreads> {
  const { app, server, host, url } = await startLoopbackApp();
  const version = options.version ?? 'v1.0';
  const authorizePath = options.authorizePath ?? '/oauth/authorize';
  const fetchTimeoutMs = options.fetchTimeoutMs ?? 5000;
  const maxImageBytes = options.maxImageBytes ?? 8 * 1024 * 1024;
  const maxVideoBytes = options.maxVideoBytes ?? 1024 * 1024 * 1024;
  const userIdAsNumber = options.userIdAsNumber ?? true;
  const picture = await sharp({ create: { width: 8, height: 8, channels: 3, background: '#101010' } }).png().toBuffer();

  let offset = 0;
  const now = () => Date.now() + offset;
  const faults: Record<ThreadsFaultEndpoint, ThreadsFault[]> = { containers: [], publish: [], token: [], status: [], profile: [], limit: [], delete: [], media: [] };
  const plannedFailures: string[] = [];
  const pending = new Set<Promise<void>>();
  const consentForms = new Map<string, string>(); // form token → the signed-in account's id it was rendered for
  const deletions: { accountId: string; at: number }[] = [];
  let signedIn: ThreadsAccount | undefined;
  let consent: ThreadsAccount | 'deny' | null = null;

  // Meta's ids are numeric strings of 17 digits or so (the docs' examples: 17889615691921648); made in order.
  let lastId = 17_900_000_000_000_000n + BigInt(randomBytes(4).readUInt32BE(0)) * 1000n;
  const nextId = () => (++lastId).toString();
  let accountSequence = 0n;

  const fake: FakeThreads = {
    url,
    host,
    version,
    graphUrl: `${url}/${version}`,
    authorizeUrl: `${url}${authorizePath}`,
    tokenUrl: `${url}/oauth/access_token`,
    app: {
      appId: options.app?.appId ?? String(100_000_000_000_000 + randomBytes(6).readUIntBE(0, 6) % 900_000_000_000_000),
      appSecret: options.app?.appSecret ?? randomBytes(16).toString('hex'),
      name: options.app?.name ?? 'Postwise',
      redirectUris: [options.app?.redirectUri ?? []].flat(),
    },
    accounts: new Map(),
    tokens: new Map(),
    codes: new Map(),
    containers: new Map(),
    posts: new Map(),
    requests: [],
    processingMs: options.processingMs ?? 200,
    mediaFailure: options.mediaFailure ?? 'container',
    quotas: { posts: 250, replies: 1000, deletes: 100, ...options.quotas },
    withheldScopes: new Set(),
    now,
    advance: (ms) => void (offset += ms),
    account: (ref) => accountNamed(ref),
    addAccount(input) {
      // 178414… ids beyond 2^53, as Meta's are: a client that reads `user_id` as a JSON number gets another id.
      const id = input.id ?? (17_841_400_000_000_001n + 2n * accountSequence++).toString();
      const account: ThreadsAccount = {
        id,
        username: input.username,
        name: input.name ?? input.username,
        pictureUrl: input.pictureUrl ?? `${url}/pictures/${id}.png`,
        biography: input.biography ?? '',
        isVerified: false,
      };
      fake.accounts.set(id, account);
      signedIn ??= account;
      return account;
    },
    signInAs: (ref) => void (signedIn = accountNamed(ref)),
    autoConsent: (ref) => void (consent = ref === 'deny' || ref === null ? ref : accountNamed(ref)),
    issueToken(ref, tokenOptions = {}) {
      const scopes = tokenOptions.scopes === undefined ? ['threads_basic', 'threads_content_publish', 'threads_manage_replies'] : [tokenOptions.scopes].flat().join(',').split(/[\s,]+/).filter(Boolean);
      return issue(accountNamed(ref).id, scopes, tokenOptions.kind ?? 'long', null).value;
    },
    revoke(value, reason = 'deauthorized') {
      const token = fake.tokens.get(value);
      if (!token) throw new Error(`No token ${value.slice(0, 12)}… on the fake Threads`);
      // [graph-errors] authentication subcodes: 458 app not installed (the person removed the app), 460 password
      // changed, 467 invalid access token. The messages are Graph's.
      token.revoked = {
        deauthorized: { subcode: 458, message: `Error validating access token: The user has not authorized application ${fake.app.appId}.` },
        password: { subcode: 460, message: 'Error validating access token: The session has been invalidated because the user changed their password or Facebook has changed the session for security reasons.' },
        invalidated: { subcode: 467, message: 'Error validating access token: The session is invalid because the user logged out.' },
      }[reason];
    },
    failNext: (endpoint, fault) => void faults[endpoint].push(fault),
    failContainers: (count, errorMessage = 'UNKNOWN') => void plannedFailures.push(...Array.from({ length: count }, () => errorMessage)),
    failContainer(id, errorMessage = 'UNKNOWN') {
      const container = fake.containers.get(id);
      if (!container) throw new Error(`No container ${id} on the fake Threads`);
      container.plannedError = errorMessage;
    },
    finish(id) {
      const container = fake.containers.get(id);
      if (!container) throw new Error(`No container ${id} on the fake Threads`);
      container.readyAt = now();
    },
    statusOf: (id) => {
      const container = fake.containers.get(id);
      if (!container) throw new Error(`No container ${id} on the fake Threads`);
      return statusOf(container).status;
    },
    postsOf: (ref, postOptions = {}) => {
      const { id } = accountNamed(ref);
      return [...fake.posts.values()]
        .filter((post) => post.accountId === id && !post.deletedAt && !post.carouselParentId && (postOptions.replies !== false || !post.replyToId))
        .sort((a, b) => a.publishedAt - b.publishedAt);
    },
    postAs(ref, text, postOptions = {}) {
      const account = accountNamed(ref);
      const parent = postOptions.replyToId ? fake.posts.get(postOptions.replyToId) : undefined;
      if (postOptions.replyToId && !parent) throw new Error(`No post ${postOptions.replyToId} to reply to`);
      return makePost(account, { containerId: null, mediaType: 'TEXT_POST', text, parent, altText: null, linkAttachment: null, topicTag: null, replyControl: null, viaApi: false, media: null, children: [] });
    },
    quotaUsage: (ref) => usage(accountNamed(ref).id),
    async settled() {
      while (pending.size) await Promise.allSettled([...pending]);
    },
    close: () =>
      new Promise((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
  for (const account of options.accounts ?? [{ username: 'threads_ann', name: 'Ann Example' }]) fake.addAccount(account);
  if (options.autoConsent) fake.autoConsent(options.autoConsent);

  function accountNamed(ref: string | ThreadsAccount): ThreadsAccount {
    const found = typeof ref === 'string' ? (fake.accounts.get(ref) ?? [...fake.accounts.values()].find((account) => account.username === ref)) : ref;
    if (!found) throw new Error(`No account ${String(ref)} on the fake Threads`);
    return found;
  }

  function issue(accountId: string, scopes: string[], kind: 'short' | 'long', from: string | null): ThreadsToken {
    const issuedAt = now(); // read once: the clock may tick between two readings
    const token: ThreadsToken = {
      // Threads user tokens start with TH ([tokens]' examples: THQVJ…).
      value: `THAA${randomBytes(90).toString('base64url')}`,
      kind,
      accountId,
      appId: fake.app.appId,
      scopes: [...new Set(scopes)],
      issuedAt,
      expiresAt: issuedAt + (kind === 'short' ? SHORT_TTL_MS : LONG_TTL_MS),
      revoked: null,
      from,
    };
    fake.tokens.set(token.value, token);
    return token;
  }

  function usage(accountId: string) {
    const since = now() - QUOTA_WINDOW_MS;
    // "Threads profiles are limited to 250 API-published posts … Carousels count as a single post": items are not
    // counted, posts made in the app are not. Replies have their own quota ([overview] "Replies"); the fake counts a
    // reply against that one only (Meta does not say it also counts as a post).
    const recent = [...fake.posts.values()].filter((post) => post.accountId === accountId && post.viaApi && !post.carouselParentId && post.publishedAt > since);
    return {
      posts: recent.filter((post) => !post.replyToId).length,
      replies: recent.filter((post) => post.replyToId).length,
      deletes: deletions.filter((deletion) => deletion.accountId === accountId && deletion.at > since).length,
    };
  }

  // --- Plumbing: the request log, parameters, errors, faults ---

  app.use((req, res, next) => {
    const entry: ThreadsRequest = { method: req.method, path: req.path, query: queryOf(req), headers: flatHeaders(req.headers), body: undefined, at: now() };
    fake.requests.push(entry);
    res.locals.entry = entry;
    res.on('finish', () => (entry.status = res.statusCode));
    next();
  });
  app.use(express.raw({ type: () => true, limit: '2mb' }));

  /** [graph-errors]: `{ error: { message, type, code, error_subcode?, is_transient?, error_user_title?, error_user_msg?, fbtrace_id } }`. */
  function fail(res: Response, error: GraphError): undefined {
    res.status(error.status).json({
      error: {
        message: error.message,
        type: error.type,
        code: error.code,
        ...(error.subcode !== undefined ? { error_subcode: error.subcode } : {}),
        ...(error.isTransient !== undefined ? { is_transient: error.isTransient } : {}),
        ...(error.userTitle ? { error_user_title: error.userTitle } : {}),
        ...(error.userMessage ? { error_user_msg: error.userMessage } : {}),
        fbtrace_id: randomBytes(17).toString('base64url'),
      },
    });
    return undefined;
  }
  /** A parameter error: code 100. Threads answers its own API errors with type THApiException ([observed-status]). */
  const invalid = (res: Response, message: string, subcode?: number) => fail(res, { status: 400, type: 'THApiException', code: 100, subcode, message: `(#100) ${message}` });
  const required = (res: Response, name: string) => invalid(res, `The parameter ${name} is required`);
  /** Graph's answer for an id that is not there, not the caller's, or not for this method (code 100, subcode 33). */
  const noObject = (res: Response, method: string, id: string) =>
    fail(res, {
      status: 400, type: 'THApiException', code: 100, subcode: 33,
      message: `Unsupported ${method.toLowerCase()} request. Object with ID '${id}' does not exist, cannot be loaded due to missing permissions, or does not support this operation.`,
    });
  /** [observed-status]: a field the node does not have. */
  const nonexistingField = (res: Response, field: string) => fail(res, { status: 400, type: 'THApiException', code: 100, message: `Tried accessing nonexisting field (${field})` });

  /** Parameters as Graph reads them: the query string, and a url-encoded or JSON body; a name given twice differently is refused. */
  function readParams(req: Request, res: Response): Params {
    const params: Params = { ...queryOf(req) };
    for (const [name, value] of Object.entries(params)) {
      if (Array.isArray(value)) throw new BadRequest(`The parameter ${name} is given ${value.length} times`);
    }
    const bytes = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
    const type = (req.get('content-type') ?? '').split(';')[0]!.trim().toLowerCase();
    let body: Params = {};
    if (bytes.length && type === 'application/x-www-form-urlencoded') {
      const form = new URLSearchParams(bytes.toString('utf8'));
      for (const name of new Set(form.keys())) {
        const values = form.getAll(name);
        if (values.length > 1) throw new BadRequest(`The parameter ${name} is given ${values.length} times`);
        body[name] = values[0]!;
      }
    } else if (bytes.length && type === 'application/json') {
      let parsed: unknown;
      try {
        parsed = JSON.parse(bytes.toString('utf8'));
      } catch {
        throw new BadRequest('The JSON body could not be parsed');
      }
      if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new BadRequest('The JSON body must be an object');
      body = Object.fromEntries(Object.entries(parsed).map(([name, value]) => {
        if (Array.isArray(value) && value.every((item) => typeof item === 'string' || typeof item === 'number')) return [name, value.map(String)];
        if (['string', 'number', 'boolean'].includes(typeof value)) return [name, String(value)];
        throw new BadRequest(`The parameter ${name} must be a string, a number, a boolean or a list`);
      }));
    } else if (bytes.length) {
      throw new BadRequest(`The fake reads parameters from the query string, a form or JSON, not ${type || 'an untyped body'}`);
    }
    for (const [name, value] of Object.entries(body)) {
      if (name in params && JSON.stringify(params[name]) !== JSON.stringify(value)) throw new BadRequest(`The parameter ${name} is given in the query string and in the body with different values`);
      params[name] = value;
    }
    (res.locals.entry as ThreadsRequest).body = Object.keys(body).length ? body : undefined;
    return params;
  }
  const text = (params: Params, name: string): string | undefined => {
    const value = params[name];
    if (Array.isArray(value)) throw new BadRequest(`The parameter ${name} must be a string`);
    return value;
  };
  function unknownParams(res: Response, params: Params, allowed: string[], notModelled: Record<string, string> = {}): boolean {
    for (const name of Object.keys(params)) {
      if (name === 'access_token' || allowed.includes(name)) continue;
      invalid(res, notModelled[name] ? `${name}: ${notModelled[name]}` : `Unknown parameter: ${name} (Meta would ignore it: the fake refuses it)`);
      return true;
    }
    return false;
  }

  /** Takes the endpoint's next fault: answers it (true), arranges a drop, or leaves the request alone (false). */
  function faulted(endpoint: ThreadsFaultEndpoint, req: Request, res: Response): boolean {
    const fault = faults[endpoint].shift();
    if (!fault || fault === 'answer') return false;
    if (fault === 'drop') {
      // Carried out; whatever would be answered, the connection is cut instead.
      res.end = (() => (req.socket.destroy(), res)) as typeof res.end;
      return false;
    }
    fail(res, {
      status: fault.status,
      type: fault.type ?? ([4, 17, 32, 613, 190].includes(fault.code) ? 'OAuthException' : 'THApiException'),
      code: fault.code,
      subcode: fault.subcode,
      message: fault.message ?? DEFAULT_MESSAGES[fault.code] ?? 'An unexpected error has occurred. Please retry your request later.',
      isTransient: fault.isTransient,
      userTitle: fault.userTitle,
      userMessage: fault.userMessage,
    });
    return true;
  }

  // --- Tokens and permissions ---

  type Caller = { token: ThreadsToken; account: ThreadsAccount };

  /** The token from `access_token` (query or body) or `Authorization: Bearer` (Graph also takes `OAuth`); both must agree. */
  function tokenValue(req: Request, params: Params): string | undefined {
    const header = /^(?:Bearer|OAuth)\s+(\S+)\s*$/i.exec(req.get('authorization') ?? '')?.[1];
    const param = text(params, 'access_token');
    if (header && param && header !== param) throw new BadRequest('Two different access tokens were given (access_token and the Authorization header)');
    return param ?? header;
  }

  const dateOf = (ms: number) => new Date(ms).toUTCString();
  /** [graph-errors] code 190: no subcode for a token Graph cannot read; 463 expired; the revocation's subcode. */
  function tokenProblem(token: ThreadsToken | undefined): GraphError | undefined {
    if (!token) return { status: 400, type: 'OAuthException', code: 190, message: 'Invalid OAuth access token - Cannot parse access token' };
    if (token.revoked) return { status: 400, type: 'OAuthException', code: 190, subcode: token.revoked.subcode, message: token.revoked.message };
    if (now() >= token.expiresAt) {
      return { status: 400, type: 'OAuthException', code: 190, subcode: 463, message: `Error validating access token: Session has expired on ${dateOf(token.expiresAt)}. The current time is ${dateOf(now())}.` };
    }
    return undefined;
  }

  /**
   * The caller, or an answered error: no token (Graph's code 2500 for /me, 104 elsewhere), a bad one (190), or
   * missing permissions ([graph-errors] code 10, "Application does not have permission for this action"; the
   * missing permission named in error_user_msg, which Meta does not do).
   */
  function authorize(req: Request, res: Response, params: Params, scopes: string[], node?: string): Caller | undefined {
    const value = tokenValue(req, params);
    if (!value) {
      return node === 'me'
        ? fail(res, { status: 400, type: 'OAuthException', code: 2500, message: 'An active access token must be used to query information about the current user.' })
        : fail(res, { status: 400, type: 'OAuthException', code: 104, message: 'An access token is required to request this resource.' });
    }
    const token = fake.tokens.get(value);
    const problem = tokenProblem(token);
    if (problem) return fail(res, problem);
    const missing = scopes.filter((scope) => !token!.scopes.includes(scope));
    if (missing.length) {
      return fail(res, {
        status: 403, type: 'OAuthException', code: 10, message: '(#10) Application does not have permission for this action',
        userMessage: `The token was not granted ${missing.join(', ')}`,
      });
    }
    const account = fake.accounts.get(token!.accountId);
    if (!account) return fail(res, { status: 400, type: 'OAuthException', code: 190, subcode: 467, message: 'Error validating access token: The session is invalid because the user logged out.' });
    return { token: token!, account };
  }

  /** `{threads-user-id}`: the caller's own id, or `me` ([sample] uses `me/threads`, `me/threads_publish`). */
  const isSelf = (node: string, caller: Caller) => node === 'me' || node === caller.account.id;

  /** `fields`: comma-separated; `owner{id}`-style sub-selections are taken and answered with ids. */
  function fieldsOf(params: Params, fallback: string[]): string[] {
    const value = text(params, 'fields');
    if (value === undefined || value.trim() === '') return fallback;
    return [...new Set(value.split(',').map((field) => field.trim().replace(/\{.*\}$/, '')).filter(Boolean))];
  }
  function checkFields(res: Response, fields: string[], known: string[], notModelled: string[] = []): boolean {
    for (const field of fields) {
      if (known.includes(field)) continue;
      if (notModelled.includes(field)) invalid(res, `The field ${field} is not modelled by the fake`);
      else nonexistingField(res, field);
      return true;
    }
    return false;
  }
  const pick = (values: Record<string, unknown>, fields: string[]) =>
    Object.fromEntries(fields.filter((field) => values[field] !== undefined && values[field] !== null).map((field) => [field, values[field]]));

  // --- The Authorization Window (www.threads.net) ---

  type PreAuth = { ok: true; redirectUri: string; scopes: string[]; state: string | undefined } | { ok: false; status: number; title: string; message: string };

  /**
   * [tokens]: client_id, redirect_uri, scope, response_type (code) required, state optional. Whatever cannot be trusted
   * or understood gets an error page, never a redirect (Facebook Login shows "Invalid App ID", "URL Blocked" and
   * "Invalid Scopes" pages). Threads documents no PKCE: code_challenge and other parameters are refused.
   */
  function preAuthorize(q: Params): PreAuth {
    const page = (status: number, title: string, message: string) => ({ ok: false as const, status, title, message });
    const value = (name: string) => (typeof q[name] === 'string' ? (q[name] as string) : undefined);
    const unknown = Object.keys(q).filter((name) => !['client_id', 'redirect_uri', 'scope', 'response_type', 'state'].includes(name));
    if (unknown.length) return page(400, 'Error', `Unknown parameter ${unknown.join(', ')} (Threads does not document it: the fake refuses it)`);
    const clientId = value('client_id');
    if (!clientId) return page(400, 'Error', 'The parameter client_id is required.');
    if (clientId !== fake.app.appId) return page(400, 'Invalid App ID', 'The provided app ID does not look like a valid app ID.');
    const redirectUri = value('redirect_uri');
    if (!redirectUri) return page(400, 'Error', 'The parameter redirect_uri is required.');
    if (!fake.app.redirectUris.includes(redirectUri)) {
      return page(400, 'URL Blocked', "This redirect failed because the redirect URI is not whitelisted in the app's Client OAuth Settings. Make sure Client and Web OAuth Login are on and add all your app domains as Valid OAuth Redirect URIs.");
    }
    if (value('response_type') !== 'code') return page(400, 'Error', 'The parameter response_type must be code.');
    const scopes = (value('scope') ?? '').split(/[\s,]+/).filter(Boolean);
    if (!scopes.length) return page(400, 'Error', 'The parameter scope is required.');
    const invalidScopes = scopes.filter((scope) => !THREADS_SCOPES.includes(scope));
    if (invalidScopes.length) return page(400, 'Invalid Scopes', `Invalid Scopes: ${invalidScopes.join(', ')}.`);
    // [tokens]: "Note: threads_basic is required."
    if (!scopes.includes('threads_basic')) return page(400, 'Invalid Scopes', 'threads_basic is required.');
    return { ok: true, redirectUri, scopes: [...new Set(scopes)], state: value('state') };
  }

  /** The redirect back: `code` (and `state`) in the query, `#_` appended ([tokens]: "#_ will be appended to the end of the redirect URI"). */
  function back(res: Response, pre: Extract<PreAuth, { ok: true }>, fields: Record<string, string>) {
    const target = new URL(pre.redirectUri);
    for (const [name, value] of Object.entries(fields)) target.searchParams.set(name, value);
    if (pre.state !== undefined) target.searchParams.set('state', pre.state);
    target.hash = '_';
    res.redirect(302, target.toString());
  }
  function approve(res: Response, pre: Extract<PreAuth, { ok: true }>, account: ThreadsAccount) {
    const issuedAt = now();
    const code: ThreadsCode = {
      value: `AQ${randomBytes(48).toString('base64url')}`,
      appId: fake.app.appId,
      accountId: account.id,
      redirectUri: pre.redirectUri,
      scopes: pre.scopes.filter((scope) => scope === 'threads_basic' || !fake.withheldScopes.has(scope)),
      issuedAt,
      expiresAt: issuedAt + CODE_TTL_MS,
      usedAt: null,
    };
    fake.codes.set(code.value, code);
    back(res, pre, { code: code.value });
  }
  /** [ig-display] "Canceled Authorization": error_reason=user_denied, error=access_denied, error_description. */
  const deny = (res: Response, pre: Extract<PreAuth, { ok: true }>) =>
    back(res, pre, { error: 'access_denied', error_reason: 'user_denied', error_description: 'The user denied your request.' });

  function authorizePage(req: Request, res: Response) {
    const q = queryOf(req);
    const pre = preAuthorize(q);
    if (!pre.ok) return void res.status(pre.status).type('html').send(page(pre.title, `<p class="error">${escapeHtml(pre.message)}</p>`));
    if (consent === 'deny') return deny(res, pre);
    if (consent) return approve(res, pre, consent);
    if (!signedIn) return void res.status(401).type('html').send(page('Log in', '<p>Nobody is signed in on this fake Threads.</p>'));
    const formToken = randomBytes(24).toString('base64url');
    consentForms.set(formToken, signedIn.id);
    const fields = { form_token: formToken, client_id: fake.app.appId, redirect_uri: pre.redirectUri, scope: pre.scopes.join(','), response_type: 'code', state: pre.state };
    const hidden = (extra: Record<string, string>) =>
      Object.entries({ ...fields, ...extra }).filter(([, value]) => value !== undefined).map(([name, value]) => `<input type="hidden" name="${name}" value="${escapeHtml(value!)}">`).join('');
    res.type('html').send(page('Threads', `
      <p class="signed-in">Signed in as <strong>@${escapeHtml(signedIn.username)}</strong></p>
      <h2><strong>${escapeHtml(fake.app.name)}</strong> is requesting access to your Threads profile</h2>
      <ul class="permissions">${pre.scopes.map((scope) => `<li><code>${escapeHtml(scope)}</code></li>`).join('')}</ul>
      <form method="post" action="${authorizePath}">${hidden({ decision: 'allow' })}<button type="submit">Allow</button></form>
      <form method="post" action="${authorizePath}">${hidden({ decision: 'cancel' })}<button type="submit">Cancel</button></form>`));
  }

  function consentSubmit(req: Request, res: Response) {
    const params = readParams(req, res);
    const formToken = text(params, 'form_token') ?? '';
    const accountId = consentForms.get(formToken);
    consentForms.delete(formToken);
    const account = accountId ? fake.accounts.get(accountId) : undefined;
    if (!account) return void res.status(400).type('html').send(page('Error', '<p class="error">This form has expired or was not rendered by Threads.</p>'));
    const { form_token: _token, decision, ...rest } = params;
    const pre = preAuthorize(rest);
    if (!pre.ok) return void res.status(pre.status).type('html').send(page(pre.title, `<p class="error">${escapeHtml(pre.message)}</p>`));
    if (decision === 'allow') return approve(res, pre, account);
    if (decision === 'cancel') return deny(res, pre);
    res.status(400).type('html').send(page('Error', '<p class="error">Unknown decision.</p>'));
  }

  // --- The token endpoints (graph.threads.net, documented without a version; taken with it too) ---

  /**
   * [tokens] step 2: POST /oauth/access_token with client_id, client_secret, grant_type=authorization_code,
   * redirect_uri, code, as a form ([sample]) or in the query (the Postman collection). The refusals are Facebook
   * Login's ([fb-login]): an unknown app 101, a wrong secret 1, a code used (36009), expired (36007), for another
   * redirect URI (36008) or unknown. A failed exchange leaves the code unspent.
   */
  function codeExchange(req: Request, res: Response) {
    if (faulted('token', req, res)) return;
    if (req.method !== 'POST') return noObject(res, req.method, 'oauth/access_token');
    const params = readParams(req, res);
    if (unknownParams(res, params, ['client_id', 'client_secret', 'grant_type', 'redirect_uri', 'code'])) return;
    res.set('Cache-Control', 'no-store');
    if (!text(params, 'client_id')) return required(res, 'client_id');
    if (text(params, 'client_id') !== fake.app.appId) return fail(res, { status: 400, type: 'OAuthException', code: 101, message: 'Error validating application. Invalid application ID.' });
    if (text(params, 'client_secret') !== fake.app.appSecret) return fail(res, { status: 400, type: 'OAuthException', code: 1, message: 'Error validating client secret.' });
    if (text(params, 'grant_type') !== 'authorization_code') return invalid(res, 'grant_type must be authorization_code');
    if (!text(params, 'redirect_uri')) return required(res, 'redirect_uri');
    const value = text(params, 'code');
    if (!value) return required(res, 'code');
    const code = fake.codes.get(value);
    if (!code || code.appId !== fake.app.appId) return fail(res, { status: 400, type: 'OAuthException', code: 100, message: 'Invalid verification code format.' });
    if (code.usedAt !== null) return fail(res, { status: 400, type: 'OAuthException', code: 100, subcode: 36009, message: 'This authorization code has been used.' });
    if (now() >= code.expiresAt) return fail(res, { status: 400, type: 'OAuthException', code: 100, subcode: 36007, message: 'This authorization code has expired.' });
    if (code.redirectUri !== text(params, 'redirect_uri')) {
      return fail(res, { status: 400, type: 'OAuthException', code: 100, subcode: 36008, message: 'Error validating verification code. Please make sure your redirect_uri is identical to the one you used in the OAuth dialog request' });
    }
    code.usedAt = now();
    const token = issue(code.accountId, code.scopes, 'short', null);
    // `{ access_token, user_id }`; user_id a JSON number ([observed-user-id]) written digit for digit.
    const userId = userIdAsNumber ? code.accountId : JSON.stringify(code.accountId);
    res.type('application/json').send(`{"access_token":${JSON.stringify(token.value)},"user_id":${userId}}`);
  }

  const longAnswer = (res: Response, token: ThreadsToken) =>
    res.json({ access_token: token.value, token_type: 'bearer', expires_in: Math.floor((token.expiresAt - now()) / 1000) });

  /**
   * [long-lived] GET /access_token?grant_type=th_exchange_token&client_secret=…&access_token=SHORT: "Expired
   * short-lived tokens cannot be exchanged". A long-lived token given here is refused (Meta says only that a
   * short-lived one is exchanged; the fake refuses the other so a client's mix-up shows).
   */
  function exchange(req: Request, res: Response) {
    if (faulted('token', req, res)) return;
    if (req.method !== 'GET') return noObject(res, req.method, 'access_token');
    const params = readParams(req, res);
    if (unknownParams(res, params, ['grant_type', 'client_secret'])) return;
    res.set('Cache-Control', 'no-store');
    if (text(params, 'grant_type') !== 'th_exchange_token') return invalid(res, 'grant_type must be th_exchange_token');
    if (!text(params, 'client_secret')) return required(res, 'client_secret');
    const value = tokenValue(req, params);
    if (!value) return required(res, 'access_token');
    const token = fake.tokens.get(value);
    const problem = tokenProblem(token);
    if (problem) return fail(res, problem);
    if (text(params, 'client_secret') !== fake.app.appSecret || token!.appId !== fake.app.appId) return fail(res, { status: 400, type: 'OAuthException', code: 1, message: 'Error validating client secret.' });
    if (token!.kind !== 'short') return invalid(res, 'access_token must be a short-lived token: this one is already long-lived (refresh it with th_refresh_token)');
    longAnswer(res, issue(token!.accountId, token!.scopes, 'long', token!.value));
  }

  /**
   * [long-lived] GET /refresh_access_token?grant_type=th_refresh_token&access_token=LONG: an unexpired long-lived
   * token "at least 24 hours old", with threads_basic; valid 60 days again. How Meta words a refusal for a token too
   * young is not documented: the fake answers code 100 (the token stays good).
   */
  function refresh(req: Request, res: Response) {
    if (faulted('token', req, res)) return;
    if (req.method !== 'GET') return noObject(res, req.method, 'refresh_access_token');
    const params = readParams(req, res);
    if (unknownParams(res, params, ['grant_type'])) return;
    res.set('Cache-Control', 'no-store');
    if (text(params, 'grant_type') !== 'th_refresh_token') return invalid(res, 'grant_type must be th_refresh_token');
    const value = tokenValue(req, params);
    if (!value) return required(res, 'access_token');
    const token = fake.tokens.get(value);
    const problem = tokenProblem(token);
    if (problem) return fail(res, problem);
    if (token!.kind !== 'long') return invalid(res, 'access_token must be a long-lived token: exchange a short-lived one with th_exchange_token');
    if (!token!.scopes.includes('threads_basic')) return fail(res, { status: 403, type: 'OAuthException', code: 10, message: '(#10) Application does not have permission for this action', userMessage: 'threads_basic was not granted' });
    const age = now() - token!.issuedAt;
    if (age < REFRESH_MIN_AGE_MS) {
      return fail(res, { status: 400, type: 'OAuthException', code: 100, message: `(#100) The access token can be refreshed once it is at least 24 hours old; it is ${Math.floor(age / 60_000)} minutes old` });
    }
    const refreshed = issue(token!.accountId, token!.scopes, 'long', token!.value);
    if (options.refreshRevokesOld) token!.revoked = { subcode: 467, message: 'Error validating access token: The session is invalid because the token was refreshed.' };
    longAnswer(res, refreshed);
  }

  // --- Media: what Meta's crawler reads from image_url and video_url ---

  /** Reads `url` as Meta would ([get-started] "We download media"): 200, within the time, within the size, of a known type. */
  async function download(url: string, kind: 'image' | 'video'): Promise<ThreadsFetch> {
    const result: ThreadsFetch = { url, state: 'pending', httpStatus: null, contentType: null, mimeType: null, size: 0, sha256: null, bytes: null, failure: null };
    const failed = (reason: NonNullable<ThreadsFetch['failure']>['reason'], detail: string) => Object.assign(result, { state: 'failed', failure: { reason, detail } });
    const limit = kind === 'image' ? maxImageBytes : maxVideoBytes;
    try {
      const response = await fetch(url, { redirect: 'follow', signal: AbortSignal.timeout(fetchTimeoutMs), headers: { 'user-agent': CRAWLER_USER_AGENT, accept: '*/*' } });
      result.httpStatus = response.status;
      result.contentType = response.headers.get('content-type');
      if (response.status !== 200) {
        await response.body?.cancel();
        return failed('status', `${url} answered ${response.status}`);
      }
      const chunks: Buffer[] = [];
      const reader = response.body?.getReader();
      while (reader) {
        const { done, value } = await reader.read();
        if (done) break;
        result.size += value.byteLength;
        if (result.size > limit) {
          await reader.cancel();
          return failed('size', `${url} is over ${limit} bytes`);
        }
        chunks.push(Buffer.from(value));
      }
      const bytes = Buffer.concat(chunks);
      result.sha256 = createHash('sha256').update(bytes).digest('hex');
      result.bytes = bytes;
      result.mimeType = (await fileTypeFromBuffer(bytes))?.mime ?? null;
      const allowed = kind === 'image' ? IMAGE_TYPES : VIDEO_TYPES;
      if (!result.mimeType || !allowed.includes(result.mimeType)) return failed('type', `${url} is ${result.mimeType ?? 'not a known type'}, not ${allowed.join(' or ')}`);
      result.state = 'done';
      return result;
    } catch (error) {
      const timeout = (error as Error).name === 'TimeoutError' || (error as Error).name === 'AbortError';
      return failed(timeout ? 'timeout' : 'unreachable', `${url}: ${(error as Error).message}${(error as { cause?: Error }).cause ? ` (${(error as { cause: Error }).cause.message})` : ''}`);
    }
  }

  /**
   * What a failed fetch makes of a container: a video's error_message is one [troubleshooting] lists
   * (FAILED_DOWNLOADING_VIDEO, FAILED_PROCESSING_VIDEO); an image's is UNKNOWN ([observed-unknown]; the list has no
   * image message). The reason stays in `container.fetch.failure` for tests.
   */
  const errorMessageOf = (fetched: ThreadsFetch, kind: 'image' | 'video') =>
    kind === 'image' ? 'UNKNOWN' : ['type', 'size'].includes(fetched.failure!.reason) ? 'FAILED_PROCESSING_VIDEO' : 'FAILED_DOWNLOADING_VIDEO';

  /** `mediaFailure: 'request'` for images: the creation answers Meta's media error ([observed-2207052], [ig-errors]). */
  function mediaRefusal(fetched: ThreadsFetch): GraphError {
    const reason = fetched.failure!.reason;
    if (reason === 'size') {
      return { status: 400, type: 'OAuthException', code: 36000, subcode: 2207004, message: 'The image size is too large.', isTransient: false, userTitle: 'Image size too large', userMessage: `The image is too large to download. It should be less than ${Math.round(maxImageBytes / 1024 / 1024)} MiB.` };
    }
    if (reason === 'timeout') return { status: 400, type: 'OAuthException', code: -2, subcode: 2207003, message: 'It takes too long to download the media.', isTransient: true, userMessage: 'It takes too long to download the media.' };
    return { status: 400, type: 'OAuthException', code: 1, subcode: 2207052, message: 'An unknown error has occurred.', isTransient: false, userTitle: 'Media download has failed.', userMessage: "The media could not be fetched from this URI. Please check the URI and try again. The media URI doesn't meet our requirements." };
  }

  // --- Containers ---

  /** A container's status now ([troubleshooting]), and its error_message when ERROR. */
  function statusOf(container: ThreadsContainer): { status: ContainerStatus; errorMessage?: string } {
    if (container.publishedAt !== null) return { status: 'PUBLISHED' };
    if (container.errorMessage) return { status: 'ERROR', errorMessage: container.errorMessage };
    const children = container.children.map((id) => fake.containers.get(id)!);
    if (now() >= container.createdAt + CONTAINER_TTL_MS || children.some((child) => now() >= child.createdAt + CONTAINER_TTL_MS)) return { status: 'EXPIRED' };
    const failedChild = children.find((child) => statusOf(child).status === 'ERROR');
    if (failedChild) return { status: 'ERROR', errorMessage: statusOf(failedChild).errorMessage };
    const processed = now() >= container.readyAt && container.fetch?.state !== 'pending' && children.every((child) => statusOf(child).status === 'FINISHED');
    if (!processed) return { status: 'IN_PROGRESS' };
    if (container.plannedError) return { status: 'ERROR', errorMessage: container.plannedError };
    return { status: 'FINISHED' };
  }

  const isHttpUrl = (value: string) => {
    const parsed = URL.parse(value);
    return Boolean(parsed && (parsed.protocol === 'http:' || parsed.protocol === 'https:'));
  };
  const boolParam = (value: string | undefined) => (value === undefined ? undefined : value === 'true' || value === '1' ? true : value === 'false' || value === '0' ? false : null);

  /**
   * POST /{threads-user-id}/threads ([posts], [reference]): threads_basic and threads_content_publish, and
   * threads_manage_replies for a reply ([get-started]: "Required for making POST calls to reply endpoints").
   */
  async function createContainer(req: Request, res: Response, node: string) {
    if (faulted('containers', req, res)) return;
    const params = readParams(req, res);
    const caller = authorize(req, res, params, ['threads_basic', 'threads_content_publish'], node);
    if (!caller) return;
    if (!isSelf(node, caller)) return noObject(res, 'post', node);
    if (unknownParams(res, params, CONTAINER_PARAMS, CONTAINER_NOT_MODELLED)) return;
    const p = (name: string) => text(params, name);

    // media_type: "Required. Values: TEXT, IMAGE, VIDEO, CAROUSEL" ([reference]).
    const mediaType = p('media_type');
    if (!mediaType) return required(res, 'media_type');
    if (!['TEXT', 'IMAGE', 'VIDEO', 'CAROUSEL'].includes(mediaType)) return invalid(res, 'media_type must be one of the following values: TEXT, IMAGE, VIDEO, CAROUSEL');
    const isCarouselItem = boolParam(p('is_carousel_item'));
    if (isCarouselItem === null) return invalid(res, 'is_carousel_item must be a boolean (true or false)');
    const item = isCarouselItem === true;
    if (item && !['IMAGE', 'VIDEO'].includes(mediaType)) return invalid(res, 'is_carousel_item is for IMAGE and VIDEO containers, the items of a carousel');
    // What each media type takes. The fake refuses a parameter where Meta documents no use for it.
    const only = (name: string, types: string[], why: string) => {
      if (params[name] === undefined || types.includes(mediaType)) return false;
      invalid(res, `${name} ${why}`);
      return true;
    };
    if (only('image_url', ['IMAGE'], 'is taken with media_type=IMAGE only')) return;
    if (only('video_url', ['VIDEO'], 'is taken with media_type=VIDEO only')) return;
    if (only('children', ['CAROUSEL'], 'is taken with media_type=CAROUSEL only')) return;
    // [accessibility]: alt text "for images and videos only … isn't available for text-only posts"; a carousel's
    // alt texts are its items'.
    if (only('alt_text', ['IMAGE', 'VIDEO'], 'is taken for images and videos only (a carousel takes it on each item)')) return;
    // The Postman collection: link_attachment "only available for text posts".
    if (only('link_attachment', ['TEXT'], 'is only available for text posts')) return;
    if (item) {
      // A carousel's text, reply and topic are the carousel container's ([posts] carousel step 2); the fake refuses
      // them on an item (Meta would ignore them).
      for (const name of ['text', 'reply_to_id', 'reply_control', 'topic_tag']) if (p(name) !== undefined) return invalid(res, `${name} is taken by the CAROUSEL container, not by a carousel item (Meta would ignore it: the fake refuses it)`);
    }
    const postText = p('text');
    if (mediaType === 'TEXT' && !postText && !p('link_attachment')) return invalid(res, 'text is required for media_type=TEXT');
    if (mediaType === 'IMAGE' && !p('image_url')) return required(res, 'image_url');
    if (mediaType === 'VIDEO' && !p('video_url')) return required(res, 'video_url');
    for (const name of ['image_url', 'video_url', 'link_attachment']) if (p(name) !== undefined && !isHttpUrl(p(name)!)) return invalid(res, `${name} must be an http or https URL`);

    // [posts]: 500 characters, emojis counted as their UTF-8 bytes.
    if (postText !== undefined) {
      const length = threadsLength(postText);
      if (length > THREADS_TEXT_LIMIT) return invalid(res, `text must be at most ${THREADS_TEXT_LIMIT} characters (emojis count as their UTF-8 bytes); it counts ${length}`);
    }
    // [text-attachments]: more than 5 unique links fail "during the media creation step" with
    // THREADS_API__LINK_LIMIT_EXCEEDED; how Meta wraps that code in the error object is not documented.
    const links = threadsLinks(postText ?? '', p('link_attachment'));
    if (links.length > THREADS_LINK_LIMIT) {
      return fail(res, { status: 400, type: 'THApiException', code: 100, message: `THREADS_API__LINK_LIMIT_EXCEEDED: a post can have at most ${THREADS_LINK_LIMIT} links; this one has ${links.length}`, userMessage: 'THREADS_API__LINK_LIMIT_EXCEEDED' });
    }
    // [sample]: a topic tag is 1 to 50 characters without periods or ampersands; one a post (one parameter).
    const topicTag = p('topic_tag');
    if (topicTag !== undefined && ([...topicTag].length < 1 || [...topicTag].length > 50 || /[.&]/.test(topicTag))) return invalid(res, 'topic_tag must be 1 to 50 characters, without periods (.) or ampersands (&)');
    const replyControl = p('reply_control');
    if (replyControl !== undefined && !REPLY_CONTROLS.includes(replyControl)) return invalid(res, `reply_control must be one of the following values: ${REPLY_CONTROLS.join(', ')}`);

    // reply_to_id: a post that exists (anyone's: posts are public), replies need threads_manage_replies.
    const replyToId = p('reply_to_id');
    if (replyToId !== undefined) {
      const missing = ['threads_manage_replies'].filter((scope) => !caller.token.scopes.includes(scope));
      if (missing.length) return fail(res, { status: 403, type: 'OAuthException', code: 10, message: '(#10) Application does not have permission for this action', userMessage: 'Replying needs threads_manage_replies' });
      const parent = fake.posts.get(replyToId);
      if (!parent || parent.deletedAt || parent.carouselParentId) return invalid(res, `reply_to_id ${replyToId} is not a post that exists`);
    }

    // children: "A comma-separated list of up to 20 container IDs … at least 2 and up to 20" (Postman); a JSON list too.
    let children: string[] = [];
    if (mediaType === 'CAROUSEL') {
      const given = params.children;
      if (given === undefined || given === '') return required(res, 'children');
      children = (Array.isArray(given) ? given : given.split(',')).map((id) => id.trim()).filter(Boolean);
      if (children.length < CAROUSEL_MIN || children.length > CAROUSEL_MAX) return invalid(res, `children must name ${CAROUSEL_MIN} to ${CAROUSEL_MAX} containers; it names ${children.length}`);
      if (new Set(children).size !== children.length) return invalid(res, 'children names a container twice');
      for (const id of children) {
        const child = fake.containers.get(id);
        if (!child || child.accountId !== caller.account.id) return invalid(res, `children: ${id} is not a container of this account`);
        if (!child.isCarouselItem) return invalid(res, `children: ${id} was not made with is_carousel_item=true`);
        if (child.carouselId) return invalid(res, `children: ${id} is already in carousel ${child.carouselId}`);
        const status = statusOf(child).status;
        if (status === 'ERROR' || status === 'EXPIRED') return invalid(res, `children: ${id} is ${status}`);
      }
    }

    // Images and videos are fetched now. `request` (images): the creation waits for it and answers the failure.
    const kind = mediaType === 'IMAGE' ? 'image' : mediaType === 'VIDEO' ? 'video' : null;
    const mediaUrl = p('image_url') ?? p('video_url');
    let fetched: ThreadsFetch | null = null;
    if (kind === 'image' && fake.mediaFailure === 'request') {
      fetched = await download(mediaUrl!, 'image');
      if (fetched.state === 'failed') return fail(res, mediaRefusal(fetched));
    }

    const container: ThreadsContainer = {
      id: nextId(),
      accountId: caller.account.id,
      mediaType: mediaType as ContainerMediaType,
      isCarouselItem: item,
      text: postText ?? null,
      imageUrl: p('image_url') ?? null,
      videoUrl: p('video_url') ?? null,
      altText: p('alt_text') ?? null,
      children,
      replyToId: replyToId ?? null,
      replyControl: replyControl ?? null,
      linkAttachment: p('link_attachment') ?? null,
      topicTag: topicTag ?? null,
      params: Object.fromEntries(Object.entries(params).filter(([name]) => name !== 'access_token').map(([name, value]) => [name, [value].flat().join(',')])),
      createdAt: now(),
      readyAt: now() + fake.processingMs,
      fetch: fetched,
      errorMessage: null,
      plannedError: plannedFailures.shift() ?? null,
      carouselId: null,
      publishedAt: null,
      postId: null,
    };
    fake.containers.set(container.id, container);
    for (const id of children) fake.containers.get(id)!.carouselId = container.id;
    if (kind && !fetched) {
      container.fetch = { url: mediaUrl!, state: 'pending', httpStatus: null, contentType: null, mimeType: null, size: 0, sha256: null, bytes: null, failure: null };
      const work = download(mediaUrl!, kind).then((result) => {
        container.fetch = result;
        if (result.state === 'failed') container.errorMessage = errorMessageOf(result, kind);
      });
      pending.add(work);
      void work.finally(() => pending.delete(work));
    }
    res.json({ id: container.id });
  }

  /** [troubleshooting] GET /{container-id}?fields=status,error_message (and id); threads_basic; the caller's own. */
  function containerStatus(req: Request, res: Response, params: Params, container: ThreadsContainer) {
    const caller = authorize(req, res, params, ['threads_basic']);
    if (!caller) return;
    if (container.accountId !== caller.account.id) return noObject(res, 'get', container.id);
    if (unknownParams(res, params, ['fields'])) return;
    const fields = fieldsOf(params, ['id']);
    if (checkFields(res, fields, CONTAINER_FIELDS)) return;
    const { status, errorMessage } = statusOf(container);
    // error_message only when there is one ([troubleshooting]'s examples: FINISHED answers status and id).
    res.json(pick({ id: container.id, status, error_message: errorMessage }, fields));
  }

  // --- Publishing ---

  const mediaNotFound = (res: Response, id: string) =>
    fail(res, {
      status: 400, type: 'OAuthException', code: 24, subcode: 4279009, isTransient: false, message: 'The requested resource does not exist',
      userTitle: 'Media Not Found', userMessage: `The media with id ${id} cannot be found.`,
    });

  /**
   * POST /{threads-user-id}/threads_publish?creation_id=… ([posts] step 2): threads_basic and threads_content_publish.
   * A container not finished (IN_PROGRESS, ERROR), not the caller's, unknown, a carousel item or already published is
   * "Media Not Found" ([observed-24]); an expired one [ig-errors] 2207020. The quota is checked here ([overview]:
   * "enforced on the POST /{threads-user-id}/threads_publish endpoint"), answered as [ig-errors]' code 9 / 2207042.
   */
  function publish(req: Request, res: Response, node: string) {
    if (faulted('publish', req, res)) return;
    const params = readParams(req, res);
    const caller = authorize(req, res, params, ['threads_basic', 'threads_content_publish'], node);
    if (!caller) return;
    if (!isSelf(node, caller)) return noObject(res, 'post', node);
    if (unknownParams(res, params, ['creation_id'])) return;
    const id = text(params, 'creation_id');
    if (!id) return required(res, 'creation_id');
    const container = fake.containers.get(id);
    if (!container || container.accountId !== caller.account.id || container.isCarouselItem) return mediaNotFound(res, id);
    const { status } = statusOf(container);
    if (status === 'EXPIRED') {
      return fail(res, { status: 400, type: 'OAuthException', code: -2, subcode: 2207020, isTransient: false, message: 'The media you are trying to access has expired. Please try to upload again.', userMessage: 'The media you are trying to access has expired. Please try to upload again.' });
    }
    if (status !== 'FINISHED') return mediaNotFound(res, id);
    let parent: ThreadsPost | undefined;
    if (container.replyToId) {
      if (!caller.token.scopes.includes('threads_manage_replies')) return fail(res, { status: 403, type: 'OAuthException', code: 10, message: '(#10) Application does not have permission for this action', userMessage: 'Replying needs threads_manage_replies' });
      parent = fake.posts.get(container.replyToId);
      if (!parent || parent.deletedAt) return invalid(res, `reply_to_id ${container.replyToId}: the post replied to no longer exists`);
    }
    const used = usage(caller.account.id);
    const [count, total, what] = parent ? [used.replies, fake.quotas.replies, 'replies'] : [used.posts, fake.quotas.posts, 'posts'];
    if (count >= total) {
      return fail(res, {
        status: 400, type: 'OAuthException', code: 9, subcode: 2207042, isTransient: false, message: 'Application request limit reached',
        userTitle: 'Publishing limit reached', userMessage: `You reached maximum number of ${what} that is allowed to be published by the Threads API: ${total} in 24 hours.`,
      });
    }
    const items = container.children.map((childId) => {
      const child = fake.containers.get(childId)!;
      child.publishedAt = now();
      return child;
    });
    const post = makePost(caller.account, {
      containerId: container.id,
      mediaType: ({ TEXT: 'TEXT_POST', IMAGE: 'IMAGE', VIDEO: 'VIDEO', CAROUSEL: 'CAROUSEL_ALBUM' } as const)[container.mediaType],
      text: container.text, parent, altText: container.altText, linkAttachment: container.linkAttachment, topicTag: container.topicTag,
      replyControl: container.replyControl, viaApi: true, media: container.fetch, children: [],
    });
    post.children = items.map((child) => {
      const itemPost = makePost(caller.account, {
        containerId: child.id, mediaType: child.mediaType === 'VIDEO' ? 'VIDEO' : 'IMAGE', text: null, parent: undefined, altText: child.altText,
        linkAttachment: null, topicTag: null, replyControl: null, viaApi: true, media: child.fetch, children: [],
      });
      itemPost.carouselParentId = post.id;
      child.postId = itemPost.id;
      return itemPost.id;
    });
    container.publishedAt = now();
    container.postId = post.id;
    res.json({ id: post.id });
  }

  function makePost(account: ThreadsAccount, input: Omit<ThreadsPost, 'id' | 'accountId' | 'shortcode' | 'permalink' | 'publishedAt' | 'replyToId' | 'rootPostId' | 'carouselParentId' | 'deletedAt'> & { parent: ThreadsPost | undefined }): ThreadsPost {
    const { parent, ...rest } = input;
    // Shortcodes as the Postman collection's permalink example (DCkkKl_OGb1); the permalink on the fake's origin.
    const shortcode = randomBytes(8).toString('base64url').slice(0, 11);
    const post: ThreadsPost = {
      ...rest,
      id: nextId(),
      accountId: account.id,
      shortcode,
      permalink: `${url}/@${account.username}/post/${shortcode}`,
      publishedAt: now(),
      replyToId: parent?.id ?? null,
      rootPostId: parent ? (parent.rootPostId ?? parent.id) : null,
      carouselParentId: null,
      deletedAt: null,
    };
    fake.posts.set(post.id, post);
    return post;
  }

  /** Graph's timestamps: 2024-09-12T23:17:39+0000. */
  const timestamp = (ms: number) => new Date(ms).toISOString().replace(/\.\d{3}Z$/, '+0000');

  /** [reference] media retrieval: a media object's fields (absent ones left out). */
  function postJson(post: ThreadsPost, viewer: ThreadsAccount, fields: string[]) {
    const author = fake.accounts.get(post.accountId)!;
    const live = (id: string | null) => (id && fake.posts.get(id) && !fake.posts.get(id)!.deletedAt ? { id } : undefined);
    return pick({
      id: post.id,
      media_product_type: 'THREADS',
      media_type: post.mediaType,
      media_url: post.media?.bytes ? `${url}/media/${post.id}` : undefined,
      permalink: post.permalink,
      owner: { id: author.id },
      username: author.username,
      text: post.text ?? undefined,
      timestamp: timestamp(post.publishedAt),
      shortcode: post.shortcode,
      children: post.children.length ? { data: post.children.map((id) => ({ id })) } : undefined,
      is_quote_post: false,
      alt_text: post.altText ?? undefined,
      link_attachment_url: post.linkAttachment ?? undefined,
      has_replies: [...fake.posts.values()].some((other) => other.replyToId === post.id && !other.deletedAt),
      is_reply: post.replyToId !== null,
      is_reply_owned_by_me: post.replyToId !== null ? post.accountId === viewer.id : undefined,
      root_post: live(post.rootPostId),
      replied_to: live(post.replyToId),
      topic_tag: post.topicTag ?? undefined,
    }, fields);
  }

  /** GET /{threads-media-id} ([reference]): threads_basic; the caller's own posts (the API shows posts to their author). */
  function getPost(req: Request, res: Response, params: Params, post: ThreadsPost) {
    if (faulted('media', req, res)) return;
    const caller = authorize(req, res, params, ['threads_basic']);
    if (!caller) return;
    if (post.accountId !== caller.account.id || post.deletedAt) return noObject(res, 'get', post.id);
    if (unknownParams(res, params, ['fields'])) return;
    const fields = fieldsOf(params, ['id']);
    if (checkFields(res, fields, POST_FIELDS, POST_FIELDS_NOT_MODELLED)) return;
    res.json(postJson(post, caller.account, fields));
  }

  /**
   * GET /{threads-user-id}/threads: the account's posts, newest first ("Retrieve a list of all a user's threads";
   * replies are /replies, not modelled). limit (default 25, at most 100), since/until (Unix seconds), after/before
   * cursors.
   */
  /**
   * GET /{threads-user-id}/threads, the account's posts, or /replies, its replies ([retrieve-and-manage-replies]: "A
   * user's replies", threads_basic and threads_read_replies), newest first.
   */
  function listPosts(req: Request, res: Response, node: string, replies = false) {
    const params = readParams(req, res);
    const caller = authorize(req, res, params, replies ? ['threads_basic', 'threads_read_replies'] : ['threads_basic'], node);
    if (!caller) return;
    if (!isSelf(node, caller)) return noObject(res, 'get', node);
    if (unknownParams(res, params, ['fields', 'limit', 'since', 'until', 'after', 'before'])) return;
    const fields = fieldsOf(params, ['id']);
    if (checkFields(res, fields, POST_FIELDS, POST_FIELDS_NOT_MODELLED)) return;
    const limitText = text(params, 'limit');
    const limit = limitText === undefined ? 25 : Number(limitText);
    if (!Number.isInteger(limit) || limit < 1 || limit > 100) return invalid(res, 'limit must be an integer from 1 to 100');
    const seconds = (name: string) => {
      const value = text(params, name);
      return value === undefined ? undefined : /^\d+$/.test(value) ? Number(value) * 1000 : NaN;
    };
    const since = seconds('since');
    const until = seconds('until');
    if (Number.isNaN(since) || Number.isNaN(until)) return invalid(res, 'since and until are Unix timestamps in seconds');
    let posts = fake.postsOf(caller.account, { replies }).filter((post) => Boolean(post.replyToId) === replies).reverse()
      .filter((post) => (since === undefined || post.publishedAt >= since) && (until === undefined || post.publishedAt <= until));
    const cursor = (name: string) => {
      const value = text(params, name);
      return value === undefined ? undefined : Buffer.from(value, 'base64url').toString('utf8');
    };
    const after = cursor('after');
    const before = cursor('before');
    if (after !== undefined) posts = posts.slice(posts.findIndex((post) => post.id === after) + 1);
    if (before !== undefined) posts = posts.slice(0, Math.max(0, posts.findIndex((post) => post.id === before)));
    const page = posts.slice(0, limit);
    const toCursor = (id: string) => Buffer.from(id).toString('base64url');
    res.json({
      data: page.map((post) => postJson(post, caller.account, fields)),
      ...(page.length ? { paging: { cursors: { before: toCursor(page[0]!.id), after: toCursor(page.at(-1)!.id) } } } : {}),
    });
  }

  /**
   * GET /{threads-user-id}/threads_publishing_limit ([overview]): threads_basic and threads_content_publish; the
   * reply fields need threads_manage_replies ([retrieve-and-manage-replies]), the delete fields threads_delete.
   * Without `fields` the fake answers quota_usage and config (Meta's examples always name them).
   */
  function publishingLimit(req: Request, res: Response, node: string) {
    if (faulted('limit', req, res)) return;
    const params = readParams(req, res);
    const caller = authorize(req, res, params, ['threads_basic', 'threads_content_publish'], node);
    if (!caller) return;
    if (!isSelf(node, caller)) return noObject(res, 'get', node);
    if (unknownParams(res, params, ['fields'])) return;
    const fields = fieldsOf(params, ['quota_usage', 'config']);
    if (checkFields(res, fields, LIMIT_FIELDS, ['location_search_quota_usage', 'location_search_config'])) return;
    const needs = [...new Set(fields.flatMap((field) => (field.startsWith('reply_') ? ['threads_manage_replies'] : field.startsWith('delete_') ? ['threads_delete'] : [])))];
    const missing = needs.filter((scope) => !caller.token.scopes.includes(scope));
    if (missing.length) return fail(res, { status: 403, type: 'OAuthException', code: 10, message: '(#10) Application does not have permission for this action', userMessage: `The token was not granted ${missing.join(', ')}` });
    const used = usage(caller.account.id);
    const config = (total: number) => ({ quota_total: total, quota_duration: QUOTA_WINDOW_MS / 1000 });
    res.json({
      data: [pick({
        quota_usage: used.posts, config: config(fake.quotas.posts),
        reply_quota_usage: used.replies, reply_config: config(fake.quotas.replies),
        delete_quota_usage: used.deletes, delete_config: config(fake.quotas.deletes),
      }, fields)],
    });
  }

  /** [delete] DELETE /{threads-media-id}: threads_basic and threads_delete; the caller's own post; 100 a day. */
  function deletePost(req: Request, res: Response, id: string) {
    if (faulted('delete', req, res)) return;
    const params = readParams(req, res);
    const caller = authorize(req, res, params, ['threads_basic', 'threads_delete']);
    if (!caller) return;
    if (unknownParams(res, params, [])) return;
    const post = fake.posts.get(id);
    if (!post || post.deletedAt || post.accountId !== caller.account.id || post.carouselParentId) return noObject(res, 'delete', id);
    if (usage(caller.account.id).deletes >= fake.quotas.deletes) {
      return fail(res, { status: 400, type: 'OAuthException', code: 9, isTransient: false, message: 'Application request limit reached', userMessage: `The Delete endpoint allows ${fake.quotas.deletes} deletes a day` });
    }
    post.deletedAt = now();
    deletions.push({ accountId: caller.account.id, at: now() });
    res.json({ success: true, deleted_id: post.id });
  }

  /** [profiles] GET /me (or /{own id})?fields=…: threads_basic; `id` when no fields are named. */
  function profile(req: Request, res: Response, params: Params, node: string) {
    if (faulted('profile', req, res)) return;
    const caller = authorize(req, res, params, ['threads_basic'], node);
    if (!caller) return;
    if (!isSelf(node, caller)) return noObject(res, 'get', node);
    if (unknownParams(res, params, ['fields'])) return;
    const fields = fieldsOf(params, ['id']);
    if (checkFields(res, fields, PROFILE_FIELDS, PROFILE_FIELDS_NOT_MODELLED)) return;
    const account = caller.account;
    res.json(pick({
      id: account.id, username: account.username, name: account.name, threads_profile_picture_url: account.pictureUrl,
      threads_biography: account.biography, is_verified: account.isVerified,
    }, fields));
  }

  // --- Routing ---

  async function route(req: Request, res: Response) {
    const path = req.path;
    if (path === authorizePath) {
      if (req.method === 'GET') return authorizePage(req, res);
      if (req.method === 'POST') return consentSubmit(req, res);
      return void res.status(405).end();
    }
    const picturePath = /^\/pictures\/(\d+)\.png$/.exec(path);
    if (picturePath && req.method === 'GET') return fake.accounts.has(picturePath[1]!) ? void res.type('png').send(picture) : void res.status(404).end();
    const mediaPath = /^\/media\/(\d+)$/.exec(path);
    if (mediaPath && req.method === 'GET') {
      const post = fake.posts.get(mediaPath[1]!);
      if (!post?.media?.bytes || post.deletedAt) return void res.status(404).end();
      return void res.type(post.media.mimeType ?? 'application/octet-stream').send(post.media.bytes);
    }
    const permalink = /^\/@([^/]+)\/post\/([^/]+)$/.exec(path);
    if (permalink && req.method === 'GET') {
      const post = [...fake.posts.values()].find((candidate) => candidate.shortcode === permalink[2] && !candidate.deletedAt);
      if (!post) return void res.status(404).type('html').send(page('Not found', '<p>Sorry, this page is not available.</p>'));
      return void res.type('html').send(page(`@${decodeURIComponent(permalink[1]!)} on Threads`, `<article><p>${escapeHtml(post.text ?? '')}</p></article>`));
    }

    const parts = path.split('/').filter(Boolean);
    let versioned = false;
    if (parts[0] && /^v\d+\.\d+$/.test(parts[0])) {
      if (parts[0] !== version) return fail(res, { status: 400, type: 'OAuthException', code: 2500, message: `Unknown path components: ${path} (the fake serves ${version} only)` });
      versioned = true;
      parts.shift();
    }
    // The token endpoints, as documented without a version (the sample app adds one when configured).
    if (parts.join('/') === 'oauth/access_token') return codeExchange(req, res);
    if (parts.length === 1 && parts[0] === 'access_token') return exchange(req, res);
    if (parts.length === 1 && parts[0] === 'refresh_access_token') return refresh(req, res);
    // Meta answers an API path without a version with its default version; the fake refuses it so that a client pins one.
    if (!versioned) return fail(res, { status: 400, type: 'OAuthException', code: 2500, message: `Unknown path components: ${path} (Meta would use its default version: the fake requires /${version}/)` });

    const [node, edge, ...more] = parts;
    if (!node || more.length) return noObject(res, req.method, parts.join('/'));
    if (edge === undefined) {
      if (req.method === 'DELETE') return deletePost(req, res, node);
      if (req.method !== 'GET') return noObject(res, req.method, node);
      const container = fake.containers.get(node);
      if (container) {
        if (faulted('status', req, res)) return;
        return containerStatus(req, res, readParams(req, res), container);
      }
      const post = fake.posts.get(node);
      if (post) return getPost(req, res, readParams(req, res), post);
      if (node === 'me' || fake.accounts.has(node)) return profile(req, res, readParams(req, res), node);
      return noObject(res, 'get', node);
    }
    if (node !== 'me' && !fake.accounts.has(node)) return noObject(res, req.method, node);
    if (edge === 'threads' && req.method === 'POST') return createContainer(req, res, node);
    if (edge === 'threads' && req.method === 'GET') return listPosts(req, res, node);
    if (edge === 'replies' && req.method === 'GET') return listPosts(req, res, node, true);
    if (edge === 'threads_publish' && req.method === 'POST') return publish(req, res, node);
    if (edge === 'threads_publishing_limit' && req.method === 'GET') return publishingLimit(req, res, node);
    return fail(res, { status: 400, type: 'THApiException', code: 100, message: `(#100) ${req.method} /${node}/${edge} is not an edge the fake models` });
  }

  app.use((req, res, next) => void route(req, res).catch(next));
  app.use((error: Error & { type?: string }, _req: Request, res: Response, next: NextFunction) => {
    if (res.headersSent) return next(error);
    if (error instanceof BadRequest) return invalid(res, error.message);
    if (error.type === 'entity.too.large') return invalid(res, 'The request body is too large');
    fail(res, { status: 500, type: 'OAuthException', code: 1, message: `An unknown error has occurred. (The fake Threads failed: ${error.message})` });
  });

  return fake;
}

// --- Counting as Threads counts ---

let segmenter: Intl.Segmenter | undefined;
/** Emoji: an extended pictographic character, or the regional indicators of a flag. */
const EMOJI_RE = /\p{Extended_Pictographic}|\p{Regional_Indicator}/u;

/**
 * [posts]: "Text posts are limited to 500 characters. Emojis are counted as the number of UTF-8 bytes", linking to
 * grapheme-splitter: each grapheme cluster counts 1, an emoji cluster its UTF-8 byte length (😀 4, 👍🏽 8).
 */
export function threadsLength(text: string): number {
  segmenter ??= new Intl.Segmenter('en', { granularity: 'grapheme' });
  let count = 0;
  for (const { segment } of segmenter.segment(text)) count += EMOJI_RE.test(segment) ? Buffer.byteLength(segment, 'utf8') : 1;
  return count;
}

/**
 * [text-attachments]: "All unique URLs found in the text field are counted as links"; the docs' examples count
 * www.facebook.com without a scheme, so the fake counts http(s):// URLs and www. names (trailing punctuation left
 * out, compared without case). `link_attachment` counts when it is not one of them (the docs say so of a text
 * attachment's link; the fake treats the post's link attachment alike).
 */
export function threadsLinks(text: string, linkAttachment?: string): string[] {
  const normalize = (link: string) => link.replace(/[.,;:!?)\]'"]+$/, '').replace(/^https?:\/\//i, '').replace(/\/$/, '').toLowerCase();
  const links = new Set([...text.matchAll(/(?:https?:\/\/|(?<![\w.])www\.)[^\s<>"]+/gi)].map((match) => normalize(match[0])));
  if (linkAttachment) links.add(normalize(linkAttachment));
  return [...links];
}

// --- Helpers ---

/** The query string as sent, decoded as a browser form would (+ as space); a name given twice is a list. */
function queryOf(req: Request): Record<string, string | string[]> {
  const search = new URLSearchParams(req.originalUrl.split('?')[1] ?? '');
  const query: Record<string, string | string[]> = {};
  for (const name of new Set(search.keys())) {
    const values = search.getAll(name);
    query[name] = values.length === 1 ? values[0]! : values;
  }
  return query;
}

const page = (title: string, body: string) => htmlPage('Fake Threads', title, body);

/**
 * Follows a link as a browser would, through the fake's Authorization Window (autoConsent) back to the service's
 * page; the `#_` Meta appends stays in the browser, as a fragment does.
 */
export async function followThreadsLinks(url: string): Promise<{ status: number; html: string; url: string }> {
  let next = url;
  for (let hop = 0; hop < 6; hop++) {
    const answer = await fetch(next.split('#')[0]!, { redirect: 'manual' });
    const location = answer.headers.get('location');
    if (answer.status < 300 || answer.status >= 400 || !location) return { status: answer.status, html: await answer.text(), url: next };
    next = new URL(location, next).href;
  }
  throw new Error(`too many redirects from ${url}`);
}
