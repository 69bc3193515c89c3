import type { Config } from '../process/config.js';
import type { ContentRules, InstanceLimits } from './rules.js';

/**
 * The types every adapter shares, kept apart from the list of adapters (index.ts) so an adapter can import them
 * without importing the list.
 */

/**
 * One platform: its content rules (pure, in ./rules.ts, which the dashboard's composer imports too), and once it can be
 * published to, its publisher (its file). A new platform is its rules, its file and a line in `platforms` (index.ts).
 */
export interface PlatformRules extends ContentRules {
  /** Absent while the platform cannot be connected yet. */
  publisher?: Publisher;
}

/** What a user gives to connect an account: who they are on the platform, a secret, and where their account lives. */
export interface ConnectInput {
  identifier: string;
  password: string;
  serviceUrl: string;
}

/** An account the platform accepted: its own id for it, a name for people, and what to store (sealed) to act as it. */
export interface Connection {
  accountId: string;
  name: string;
  credentials: object;
}

/**
 * What identifies one record the engine publishes, so that publishing is idempotent: the platform derives the
 * record's id from it (see recordKey in bluesky.ts), and looks the record up by it after an unknown outcome.
 */
export interface PostKey {
  scheduleId: string;
  createdAt: Date;
  kind: 'post' | 'firstComment';
}

export interface PublishedPost {
  /** The platform's id of the post (a Bluesky at:// URI). */
  id: string;
  /** Where a person sees it. */
  url: string;
  /** What a reply to it must cite besides its id (a Bluesky record's CID). */
  ref: string;
}

/** One stored version of an image (a variant, or the upload itself), read when an adapter chooses it. */
export interface ImageVersion {
  width: number;
  height: number;
  sizeBytes: number;
  mimeType: string;
  read(): Promise<Uint8Array>;
  /** Where anyone reads it: the store's public URL (Threads has Meta fetch it from there). */
  url: string;
}

/** An image published with a post: its alt text and its versions, best first (the adapter takes the first that fits). */
export interface OutgoingImage {
  altText: string;
  versions: ImageVersion[];
}

export interface OutgoingPost {
  key: PostKey;
  text: string;
  /** The post's images in order; absent or empty for text only (thread parts and first comments carry none). */
  images?: OutgoingImage[];
  /** The schedule's settings (`langs` on Bluesky). */
  settings: Record<string, unknown>;
  /** What the post's language tags are drawn from when its settings name none (Bluesky; see postLanguages in languages.ts). */
  languageSources?: LanguageSources;
  /** A thread part or a first comment: the thread's first post and the post it answers. */
  replyTo?: { root: PublishedPost; parent: PublishedPost };
  /**
   * Set when an earlier attempt may have published this already and the platform cannot be asked (no `lookUp`): the
   * adapter then reads the platform's "duplicate" refusal as "probably published already", never as a new failure.
   */
  mayExist?: boolean;
  /** The channel's own limits where they vary by server (a Mastodon instance's, as last read): images are chosen by them. */
  limits?: InstanceLimits | null;
  /**
   * Where the account has no `lookUp`: when this send was marked (post_sent_at, first_comment_sent_at), the same for
   * every attempt of one send and another after a refusal. Mastodon derives its Idempotency-Key from it.
   */
  sentAt?: Date;
  /** What an earlier send under the same mark was known by on the platform before its answer (a Threads container), if it kept one. */
  sentRef?: string | null;
  /**
   * Keeps what this send is known by on the platform (a Threads container, made before it is published), before the
   * platform is asked to publish it: a later attempt finds it in `sentRef`. Given where the account has no `lookUp`.
   */
  remember?(ref: string): Promise<void>;
}

/** Where a post's language comes from when its own settings name none: its thread, then its workspace. */
export interface LanguageSources {
  /** The settings of the thread's first post, for a reply in a thread; null for the first post itself. */
  threadSettings: Record<string, unknown> | null;
  /** The workspace's default languages (BCP-47 tags, at most 3; none unless set). */
  workspaceLanguages: string[];
  /** The thread's text, its first post and then its replies, what a language is detected from (more text, surer). */
  threadText: string;
  /**
   * The language detected from threadText when it was written (src/platforms/detected-languages.ts): null when none was
   * confident; absent when not known, and then detected when published.
   */
  detected?: string | null;
}

/** One connected account, ready to act, built from its stored credentials; the jobs of a worker share it, so calls may overlap. */
export interface PublishingAccount {
  /**
   * Renews the credentials (Bluesky: the session, by its refresh token, else a new login with the app password;
   * LinkedIn: the access token, by its refresh token, else a check that it still works) and stores them through
   * `saveCredentials`; a PlatformError of kind `credentials` when the platform refuses them. The engine calls it
   * when a call failed for credentials (src/channels/open-account.ts), then makes the call once more; the refresh task and
   * refresh-now call it before expiry.
   */
  refreshCredentials(): Promise<void>;
  publish(post: OutgoingPost): Promise<PublishedPost>;
  /**
   * The post published under `key`, or null when the platform has none. Absent where the platform cannot be asked
   * (LinkedIn: reading posts needs a restricted scope); the engine then retries an unknown outcome once only, with
   * `mayExist`, and relies on the platform refusing a duplicate (see src/worker/publish-schedule.ts).
   */
  lookUp?(key: PostKey): Promise<PublishedPost | null>;
  /**
   * Where there is no `lookUp` but the account's posts can be read (Mastodon): the post sent at `post.sentAt` whose answer
   * was lost, found by what it says and where it replies, or null when the platform has none. The engine asks before it
   * sends a marked post again, so an unknown outcome is retried like Bluesky's rather than once only.
   */
  findSent?(post: OutgoingPost & { sentAt: Date }): Promise<PublishedPost | null>;
  delete(postId: string): Promise<void>;
}

/** Where a publisher stores renewed credentials: sealed, with the access token's new expiry when it has one. */
export type SaveCredentials = (credentials: object, expiresAt?: Date | null) => Promise<void>;

/** An account a connecting member may act as: the member itself, or a page the member administers. */
export interface AccountChoice {
  accountId: string;
  name: string;
  image: string | null;
  /** How people find the account on the platform, where it has one: `@user` on Threads. */
  handle?: string;
}

/** What an OAuth connect answers: the accounts the member may act as, and what to store for whichever is chosen. */
export interface OAuthConnection {
  /** The member first; one choice means nothing to pick. */
  choices: AccountChoice[];
  /** Stored sealed; the chosen account's id is added as `account` before the account is opened. */
  credentials: object;
  expiresAt: Date | null;
  /** Whether a refresh token came with it (otherwise the member must connect again before `expiresAt`). */
  refreshable: boolean;
}

/** A platform connected through OAuth 2.0's authorization code flow (LinkedIn). */
export interface OAuthConnect {
  /** The server's settings (environment variables) an operator sets for it to be connected: the platform's app client. */
  settings: readonly string[];
  /** Why it cannot be connected with this configuration (no client id), or null. */
  unavailable(config: Config): string | null;
  /** Where the member is sent to consent. */
  authorizationUrl(config: Config, request: { redirectUri: string; state: string }): string;
  /** Reads the callback (`error` or `code`), exchanges the code and reads the member and its pages. Throws PlatformError. */
  complete(
    config: Config,
    callback: { url: URL; state: string; redirectUri: string },
    options: { signal: AbortSignal; fetch?: typeof fetch },
  ): Promise<OAuthConnection>;
}

export interface Publisher {
  /** Checks the credentials against the platform (a login) and answers what to store. Absent for OAuth platforms. */
  connect?(input: ConnectInput, options: { signal: AbortSignal; timeoutMs: number }): Promise<Connection>;
  /** Present for a platform connected through OAuth rather than a form of this service's. */
  oauth?: OAuthConnect;
  /**
   * Acts as the account of `credentials`. Every request it makes ends when `signal` aborts (the worker stopping) or
   * after `timeoutMs` without an answer (PLATFORM_TIMEOUT_MS), and goes through `fetch` when given (the global one
   * otherwise). When the platform renews the session, `saveCredentials` receives what to store instead.
   */
  open(
    credentials: unknown,
    options: { signal: AbortSignal; timeoutMs: number; saveCredentials: SaveCredentials; fetch?: typeof fetch; config?: Config },
  ): PublishingAccount;
  /**
   * Revokes the tokens of `credentials` (as stored) at the platform, so they stop working before they expire; all of
   * its requests end together with `signal` or after `timeoutMs`. Throws PlatformError. Absent where the platform
   * has no revocation for this service to call (a Bluesky app password is revoked in the member's settings).
   */
  revoke?(credentials: unknown, options: { signal: AbortSignal; timeoutMs: number; config: Config; fetch?: typeof fetch }): Promise<void>;
}

/**
 * How a platform call failed, which decides what the engine does next:
 * - `transient`: nothing was written (network error before sending, 5xx on a read, 429); retry later.
 * - `unknown`: a write was sent and no answer says whether it was done (timeout, abort, 5xx); look it up first.
 * - `permanent`: the platform refused this content for good (400); fail at once.
 * - `credentials`: the stored credentials no longer work (revoked app password); fail at once and mark the channel.
 */
export type FailureKind = 'transient' | 'unknown' | 'permanent' | 'credentials';

export interface FailureDetail {
  status: number | null;
  platformMessage: string | null;
  platformCode: string | null;
  traceId: string | null;
  raw: unknown;
}

/**
 * `platformCode` of a refusal saying the text is longer than the platform takes: the channel's stored limits are then
 * read again (a Mastodon instance that lowered its limit), so the next post is checked by the new one.
 */
export const TEXT_TOO_LONG = 'TEXT_TOO_LONG';

/** The detail of a failure the platform had no say in (nothing was sent, or this service decided). */
export const noDetail: FailureDetail = { status: null, platformMessage: null, platformCode: null, traceId: null, raw: null };

/** How a `credentials` failure leaves the channel: its tokenStatus and connectionErrorCode. */
export interface ConnectionFailure {
  tokenStatus: 'EXPIRED' | 'REVOKED';
  code: string;
}

export class PlatformError extends Error {
  constructor(
    readonly kind: FailureKind,
    message: string,
    readonly detail: FailureDetail,
    /** From Retry-After (or the platform's rate-limit reset), when the platform said when to come back. */
    readonly retryAfterMs?: number,
    /** For `credentials`: what the channel shows; REVOKED with REFRESH_TOKEN_REVOKED unless said. */
    readonly connection?: ConnectionFailure,
  ) {
    super(message);
    this.name = 'PlatformError';
  }
}

