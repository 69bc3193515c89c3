import { AsyncLocalStorage } from 'node:async_hooks';
import { randomBytes } from 'node:crypto';
import type { ServerEvent, ServerEventBus } from '@modelcontextprotocol/server';
import type { Response } from 'express';
import type { Database } from '../db/index.js';
import type { Logger } from '../process/logger.js';
import type { Principal } from '../auth/principal.js';

/**
 * MCP resource subscriptions (docs/mcp.md#subscriptions). The server stays stateless for every request. A 2025 client
 * subscribes in a session: the id handed out at `initialize` only names what it subscribed to (rows of
 * mcp_subscriptions, so any API process can take a subscribe) and the server-to-client stream it opens with GET /mcp.
 * A 2026-07-28 client names the resources in one `subscriptions/listen` request, whose answer is the stream. The
 * process holding a stream reads the events feed every POLL_MS for the workspaces it streams to and sends
 * `notifications/resources/updated` for each subscribed resource an event touched.
 */

/** The workspace's event stream: updated by every event. */
export const EVENTS_URI = 'postwise://events';
/** One schedule: updated by each of its schedule.* events. */
export const SCHEDULE_URI_TEMPLATE = 'postwise://schedules/{id}';
const SCHEDULE_URI = /^postwise:\/\/schedules\/([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$/;

export const scheduleIdOf = (uri: string): string | undefined => SCHEDULE_URI.exec(uri)?.[1];
export const isResourceUri = (uri: string): boolean => uri === EVENTS_URI || scheduleIdOf(uri) !== undefined;

export const newSessionId = (): string => `mcp_${randomBytes(18).toString('base64url')}`;
/** Visible ASCII, as the specification asks of a session id; bounded, since it is stored. */
export const isSessionId = (value: string): boolean => /^[\x21-\x7e]{1,128}$/.test(value);

/** Who may use a session's subscriptions: the key, connected app or member that made them, in its workspace. */
const holderOf = (principal: Principal): string =>
  principal.kind === 'apiKey' ? `key:${principal.keyId}` : principal.kind === 'connection' ? `app:${principal.connectionId}` : `user:${principal.userId}`;

export async function subscribe(db: Database, sessionId: string, principal: Principal, uri: string): Promise<void> {
  await db`
    INSERT INTO mcp_subscriptions (session_id, uri, organization_id, holder)
    VALUES (${sessionId}, ${uri}, ${principal.workspaceId}, ${holderOf(principal)})
    ON CONFLICT (session_id, uri) DO UPDATE SET created_at = now()
    WHERE mcp_subscriptions.holder = EXCLUDED.holder`;
}

export async function unsubscribe(db: Database, sessionId: string, principal: Principal, uri: string): Promise<void> {
  await db`DELETE FROM mcp_subscriptions WHERE session_id = ${sessionId} AND uri = ${uri} AND holder = ${holderOf(principal)}`;
}

/** DELETE /mcp: the session's subscriptions end. */
export async function endSession(db: Database, sessionId: string, principal: Principal): Promise<void> {
  await db`DELETE FROM mcp_subscriptions WHERE session_id = ${sessionId} AND holder = ${holderOf(principal)}`;
}

const POLL_MS = 500;
/** A comment line now and then keeps proxies from closing an idle stream. */
const KEEPALIVE_MS = 25_000;

interface Stream {
  /** The 2025 session whose subscriptions are sent; none for a 2026 listen, which is sent every resource and keeps those it asked for. */
  sessionId: string | undefined;
  workspaceId: string;
  holder: string;
  /** Sends one notifications/resources/updated. */
  send: (uri: string) => void;
  /** A comment that keeps an idle HTTP stream open; none over stdio. */
  keepalive?: () => void;
  end: () => void;
}

/** The server-to-client streams open on this process, and the feed reader that serves them while any is open. */
export class NotificationStreams {
  private readonly streams = new Set<Stream>();
  private position: { tx: string; seq: string } | undefined;
  /** Counts the reader's starts and stops: a start or a poll that finds it changed was overtaken, and does nothing. */
  private generation = 0;
  private running = false;
  private timer: NodeJS.Timeout | undefined;
  private keepalive: NodeJS.Timeout | undefined;
  private polling = false;

  constructor(
    private readonly db: Database,
    private readonly logger: Logger,
  ) {}

  /** Serves GET /mcp: an SSE stream of notifications for `sessionId`'s subscriptions, until the client goes. */
  open(sessionId: string, principal: Principal, res: Response): void {
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive', 'mcp-session-id': sessionId });
    res.write(': subscribed resources are announced here\n\n');
    const detach = this.attach(sessionId, principal, {
      send: (uri) => res.write(`data: ${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/resources/updated', params: { uri } })}\n\n`),
      keepalive: () => res.write(': keepalive\n\n'),
      end: () => res.end(),
    });
    res.once('close', detach);
  }

  /**
   * Announces `sessionId`'s subscribed resources (or, without one, every resource of the workspace an event touched)
   * through `sink` (stdio: the server's own notifications) until the returned function detaches it. The feed reader
   * starts with the first stream; if it cannot (the database is away), that is logged and the next stream tries again.
   */
  attach(sessionId: string | undefined, principal: Principal, sink: Pick<Stream, 'send' | 'keepalive' | 'end'>): () => void {
    const stream: Stream = { sessionId, workspaceId: principal.workspaceId, holder: holderOf(principal), ...sink };
    this.streams.add(stream);
    if (!this.running) this.start();
    return () => {
      this.streams.delete(stream);
      if (this.streams.size === 0) this.stop();
    };
  }

  /** Ends every stream (the server is stopping). */
  closeAll(): void {
    for (const stream of this.streams) stream.end();
    this.streams.clear();
    this.stop();
  }

  private start(): void {
    this.running = true;
    const generation = ++this.generation;
    // From now on: a stream announces changes made while it is open.
    this.db<{ tx: string; seq: string }[]>`
      SELECT tx::text, seq::text FROM events WHERE tx < pg_snapshot_xmin(pg_current_snapshot()) ORDER BY tx DESC, seq DESC LIMIT 1`.then(
      ([latest]) => {
        if (generation !== this.generation) return;
        this.position = latest ?? { tx: '0', seq: '0' };
        // Unref'd: the streams' own connections (or stdin) keep the process alive, never the reader.
        this.timer = setInterval(() => void this.poll(), POLL_MS).unref();
        this.keepalive = setInterval(() => this.streams.forEach((stream) => stream.keepalive?.()), KEEPALIVE_MS).unref();
      },
      (error: unknown) => {
        if (generation !== this.generation) return;
        this.running = false;
        this.logger.warn('could not start reading events for MCP notifications; the next stream tries again', { error });
      },
    );
  }

  private stop(): void {
    this.generation++;
    this.running = false;
    clearInterval(this.timer);
    clearInterval(this.keepalive);
    this.timer = this.keepalive = this.position = undefined;
  }

  private async poll(): Promise<void> {
    if (this.polling || this.streams.size === 0 || !this.position) return;
    this.polling = true;
    const generation = this.generation;
    try {
      const workspaces = [...new Set([...this.streams].map((stream) => stream.workspaceId))];
      const sessions = [...new Set([...this.streams].flatMap((stream) => stream.sessionId ?? []))];
      const events = await this.db<{ tx: string; seq: string; organizationId: string; type: string; resourceId: string }[]>`
        SELECT e.tx::text, e.seq::text, e.organization_id, e.type, e.resource_id FROM events e
        WHERE e.organization_id = ANY(${workspaces}::uuid[]) AND e.tx < pg_snapshot_xmin(pg_current_snapshot())
          AND (e.tx, e.seq) > (${this.position.tx}::xid8, ${this.position.seq}::bigint)
        ORDER BY e.tx, e.seq LIMIT 1000`;
      // Stopped (and maybe started again) while reading: this read's position and news are no longer the reader's.
      if (events.length === 0 || generation !== this.generation) return;
      this.position = { tx: events.at(-1)!.tx, seq: events.at(-1)!.seq };
      const subscriptions = await this.db<{ sessionId: string; uri: string; holder: string }[]>`
        SELECT session_id, uri, holder FROM mcp_subscriptions WHERE session_id = ANY(${sessions})`;
      for (const stream of this.streams) {
        const wanted = stream.sessionId
          ? new Set(subscriptions.filter((row) => row.sessionId === stream.sessionId && row.holder === stream.holder).map((row) => row.uri))
          : undefined;
        if (wanted?.size === 0) continue;
        const updated = new Set<string>();
        for (const event of events) {
          if (event.organizationId !== stream.workspaceId) continue;
          if (!wanted || wanted.has(EVENTS_URI)) updated.add(EVENTS_URI);
          const schedule = `postwise://schedules/${event.resourceId}`;
          if (event.type.startsWith('schedule.') && (!wanted || wanted.has(schedule))) updated.add(schedule);
        }
        for (const uri of updated) stream.send(uri);
      }
    } catch (error) {
      this.logger.warn('reading events for MCP notifications failed; trying again', { error });
    } finally {
      this.polling = false;
    }
  }
}

/**
 * The bus 2026-07-28's `subscriptions/listen` streams hang on (the SDK's transport serves them). The SDK's own bus
 * would send every listener every event, whatever its workspace: here a listener is told only of its own workspace's
 * changes, through the same feed reader as the 2025 streams. The SDK gives a bus no say in who listens (upstream:
 * modelcontextprotocol/typescript-sdk#2827), so the transport runs each request inside `as(principal, …)` and a
 * listener is tied to the principal whose request opened it. A schedule of another workspace is acknowledged and
 * never updated: nothing of it is told.
 */
export class WorkspaceEventBus implements ServerEventBus {
  private readonly caller = new AsyncLocalStorage<Principal>();
  private readonly open = new Map<string, number>();

  constructor(private readonly streams: NotificationStreams) {}

  /** How many listens the workspace has open on this process. */
  listening(workspaceId: string): number {
    return this.open.get(workspaceId) ?? 0;
  }

  as<T>(principal: Principal, serve: () => T): T {
    return this.caller.run(principal, serve);
  }

  /** Changes come from the feed (subscribe), never from a handler: nothing is published to everyone. */
  publish(): void {}

  subscribe(listener: (event: ServerEvent) => void): () => void {
    const principal = this.caller.getStore();
    if (!principal) return () => {};
    const { workspaceId } = principal;
    this.open.set(workspaceId, this.listening(workspaceId) + 1);
    // Outside the request's context: the reader it may start serves every workspace, not this principal.
    const detach = this.caller.exit(() => this.streams.attach(undefined, principal, { send: (uri) => listener({ kind: 'resource_updated', uri }), end: () => {} }));
    let detached = false;
    return () => {
      if (detached) return;
      detached = true;
      detach();
      const left = this.listening(workspaceId) - 1;
      if (left > 0) this.open.set(workspaceId, left);
      else this.open.delete(workspaceId);
    };
  }
}
