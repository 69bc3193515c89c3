import type { Database } from '../db/index.js';
import type { Logger } from '../process/logger.js';
import type { Principal } from '../auth/principal.js';

/** Requests are counted per workspace in one-minute windows: the plan's limit is per minute. */
export const WINDOW_SECONDS = 60;
/** How often each process gives back the tokens it will not use and tops up its leases. */
export const FLUSH_MS = 100;

/**
 * The contract's two buckets: programmatic traffic (API keys, MCP, the command-line client) and browser
 * sessions (the dashboard) are counted apart, each against the plan's full limit. The admin command is not limited.
 */
export type Bucket = 'programmatic' | 'browser';

export function bucketOf(principal: Principal): Bucket | undefined {
  switch (principal.kind) {
    case 'apiKey':
    case 'connection':
      return 'programmatic';
    case 'session':
      return 'browser';
    case 'admin':
      return undefined;
  }
}

/** What the RateLimit headers say, and what a refusal's message names. */
export interface RateLimitState {
  bucket: Bucket;
  plan: string;
  limit: number;
  /** Requests left in the window after this one. */
  remaining: number;
  /** Seconds until the window ends. */
  resetSeconds: number;
}

export type Admission = { admitted: boolean; state: RateLimitState };

/** One workspace's bucket in its current window, as this process holds it. */
interface Window {
  workspaceId: string;
  bucket: Bucket;
  /** The window's start in microseconds, as the database named it (text: a bigint, compared exactly). */
  id: string;
  /** Date.now() when the window ends, from the database's own clock (no skew between hosts). */
  endsAt: number;
  plan: string;
  limit: number;
  /** Tokens the window has granted, to every process (this one's lease included), as of the last lease. */
  granted: number;
  /** Tokens leased to this process and not used yet: each admits one request without a round trip. */
  lease: number;
  /** Tokens given back by a flush whose statement has not answered yet: no longer this process's, still in `granted`. */
  returning: number;
  /** Requests asked since the last flush: what the next lease is sized by. */
  demand: number;
  /** The last lease found nothing left: requests are refused without asking until the next flush. */
  exhausted: boolean;
}

/** One window's part in a call of rate_limit_lease (migrations/013_rate_limit_leases.sql). */
interface LeaseRequest {
  window: Pick<Window, 'workspaceId' | 'bucket'> & { id: string | null };
  /** Tokens given back: leased earlier in `window.id` and not used. */
  unused: number;
  /** Tokens asked for; 0 only gives back. */
  wanted: number;
}

interface LeaseRow {
  organizationId: string;
  bucket: Bucket;
  /** Null when the workspace is gone. */
  windowId: string | null;
  msLeft: number;
  windowCount: number;
  planName: string;
  planLimit: number;
  granted: number;
}

/**
 * Rate limits shared exactly by every API process on one database, without a database round trip per request.
 * A process admits a request only with a token it holds, and tokens come from the workspace's window row, which
 * grants at most the plan's limit in a window, in one atomic statement (rate_limit_lease): so the processes
 * together never admit more than the limit. A process leases tokens for what it expects to be asked (twice the
 * requests of the last flush interval), a quarter of what is left at most and at least one, so when little is
 * left the leases shrink to one token. Every FLUSH_MS it gives back, in one statement for all its windows, what
 * it does not expect to use, and tops its leases up for the next interval; an idle process gives back all.
 *
 * A request waits for the database only when its process holds no token: the first of a window, a sudden
 * burst, or the last tokens of a window. Once a window is spent, its refusals are answered from memory until
 * the next flush asks again. A refusal can therefore come while another process still holds unused tokens
 * (they return within a flush interval): never more admitted than the limit, rarely fewer for a moment.
 */
export class RateLimiter {
  private readonly windows = new Map<string, Window>();
  private readonly leasing = new Map<string, Promise<Window>>();
  private flushing: Promise<void> = Promise.resolve();
  private closed = false;
  /** The last lease statement sent: each waits for the one before, so each answer counts everything this process did before it. */
  private leased: Promise<unknown> = Promise.resolve();
  private readonly timer: NodeJS.Timeout;

  constructor(
    private readonly db: Database,
    private readonly logger: Logger,
    flushMs = FLUSH_MS,
  ) {
    this.timer = setInterval(() => void this.flush(), flushMs);
    this.timer.unref();
  }

  /**
   * Admits a request of `principal` if its process holds or can lease a token; undefined for a principal that is not
   * limited. Rejects when no token can be had from the database (or after `close`): the caller must not admit then.
   */
  async admit(principal: Principal): Promise<Admission | undefined> {
    const bucket = bucketOf(principal);
    if (!bucket) return undefined;
    if (this.closed) throw new Error('the rate limiter is closed');
    const key = `${principal.workspaceId}:${bucket}`;
    let counted = false;
    for (;;) {
      const window = this.current(key);
      if (window) {
        if (!counted) window.demand++;
        counted = true;
        if (window.lease > 0) {
          window.lease--;
          return { admitted: true, state: stateOf(window) };
        }
        if (window.exhausted) return { admitted: false, state: stateOf(window) };
      }
      // Requests that find no token share one trip; if its lease is gone before their turn, they ask again.
      await this.lease(key, principal.workspaceId, bucket);
    }
  }

  /** The state of `principal`'s bucket as this process knows it, without counting a request. */
  peek(principal: Principal): RateLimitState | undefined {
    const bucket = bucketOf(principal);
    const window = bucket && this.current(`${principal.workspaceId}:${bucket}`);
    return window ? stateOf(window) : undefined;
  }

  /** Stops the timer, lets the leases under way answer, and gives back every token this process holds. */
  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.timer);
    await Promise.allSettled([...this.leasing.values()]);
    await this.flush(true);
  }

  private current(key: string): Window | undefined {
    const window = this.windows.get(key);
    return window && window.endsAt > Date.now() ? window : undefined;
  }

  /** Leases tokens for the bucket (opening a new window if the last one has ended); concurrent callers share the trip. */
  private lease(key: string, workspaceId: string, bucket: Bucket): Promise<Window> {
    let leasing = this.leasing.get(key);
    if (!leasing) {
      const held = this.windows.get(key);
      // What is left of an ended window's lease goes back with the request (it counts only if the window is not over after all).
      const unused = held?.lease ?? 0;
      if (held) held.lease = 0;
      const request = { window: { workspaceId, bucket, id: held?.id ?? null }, unused, wanted: Math.max(1, 2 * (held?.demand ?? 1)) };
      const sentAt = Date.now();
      leasing = this.leaseRows([request])
        .then(([row]) => {
          if (row!.windowId === null) throw new Error(`workspace ${workspaceId} no longer exists`);
          return this.apply(key, { ...row!, windowId: row!.windowId }, request.wanted, sentAt);
        })
        .finally(() => this.leasing.delete(key));
      this.leasing.set(key, leasing);
    }
    return leasing;
  }

  /** Takes in what the window row answered: its window, the plan's limit (so a plan change applies at once), and the tokens granted. */
  private apply(key: string, row: LeaseRow & { windowId: string }, wanted: number, sentAt: number): Window {
    const held = this.windows.get(key);
    // An answer about a window already over (it crossed a newer one's): whatever it granted is void.
    if (held && BigInt(held.id) > BigInt(row.windowId)) return held;
    const window: Window =
      held?.id === row.windowId
        ? held
        : { workspaceId: row.organizationId, bucket: row.bucket, id: row.windowId, endsAt: 0, plan: '', limit: 0, granted: 0, lease: 0, returning: 0, demand: held?.demand ?? 0, exhausted: false };
    // From when the statement was sent: the window ends here no later than in the database, whatever the trip took.
    Object.assign(window, { endsAt: sentAt + row.msLeft, plan: row.planName, limit: row.planLimit, granted: row.windowCount });
    window.lease += row.granted;
    if (wanted > 0) window.exhausted = window.lease === 0;
    this.windows.set(key, window);
    return window;
  }

  /**
   * Once per interval, in one statement: each window asked since the last flush keeps the tokens it expects to
   * use and is topped up to twice its demand; every other window, and every window at `close`, gives all back.
   * An ended window gives back what it held (in case the database's clock says otherwise) and is forgotten.
   * Flushes run one after another.
   */
  flush(closing = false): Promise<void> {
    this.flushing = this.flushing.then(async () => {
      const now = Date.now();
      const due: { key: string; window: Window; request: LeaseRequest }[] = [];
      for (const [key, window] of this.windows) {
        const ended = window.endsAt <= now;
        const expected = ended || closing ? 0 : 2 * window.demand;
        const kept = Math.min(window.lease, expected);
        const unused = window.lease - kept;
        const wanted = expected - kept;
        window.lease = kept;
        // Given back from now on: the headers' `remaining` counts them at once, not only once the statement answers.
        window.returning += unused;
        window.demand = 0;
        if (ended) this.windows.delete(key);
        else if (wanted === 0) window.exhausted = false;
        if (unused > 0 || wanted > 0) due.push({ key, window, request: { window, unused, wanted } });
      }
      if (due.length === 0) return;
      // One order for every process, so that two flushes never wait on each other's rows.
      due.sort((a, b) => (a.key < b.key ? -1 : 1));
      const sentAt = Date.now();
      let rows: LeaseRow[] | undefined;
      try {
        rows = await this.leaseRows(due.map(({ request }) => request));
      } catch (error) {
        // Whether the statement took effect is unknown: what it gave back stays given (tokens lost for this window,
        // never counted twice); a spent window stays spent, and the others lease again at their next request.
        this.logger.warn('rate limit leases could not be renewed; asking again at the next request', { error });
      }
      due.forEach(({ key, window, request }, index) => {
        window.returning -= request.unused;
        const row = rows?.[index];
        if (!row) return;
        // A workspace gone, or a window forgotten here (it ended, and only gave back): nothing to take in.
        if (row.windowId === null) this.windows.delete(key);
        else if (this.windows.has(key)) this.apply(key, { ...row, windowId: row.windowId }, request.wanted, sentAt);
      });
    }).catch((error: unknown) => this.logger.error('rate limit flush failed', { error }));
    return this.flushing;
  }

  /**
   * One statement for any number of windows; rows come back in the order asked. This process's statements run one
   * after another (a flush's and a request's would otherwise cross, and the older answer's count be taken last).
   */
  private leaseRows(requests: LeaseRequest[]): Promise<LeaseRow[]> {
    const rows = this.leased.then(() => this.leaseStatement(requests));
    this.leased = rows.catch(() => undefined);
    return rows;
  }

  private leaseStatement(requests: LeaseRequest[]): Promise<LeaseRow[]> {
    return this.db<LeaseRow[]>`
      SELECT d.organization_id, d.bucket, l.window_id::text, l.ms_left, l.window_count, l.plan_name, l.plan_limit, l.granted
      FROM unnest(
        ${requests.map(({ window }) => window.workspaceId)}::uuid[], ${requests.map(({ window }) => window.bucket)}::text[],
        ${requests.map(({ window }) => window.id)}::bigint[], ${requests.map(({ unused }) => unused)}::int[],
        ${requests.map(({ wanted }) => wanted)}::int[]
      ) WITH ORDINALITY AS d (organization_id, bucket, held_window, unused, wanted, n)
      CROSS JOIN LATERAL rate_limit_lease(d.organization_id, d.bucket, ${WINDOW_SECONDS}, d.held_window, d.unused, d.wanted) l
      ORDER BY d.n`;
  }
}

function stateOf(window: Window): RateLimitState {
  return {
    bucket: window.bucket,
    plan: window.plan,
    limit: window.limit,
    remaining: Math.max(0, window.limit - window.granted + window.returning + window.lease),
    resetSeconds: Math.max(0, Math.ceil((window.endsAt - Date.now()) / 1000)),
  };
}

/** The refusal's message: the limit, the plan and when to try again, like the quota errors. */
export function rateLimitedMessage(state: RateLimitState): string {
  const who = state.bucket === 'programmatic' ? 'API, MCP and command-line' : 'browser';
  return `The workspace's plan "${state.plan}" allows ${state.limit} ${who} requests a minute, and they are spent; try again in ${Math.max(1, state.resetSeconds)} s`;
}
