import type { Database } from '../db/index.js';
import type { Logger } from '../process/logger.js';

export type Surface = 'api' | 'mcp';

export interface UsageEvent {
  organizationId: string;
  /** The key called with, or the connected app calling (src/oauth): one of the two. */
  apiKeyId: string | null;
  connectionId: string | null;
  surface: Surface;
  /** The public operation called, or null when the call reached none (unknown path, unreadable body). */
  operation: string | null;
  status: number;
  createdAt: Date;
}

/**
 * Records every call of a key or a connected app without a database round trip on the call's own path: events are
 * buffered in memory and written in one multi-row INSERT every `flushMs`, or sooner when the buffer fills.
 * A crash loses at most the last interval's events.
 */
export class UsageRecorder {
  private buffer: UsageEvent[] = [];
  private flushing: Promise<void> = Promise.resolve();
  private readonly timer: NodeJS.Timeout;

  constructor(
    private readonly db: Database,
    private readonly logger: Logger,
    flushMs: number,
    private readonly maxBuffered = 1000,
  ) {
    this.timer = setInterval(() => void this.flush(), flushMs);
    this.timer.unref();
  }

  record(event: UsageEvent): void {
    this.buffer.push(event);
    if (this.buffer.length >= this.maxBuffered) void this.flush();
  }

  /** Writes what is buffered; flushes run one after another so events keep their order. */
  flush(): Promise<void> {
    this.flushing = this.flushing.then(async () => {
      if (this.buffer.length === 0) return;
      const events = this.buffer;
      this.buffer = [];
      try {
        // Each key's and app's latest call, for the Developer API page: one row each, however many calls it made.
        const lastUse = new Map(events.flatMap((e) => (e.apiKeyId ? [[e.apiKeyId, e.createdAt.toISOString()] as const] : [])));
        const lastAppUse = new Map(events.flatMap((e) => (e.connectionId ? [[e.connectionId, e.createdAt.toISOString()] as const] : [])));
        await this.db.begin(async (tx) => {
          // The keys' rows first, locked in id order (FOR NO KEY UPDATE, which the events' foreign keys do not wait
          // for), so two processes' flushes cannot deadlock on them.
          await tx`
            UPDATE api_keys k SET last_used_at = greatest(k.last_used_at, used.at)
            FROM unnest(${[...lastUse.keys()]}::uuid[], ${[...lastUse.values()]}::timestamptz[]) AS used (id, at)
            WHERE k.id = used.id
              AND k.id IN (SELECT id FROM api_keys WHERE id = ANY(${[...lastUse.keys()]}::uuid[]) ORDER BY id FOR NO KEY UPDATE)`;
          if (lastAppUse.size > 0) {
            await tx`
              UPDATE oauth_connections c SET last_used_at = greatest(c.last_used_at, used.at)
              FROM unnest(${[...lastAppUse.keys()]}::text[], ${[...lastAppUse.values()]}::timestamptz[]) AS used (id, at)
              WHERE c.id = used.id
                AND c.id IN (SELECT id FROM oauth_connections WHERE id = ANY(${[...lastAppUse.keys()]}::text[]) ORDER BY id FOR NO KEY UPDATE)`;
          }
          // An array parameter per column rather than one per row: one small statement to parse, whatever the batch size.
          await tx`
            INSERT INTO usage_events (organization_id, api_key_id, oauth_connection_id, surface, operation, status, created_at)
            SELECT e.organization_id, e.api_key_id, c.id, e.surface, e.operation, e.status, e.created_at
            FROM unnest(
              ${events.map((e) => e.organizationId)}::uuid[], ${events.map((e) => e.apiKeyId)}::uuid[], ${events.map((e) => e.connectionId)}::text[],
              ${events.map((e) => e.surface)}::text[], ${events.map((e) => e.operation)}::text[],
              ${events.map((e) => e.status)}::int[], ${events.map((e) => e.createdAt.toISOString())}::timestamptz[]
            ) AS e (organization_id, api_key_id, connection_id, surface, operation, status, created_at)
            -- A connection disconnected since its call is deleted (a key is only revoked): its calls still count, unnamed.
            LEFT JOIN oauth_connections c ON c.id = e.connection_id`;
        });
      } catch (error) {
        this.logger.error('usage events could not be written; they are dropped', { count: events.length, error });
      }
    });
    return this.flushing;
  }

  async close(): Promise<void> {
    clearInterval(this.timer);
    await this.flush();
  }
}
