import { createHash, randomUUID } from 'node:crypto';
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseEncryptionKey, secretsFrom } from '../src/auth/secrets.js';
import { connectThroughForm, createAccount } from './support/bluesky.js';
import { photo } from './support/images.js';
import { call, eventually, isSettled, startTestService, type TestService, type Workspace } from './support/service.js';

/**
 * Events (GET /events and the outbox behind it): each change emits its event in its own transaction, with the resource
 * as the API shows it; a change that rolls back emits nothing; the feed walks without gaps or duplicates while events
 * are written, and holds back what a still-running older transaction may yet add; old events are pruned.
 */

let service: TestService;
let ws: Workspace;
let sql: postgres.Sql;

beforeAll(async () => {
  service = await startTestService({}, { api: true, worker: true });
  ws = await service.workspace({ plan: 'business' });
  sql = postgres(service.databaseUrl, { max: 4, onnotice: () => {}, transform: postgres.camel });
}, 60_000);
afterAll(async () => {
  await sql?.end();
  await service?.stop();
});

const rest = (path: string, options: { method?: string; body?: unknown } = {}, key = ws.apiKey) => call(`${service.api}${path}`, { key, ...options });

interface FeedEvent {
  id: string;
  type: string;
  createdAt: string;
  workspaceId: string;
  data: any;
}

/** Every event after `cursor` (all when undefined), walked a page of `limit` at a time. */
async function feed(query: Record<string, string | string[]> = {}, cursor?: string, limit = 100, key = ws.apiKey): Promise<FeedEvent[]> {
  const events: FeedEvent[] = [];
  for (;;) {
    const params = new URLSearchParams({ limit: String(limit), ...(cursor && { cursor }) });
    for (const [name, value] of Object.entries(query)) for (const one of [value].flat()) params.append(name, one);
    const page = await rest(`/events?${params}`, {}, key);
    expect(page.status, page.text).toBe(200);
    events.push(...page.json.items);
    if (page.json.items.length) cursor = page.json.items.at(-1).id;
    if (!page.json.nextCursor) return events;
    expect(page.json.nextCursor).toBe(cursor);
  }
}

/**
 * The feed once `check` holds: an event is served once every transaction older than its own has ended, and the
 * other test files' transactions on the same Postgres count too, so what was just committed may come a moment later.
 */
const feedOnce = (check: (events: FeedEvent[]) => boolean, query: Record<string, string | string[]> = {}, cursor?: string) =>
  eventually(() => feed(query, cursor), check, 10_000);

const about = (events: FeedEvent[], id: string) => events.filter((event) => event.data.id === id || event.data.postId === id || event.data.uploadId === id);
const typesOf = (events: FeedEvent[]) => events.map((event) => event.type);

async function settled(ids: string[], timeoutMs = 30_000) {
  return eventually(() => sql<{ status: string }[]>`SELECT status FROM schedules WHERE id = ANY(${ids}::uuid[])`, (rows) => rows.every(isSettled), timeoutMs);
}

describe('events', () => {
  it('a post\'s life on a real PDS: connected, created and scheduled, published, each with the resource as the API shows it', async () => {
    const account = await createAccount();
    const channel = await connectThroughForm(service.api, ws.apiKey, account);

    const bytes = await photo(64, 48);
    const checksum = createHash('sha256').update(bytes).digest('base64');
    const started = await rest('/uploads/initiate', {
      method: 'POST',
      body: { scenarioId: 'post_attachments', fileName: 'photo.jpg', fileType: 'image/jpeg', fileSize: bytes.length, checksum },
    });
    expect(started.status, started.text).toBe(200);
    expect((await fetch(started.json.signedUrl, { method: 'PUT', body: new Uint8Array(bytes), headers: started.json.requiredHeaders })).status).toBe(200);
    const completed = await rest('/uploads/complete', { method: 'POST', body: { uploadId: started.json.uploadId, checksum } });
    expect(completed.status, completed.text).toBe(200);
    // Its variants made first: a post whose images are still being processed waits for them.
    await eventually(
      async () => (await sql<{ variantsStatus: string }[]>`SELECT variants_status FROM media WHERE id = ${completed.json.mediaId}`)[0]!.variantsStatus,
      (status) => status !== 'pending',
      20_000,
    );
    // Completing again changes nothing and emits nothing.
    expect((await rest('/uploads/complete', { method: 'POST', body: { uploadId: started.json.uploadId, checksum } })).json.idempotent).toBe(true);

    const created = await rest('/posts', {
      method: 'POST',
      body: { rows: [{ content: 'Events from a real PDS', media: [{ id: completed.json.mediaId }] }], shared: { selectedIntegrations: [channel] }, postAction: 'PUBLISH_NOW' },
    });
    expect(created.status, created.text).toBe(201);
    const postId = created.json.postId as string;
    const [schedule] = await sql<{ id: string }[]>`SELECT id FROM schedules WHERE post_id = ${postId}`;
    expect((await settled([schedule!.id]))[0]!.status).toBe('PUBLISHED');

    const events = await feedOnce((all) => about(all, postId).length >= 4);
    expect(events.every((event) => event.workspaceId === ws.workspaceId && /^evt_\d+_\d+$/.test(event.id))).toBe(true);
    const connected = events.find((event) => event.type === 'integration.connected' && event.data.id === channel)!;
    expect(connected.data).toMatchObject({ id: channel, platform: 'BLUESKY', tokenStatus: 'VALID', connectStatus: 'ACTIVE' });
    const upload = about(events, started.json.uploadId);
    expect(typesOf(upload)).toEqual(['upload.completed']);
    const { idempotent: _idempotent, ...uploadShown } = completed.json;
    expect(upload[0]!.data).toEqual(uploadShown);

    const post = about(events, postId);
    expect(typesOf(post)).toEqual(['post.created', 'schedule.scheduled', 'schedule.publishing', 'schedule.published']);
    expect(post[0]!.data).toMatchObject({ id: postId, content: 'Events from a real PDS', schedules: [{ id: schedule!.id, status: 'SCHEDULED' }] });
    expect(post.slice(1).map((event) => event.data.status)).toEqual(['SCHEDULED', 'PUBLISHING', 'PUBLISHED']);
    // The published schedule is the one the API shows now, media URLs included (made in SQL by the engine's statement).
    const shown = await rest(`/schedules/${schedule!.id}?postId=${postId}`);
    const { post: _calendarPost, ...scheduleShown } = shown.json.schedules[0];
    expect(post[3]!.data).toEqual(scheduleShown);
    expect(post[3]!.data.platformPostId).toMatch(/^at:\/\//);
    expect(post[3]!.data.releaseUrl).toMatch(/^https:\/\/bsky\.app\//);
    expect(post[3]!.data.attachmentMediaUrls).toEqual([completed.json.publicUrl]);
    // The whole life in the order it happened, each id once.
    const ids = events.map((event) => event.id);
    expect(new Set(ids).size).toBe(ids.length);
    expect(events.indexOf(connected)).toBeLessThan(events.indexOf(post[0]!));
  }, 60_000);

  it('changes by hand: updated, rescheduled, retried, deleted, disconnected, and a failure with the channel\'s error', async () => {
    const start = (await feed()).at(-1)?.id;
    const bare = (await ws.admin('createIntegration', { platform: 'BLUESKY', name: 'Never connected' })).id;
    const later = new Date(Date.now() + 86_400_000).toISOString();
    const created = await rest('/posts', {
      method: 'POST',
      body: { rows: [{ content: 'By hand', scheduledAt: later, thread: [{ content: 'Part two' }] }], shared: { selectedIntegrations: [bare] }, postAction: 'SCHEDULED_TIME' },
    });
    const postId = created.json.postId as string;
    const [root, part] = await sql<{ id: string }[]>`SELECT id FROM schedules WHERE post_id = ${postId} ORDER BY thread_order`;

    expect((await rest(`/posts/${postId}`, { method: 'PATCH', body: { content: 'By hand, edited' } })).status).toBe(200);
    const moved = new Date(Date.now() + 2 * 86_400_000).toISOString();
    expect((await rest(`/posts/schedules/${root!.id}/reschedule`, { method: 'POST', body: { scheduledAt: moved } })).status).toBe(200);
    // Due now on a channel without credentials: it fails, and its thread part with it.
    expect((await rest(`/posts/schedules/${root!.id}/reschedule`, { method: 'POST', body: { scheduledAt: new Date(Date.now() + 2000).toISOString() } })).status).toBe(200);
    await settled([root!.id, part!.id]);
    expect((await rest(`/posts/schedules/${root!.id}/retry`, { method: 'POST' })).status).toBe(200);
    await settled([root!.id, part!.id]);
    expect((await rest(`/schedules/${part!.id}`, { method: 'DELETE' })).status).toBe(200);
    expect((await rest(`/posts/${postId}`, { method: 'DELETE' })).status).toBe(200);

    const events = about(await feedOnce((all) => about(all, postId).length >= 19, {}, start), postId);
    const seen = events.map((event) => `${event.type} ${event.data.id === postId ? 'post' : event.data.id === root!.id ? 'root' : 'part'} ${event.data.status ?? ''}`.trim());
    expect(seen).toEqual([
      'post.created post',
      'schedule.scheduled root SCHEDULED',
      'schedule.scheduled part SCHEDULED',
      'post.updated post',
      'schedule.rescheduled root SCHEDULED',
      'schedule.rescheduled part SCHEDULED',
      'schedule.rescheduled root SCHEDULED',
      'schedule.rescheduled part SCHEDULED',
      'schedule.publishing root PUBLISHING',
      'schedule.failed root FAILED',
      'schedule.failed part FAILED',
      'schedule.retrying root SCHEDULED',
      'schedule.retrying part SCHEDULED',
      'schedule.publishing root PUBLISHING',
      'schedule.failed root FAILED',
      'schedule.failed part FAILED',
      'schedule.deleted part FAILED',
      'post.deleted post',
      'schedule.deleted root FAILED',
    ]);
    expect(events[3]!.data.content).toBe('By hand, edited');
    expect(events[4]!.data.scheduledAt).toBe(moved);
    expect(events[9]!.data.failureReason).toBe('This channel is not connected: connect it (POST /integrations/connect), then retry');
    // A deleted post's event carries it as it was: its one schedule left.
    expect(events[17]!.data.schedules.map((schedule: { id: string }) => schedule.id)).toEqual([root!.id]);

    // A revoked app password: the schedule fails and the channel reports its error, once.
    const revoked = await createAccount();
    const channel = await connectThroughForm(service.api, ws.apiKey, revoked);
    await revoked.agent.com.atproto.server.revokeAppPassword({ name: 'postwise' });
    const secrets = secretsFrom(parseEncryptionKey(service.service.core.app.config.encryptionKey!));
    const [row] = await sql<{ credentials: Buffer }[]>`SELECT credentials FROM integrations WHERE id = ${channel}`;
    const { session: _dropped, ...withoutSession } = JSON.parse(secrets.open(row!.credentials).toString());
    await sql`UPDATE integrations SET credentials = ${secrets.seal(Buffer.from(JSON.stringify(withoutSession)))} WHERE id = ${channel}`;
    // From after its connection, once the feed serves that (an event comes a moment after its commit: feedOnce).
    const connected = await feedOnce((events) => events.some((event) => event.type === 'integration.connected' && event.data.id === channel));
    const cursor = connected.at(-1)!.id;
    for (const content of ['Refused once', 'Refused twice']) {
      const refused = await rest('/posts', { method: 'POST', body: { rows: [{ content }], shared: { selectedIntegrations: [channel] }, postAction: 'PUBLISH_NOW' } });
      await settled((await sql<{ id: string }[]>`SELECT id FROM schedules WHERE post_id = ${refused.json.postId}`).map((schedule) => schedule.id));
    }
    await ws.admin('disconnectIntegration', { id: channel });
    await ws.admin('disconnectIntegration', { id: channel });
    const channelEvents = (await feedOnce((events) => events.length >= 2, { resourceId: channel }, cursor)).map((event) => [event.type, event.data.tokenStatus, event.data.connectionErrorCode]);
    expect(channelEvents).toEqual([
      ['integration.error', 'REVOKED', 'REFRESH_TOKEN_REVOKED'],
      ['integration.disconnected', 'MISSING', 'DISCONNECTED'],
    ]);
  });

  it('a change that rolls back emits nothing: its events were written, and went with it', async () => {
    // Fails at commit, after every statement of the create (its events included) has run.
    await sql.unsafe(`
      CREATE FUNCTION refuse_at_commit() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN IF NEW.content = 'Refused at commit' THEN RAISE EXCEPTION 'refused by the test'; END IF; RETURN NULL; END $$;
      CREATE CONSTRAINT TRIGGER refuse_at_commit AFTER INSERT ON posts DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION refuse_at_commit();`);
    try {
      const channel = (await ws.admin('createIntegration', { platform: 'LINKEDIN', name: 'Rollback' })).id;
      const before = (await feed()).length;
      const refused = await rest('/posts', {
        method: 'POST',
        body: { rows: [{ content: 'Kept' }, { content: 'Refused at commit' }], shared: { selectedIntegrations: [channel] }, postAction: 'DRAFT' },
      });
      expect(refused.status).toBe(500);
      expect(await feed()).toHaveLength(before);
      expect(await sql`SELECT 1 FROM posts WHERE content = 'Kept'`).toHaveLength(0);
      // And a committed one always has its event.
      const kept = await rest('/posts', { method: 'POST', body: { rows: [{ content: 'Kept' }], shared: { selectedIntegrations: [channel] }, postAction: 'DRAFT' } });
      expect(kept.status).toBe(201);
      expect(typesOf(about(await feedOnce((all) => about(all, kept.json.postId).length > 0), kept.json.postId))).toEqual(['post.created']);
    } finally {
      await sql.unsafe('DROP TRIGGER refuse_at_commit ON posts; DROP FUNCTION refuse_at_commit();');
    }
  });

  it('the feed holds back events behind an older transaction still running, then serves them in order, none skipped', async () => {
    const channel = (await ws.admin('createIntegration', { platform: 'LINKEDIN', name: 'Order' })).id;
    const draft = (content: string) =>
      rest('/posts', { method: 'POST', body: { rows: [{ content }], shared: { selectedIntegrations: [channel] }, postAction: 'DRAFT' } });
    const cursor = (await feed()).at(-1)!.id;
    // A transaction that writes an event first and commits last (as a slow change would).
    const slow = await sql.reserve();
    await slow`BEGIN`;
    const [earlier] = await slow<{ resourceId: string }[]>`
      INSERT INTO events (organization_id, type, resource_id, post_id, data)
      SELECT organization_id, 'post.updated', resource_id, post_id, data FROM events
      WHERE organization_id = ${ws.workspaceId} AND type = 'post.created' ORDER BY seq DESC LIMIT 1
      RETURNING resource_id`;
    const fast = await draft('Committed first');
    expect(fast.status).toBe(201);
    // Committed, yet not served: the slow transaction may still add an event before it.
    expect(await feed({}, cursor)).toEqual([]);
    await slow`COMMIT`;
    slow.release();
    const after = await feedOnce((events) => events.length >= 2, {}, cursor);
    expect(after.map((event) => [event.type, event.data.id])).toEqual([
      ['post.updated', earlier!.resourceId],
      ['post.created', fast.json.postId],
    ]);
  });

  it('walks to the end without gaps or duplicates while events are being written', async () => {
    const channel = (await ws.admin('createIntegration', { platform: 'LINKEDIN', name: 'Walk' })).id;
    const cursor = (await feed()).at(-1)!.id;
    const made: string[] = [];
    let writing = true;
    const writers = Array.from({ length: 4 }, async (_, writer) => {
      for (let index = 0; index < 15; index++) {
        const created = await rest('/posts', {
          method: 'POST',
          body: { rows: [{ content: `Walk ${writer}.${index}` }, { content: `Walk ${writer}.${index}b` }], shared: { selectedIntegrations: [channel] }, postAction: 'DRAFT' },
        });
        expect(created.status, created.text).toBe(201);
        made.push(...created.json.postIds);
      }
    });
    const done = Promise.all(writers).finally(() => (writing = false));
    const read: FeedEvent[] = [];
    let position = cursor;
    // Small pages, read while the writers write; then on after they stop, until every post made is there (an event is
    // served once the transactions older than its own have ended) or 10 s have passed.
    const stopAt = () => !writing && (read.length >= made.length || Date.now() > deadline);
    let deadline = Infinity;
    void done.then(() => (deadline = Date.now() + 10_000));
    while (!stopAt()) {
      const page = await feed({}, position, 7);
      read.push(...page);
      position = page.at(-1)?.id ?? position;
    }
    await done;
    const ids = read.map((event) => event.id);
    expect(new Set(ids).size).toBe(ids.length);
    expect(read.map((event) => event.data.id).sort()).toEqual([...made].sort());
    // Each page continued where the last one ended: the ids increase by their (transaction, row) position.
    const positions = ids.map((id) => id.split('_').slice(1).map(BigInt) as [bigint, bigint]);
    for (let index = 1; index < positions.length; index++) {
      const [tx, seq] = positions[index]!;
      const [beforeTx, beforeSeq] = positions[index - 1]!;
      expect(tx > beforeTx || (tx === beforeTx && seq > beforeSeq)).toBe(true);
    }
  });

  it('filters by type and by resource, refuses a cursor it did not give, and answers the same over MCP', async () => {
    const other = await service.workspace({ plan: 'business' });
    const mine = await feed();
    expect(await feed({}, undefined, 100, other.apiKey)).toEqual([]);

    const published = await feed({ type: ['schedule.published', 'post.deleted'] });
    expect(new Set(typesOf(published))).toEqual(new Set(['schedule.published', 'post.deleted']));
    expect(published).toEqual(mine.filter((event) => ['schedule.published', 'post.deleted'].includes(event.type)));
    expect(await feed({ type: 'schedule.published,post.deleted' })).toEqual(published);
    const postId = mine.find((event) => event.type === 'schedule.published')!.data.postId;
    expect(await feed({ resourceId: postId })).toEqual(about(mine, postId));

    for (const cursor of ['12', 'evt_x_1', `evt_1_${'9'.repeat(30)}`]) {
      const refused = await rest(`/events?cursor=${cursor}`);
      expect(refused.status).toBe(400);
      expect(refused.json).toMatchObject({ code: 'VALIDATION_ERROR', message: expect.stringMatching(/cursor/) });
    }
    expect((await rest('/events?type=schedule.exploded')).status).toBe(400);

    const mcp = new Client({ name: 'test', version: '1.0.0' });
    await mcp.connect(new StreamableHTTPClientTransport(new URL(`${service.base}/mcp`), { requestInit: { headers: { 'x-api-key': ws.apiKey } } }));
    try {
      const tool = (await mcp.listTools()).tools.find((candidate) => candidate.name === 'listEvents')!;
      expect(tool.description).toMatch(/always works/);
      const answer = await mcp.callTool({ name: 'listEvents', arguments: { limit: 5, type: ['schedule.published'] } });
      expect(answer.isError).toBeFalsy();
      expect(answer.structuredContent).toEqual((await rest('/events?limit=5&type=schedule.published')).json);
    } finally {
      await mcp.close();
    }
  });

  it('warns once that a token which cannot be refreshed is about to expire: integration.token_expiring, from the hourly job', async () => {
    const channel = (await ws.admin('createIntegration', { platform: 'LINKEDIN', name: 'Expiring' })).id;
    // As LinkedIn leaves a token without a refresh token: it expires in 3 days, and only a reconnect renews it.
    await sql`UPDATE integrations SET credentials = decode('00', 'hex'), token_status = 'VALID', auto_refresh_unavailable = true,
      expires_at = now() + interval '3 days' WHERE id = ${channel}`;
    const warned = async () => (await feed({ resourceId: channel, type: 'integration.token_expiring' })).map((event) => event.data.tokenStatus);
    for (const _run of [1, 2]) {
      await sql`SELECT graphile_worker.add_job('warn-expiring-tokens', '{}'::json)`;
      await eventually(() => sql`SELECT 1 FROM graphile_worker.jobs WHERE task_identifier = 'warn-expiring-tokens'`, (rows) => rows.length === 0, 10_000);
    }
    expect(await eventually(warned, (list) => list.length > 0)).toEqual(['EXPIRING']);
    // Reconnected with a new token that expires as soon: warned of again, once.
    await sql`UPDATE integrations SET expires_at = now() + interval '4 days' WHERE id = ${channel}`;
    await sql`SELECT graphile_worker.add_job('warn-expiring-tokens', '{}'::json)`;
    expect(await eventually(warned, (list) => list.length > 1)).toEqual(['EXPIRING', 'EXPIRING']);
  });

  it('keeps events 30 days: the hourly prune-events job deletes older ones (and language detections older than 400 days)', async () => {
    const channel = (await ws.admin('createIntegration', { platform: 'LINKEDIN', name: 'Old' })).id;
    const [oldText, newText] = [randomUUID(), randomUUID()];
    await sql`INSERT INTO detected_languages (text_md5, language, detected_at)
      VALUES (${oldText}, 'de', now() - interval '401 days'), (${newText}, 'fr', now() - interval '399 days')`;
    await sql`
      INSERT INTO events (organization_id, type, resource_id, data, created_at)
      VALUES (${ws.workspaceId}, 'integration.connected', ${channel}, '{}', now() - interval '31 days'),
        (${ws.workspaceId}, 'integration.error', ${channel}, '{}', now() - interval '29 days')`;
    await sql`SELECT graphile_worker.add_job('prune-events', '{}'::json)`;
    const left = await eventually(
      () => sql<{ type: string }[]>`SELECT type FROM events WHERE resource_id = ${channel}`,
      (rows) => rows.length === 1,
      15_000,
    );
    expect(left.map((row) => row.type)).toEqual(['integration.error']);
    expect(await sql`SELECT 1 FROM graphile_worker.jobs WHERE task_identifier = 'prune-events' AND attempts > 0`).toHaveLength(0);
    const detections = await sql<{ language: string }[]>`SELECT language FROM detected_languages WHERE text_md5 IN (${oldText}, ${newText})`;
    expect(detections).toEqual([{ language: 'fr' }]);
  });
});
