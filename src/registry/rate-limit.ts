import type { Database } from '../db/index.js';
import type { Logger } from '../logger.js';
import type { Principal } from './context.js';

/** Requests are counted per workspace in one-minute windows: the plan's limit is per minute. */
export const WINDOW_SECONDS = 60;
/** How often each process adds its local counts to the shared ones and learns the others'. */
export const FLUSH_MS = 100;

/**
 * The contract's two buckets: programmatic traffic (API keys, MCP, the command-line client) and browser
 * sessions (the dashboard) are counted apart, each against the plan's full limit. The admin command is not limited.
 */
export type Bucket = 'programmatic' | 'browser';

export function bucketOf(principal: Principal): Bucket | undefined {
  switch (principal.kind) {
    case 'apiKey':
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

/** One workspace's bucket in one window, as this process knows it. */
interface Window {
  workspaceId: string;
  bucket: Bucket;
  /** The window's start as the database wrote it (text, so it compares exactly). */
  startedAt: string;
  /** Date.now() when the window ends, from the database's own clock (no skew between hosts). */
  endsAt: number;
  plan: string;
  limit: number;
  /** Every process's admitted requests, as of the last flush (this process's flushed ones included). */
  shared: number;
  /** Admitted here since the last flush. */
  local: number;
  /** Asked since the last flush: it is refreshed at the next flush even if nothing was admitted. */
  asked: boolean;
}

interface WindowRow {
  startedAt: string;
  count: number;
  msLeft: number;
  plan: string;
  limit: number;
}

/**
 * Rate limits shared by every API process on one database, without a database round trip per request.
 * Each process counts locally and, every FLUSH_MS, adds its counts to `rate_limit_windows` in one statement
 * that also returns every process's totals; a request is admitted against the last known total plus what
 * this process admitted since. Only the first request of a window in a process waits for the database (to
 * open or join the window). Accuracy: one process alone never admits more than the limit; across P processes,
 * a process learns another's admissions at its own next flush after the other's, so a window admits at most
 * the limit plus what the other P-1 processes receive in about two flush intervals (and round trips) once it
 * is reached, and never more than P times the limit. A refusal is never premature.
 */
export class RateLimiter {
  private readonly windows = new Map<string, Window>();
  private readonly opening = new Map<string, Promise<Window>>();
  private flushing: Promise<void> = Promise.resolve();
  private readonly timer: NodeJS.Timeout;

  constructor(
    private readonly db: Database,
    private readonly logger: Logger,
    flushMs = FLUSH_MS,
  ) {
    this.timer = setInterval(() => void this.flush(), flushMs);
    this.timer.unref();
  }

  /** Counts a request of `principal` if its bucket has room; undefined for a principal that is not limited. */
  async admit(principal: Principal): Promise<Admission | undefined> {
    const bucket = bucketOf(principal);
    if (!bucket) return undefined;
    const key = `${principal.workspaceId}:${bucket}`;
    let window = this.windows.get(key);
    if (!window || window.endsAt <= Date.now()) window = await this.open(key, principal.workspaceId, bucket);
    window.asked = true;
    const admitted = window.shared + window.local < window.limit;
    if (admitted) window.local++;
    return { admitted, state: stateOf(window) };
  }

  /** The state of `principal`'s bucket as this process knows it, without counting a request. */
  peek(principal: Principal): RateLimitState | undefined {
    const bucket = bucketOf(principal);
    const window = bucket && this.windows.get(`${principal.workspaceId}:${bucket}`);
    return window && window.endsAt > Date.now() ? stateOf(window) : undefined;
  }

  /** Stops the timer and adds what is still counted locally. */
  async close(): Promise<void> {
    clearInterval(this.timer);
    await this.flush();
  }

  /** Opens the bucket's window, or joins the one another process opened; concurrent first requests share the trip. */
  private open(key: string, workspaceId: string, bucket: Bucket): Promise<Window> {
    let opening = this.opening.get(key);
    if (!opening) {
      opening = this.openWindow(workspaceId, bucket).then(
        (row) => {
          this.opening.delete(key);
          const previous = this.windows.get(key);
          // The same window still (the local clock ran a little ahead): what was counted here stays counted.
          const local = previous?.startedAt === row.startedAt ? previous.local : 0;
          const window: Window = { workspaceId, bucket, startedAt: row.startedAt, endsAt: Date.now() + row.msLeft, plan: row.plan, limit: row.limit, shared: row.count, local, asked: false };
          this.windows.set(key, window);
          return window;
        },
        (error: unknown) => {
          this.opening.delete(key);
          throw error;
        },
      );
      this.opening.set(key, opening);
    }
    return opening;
  }

  /** Starts a new window if the last one has ended (the database's clock decides), and reads it with the plan's limit. */
  private async openWindow(workspaceId: string, bucket: Bucket): Promise<WindowRow> {
    const ended = this.db`w.started_at <= now() - make_interval(secs => ${WINDOW_SECONDS})`;
    const [row] = await this.db<WindowRow[]>`
      WITH w AS (
        INSERT INTO rate_limit_windows AS w (organization_id, bucket, started_at, count)
        VALUES (${workspaceId}, ${bucket}, now(), 0)
        ON CONFLICT (organization_id, bucket) DO UPDATE SET
          started_at = CASE WHEN ${ended} THEN now() ELSE w.started_at END,
          count = CASE WHEN ${ended} THEN 0 ELSE w.count END
        RETURNING w.organization_id, w.started_at, w.count
      )
      SELECT w.started_at::text AS started_at, w.count,
        (extract(epoch FROM w.started_at + make_interval(secs => ${WINDOW_SECONDS}) - now()) * 1000)::float8 AS ms_left,
        p.name AS plan, p.rate_limit_per_minute AS limit
      FROM w JOIN organizations o ON o.id = w.organization_id JOIN plans p ON p.name = o.plan`;
    return row!;
  }

  /**
   * Adds the local counts of every window asked since the last flush and reads back the totals (and the
   * plan's limit, so a plan change applies within a flush). Flushes run one after another.
   */
  flush(): Promise<void> {
    this.flushing = this.flushing.then(async () => {
      const now = Date.now();
      const due: { window: Window; delta: number }[] = [];
      for (const [key, window] of this.windows) {
        if (window.endsAt <= now) this.windows.delete(key);
        else if (window.asked) {
          due.push({ window, delta: window.local });
          window.shared += window.local;
          window.local = 0;
          window.asked = false;
        }
      }
      if (due.length === 0) return;
      try {
        await this.addCounts(due);
      } catch (error) {
        // Counted again next time rather than lost; meanwhile admission still sees them.
        for (const { window, delta } of due) {
          window.shared -= delta;
          window.local += delta;
          window.asked = true;
        }
        this.logger.warn('rate limit counts could not be written; retrying', { error });
      }
    });
    return this.flushing;
  }

  private async addCounts(due: { window: Window; delta: number }[]): Promise<void> {
    const rows = await this.db<{ organizationId: string; bucket: Bucket; count: number; plan: string; limit: number }[]>`
      WITH d AS (
        -- The starts go as text: a timestamptz parameter would be sent at millisecond precision, and match nothing.
        SELECT organization_id, bucket, started_text::timestamptz AS started_at, delta FROM unnest(
          ${due.map(({ window }) => window.workspaceId)}::uuid[], ${due.map(({ window }) => window.bucket)}::text[],
          ${due.map(({ window }) => window.startedAt)}::text[], ${due.map(({ delta }) => delta)}::int[]
        ) AS d (organization_id, bucket, started_text, delta)
      ), added AS (
        UPDATE rate_limit_windows w SET count = w.count + d.delta FROM d
        WHERE d.delta > 0 AND w.organization_id = d.organization_id AND w.bucket = d.bucket AND w.started_at = d.started_at
        RETURNING w.organization_id, w.bucket, w.count
      ), totals AS (
        SELECT * FROM added
        UNION ALL
        SELECT w.organization_id, w.bucket, w.count FROM rate_limit_windows w JOIN d USING (organization_id, bucket, started_at) WHERE d.delta = 0
      )
      SELECT t.organization_id, t.bucket, t.count, p.name AS plan, p.rate_limit_per_minute AS limit
      FROM totals t JOIN organizations o ON o.id = t.organization_id JOIN plans p ON p.name = o.plan`;
    const found = new Map(rows.map((row) => [`${row.organizationId}:${row.bucket}`, row]));
    for (const { window } of due) {
      const row = found.get(`${window.workspaceId}:${window.bucket}`);
      if (!row) {
        // Another process opened a new window after this one ended by the database's clock: join it at the next request.
        window.endsAt = 0;
        continue;
      }
      window.shared = row.count;
      window.plan = row.plan;
      window.limit = row.limit;
    }
  }
}

function stateOf(window: Window): RateLimitState {
  return {
    bucket: window.bucket,
    plan: window.plan,
    limit: window.limit,
    remaining: Math.max(0, window.limit - window.shared - window.local),
    resetSeconds: Math.max(0, Math.ceil((window.endsAt - Date.now()) / 1000)),
  };
}

/** The refusal's message: the limit, the plan and when to try again, like the quota errors. */
export function rateLimitedMessage(state: RateLimitState): string {
  const who = state.bucket === 'programmatic' ? 'API, MCP and command-line' : 'browser';
  return `The workspace's plan "${state.plan}" allows ${state.limit} ${who} requests a minute, and they are spent; try again in ${Math.max(1, state.resetSeconds)} s`;
}
