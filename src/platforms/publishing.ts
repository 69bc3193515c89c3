/**
 * The publishing side of a platform adapter (see PlatformRules in index.ts): the types every adapter shares, kept
 * apart from the list of adapters so an adapter can import them without importing the list.
 */

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
  /** A thread part or a first comment: the thread's first post and the post it answers. */
  replyTo?: { root: PublishedPost; parent: PublishedPost };
}

/** One connected account, ready to act; built per job from its stored credentials. */
export interface PublishingAccount {
  publish(post: OutgoingPost): Promise<PublishedPost>;
  /** The post published under `key`, or null when the platform has none. */
  lookUp(key: PostKey): Promise<PublishedPost | null>;
  delete(postId: string): Promise<void>;
}

export interface Publisher {
  /** Checks the credentials against the platform (a login) and answers what to store. */
  connect(input: ConnectInput, signal: AbortSignal): Promise<Connection>;
  /**
   * Acts as the account of `credentials`. Every request it makes ends when `signal` aborts, and goes through
   * `fetch` when given (the global one otherwise). When the platform renews the session, `saveCredentials`
   * receives what to store instead.
   */
  open(
    credentials: unknown,
    options: { signal: AbortSignal; saveCredentials(credentials: object): Promise<void>; fetch?: typeof fetch },
  ): PublishingAccount;
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

export class PlatformError extends Error {
  constructor(
    readonly kind: FailureKind,
    message: string,
    readonly detail: FailureDetail,
    /** From Retry-After (or the platform's rate-limit reset), when the platform said when to come back. */
    readonly retryAfterMs?: number,
  ) {
    super(message);
    this.name = 'PlatformError';
  }
}

