import { StdioClientTransport } from "@modelcontextprotocol/client/stdio";
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectThroughForm, createAccount } from './support/bluesky.js';
import { call, eventually, scheduleDueIn, startTestService, type TestService, type Workspace } from './support/service.js';

/**
 * MCP resource subscriptions with the official SDK client over Streamable HTTP: the session handed out at initialize,
 * the GET stream the client opens, and `notifications/resources/updated` for a subscribed schedule as the worker
 * publishes it to a real PDS; the events resource; the 404 rule for resources; a session's end.
 */

let service: TestService;
let ws: Workspace;
let sql: postgres.Sql;
let channel: string;

beforeAll(async () => {
  service = await startTestService({}, { api: true, worker: true });
  ws = await service.workspace({ plan: 'business' });
  sql = postgres(service.databaseUrl, { max: 2, onnotice: () => {} });
  channel = await connectThroughForm(service.api, ws.apiKey, await createAccount());
}, 60_000);
afterAll(async () => {
  await sql?.end();
  await service?.stop();
});

async function connectClient(key = ws.apiKey) {
  const client = new Client({ name: 'test', version: '1.0.0' });
  const transport = new StreamableHTTPClientTransport(new URL(`${service.base}/mcp`), { requestInit: { headers: { 'x-api-key': key } } });
  const updated: string[] = [];
  client.setNotificationHandler('notifications/resources/updated', (notification) => void updated.push(notification.params.uri));
  await client.connect(transport);
  return { client, transport, updated };
}

/** A post due in `seconds` on the test's Bluesky channel; its one schedule's id. */
const dueIn = (content: string, seconds: number) => scheduleDueIn(service.api, ws.apiKey, channel, content, seconds);

describe('MCP resource subscriptions', () => {
  it('tells a subscribed client on its stream as its schedule is published, and the events resource as anything happens', async () => {
    const { client, transport, updated } = await connectClient();
    try {
      expect(client.getServerCapabilities()?.resources).toEqual({ subscribe: true, listChanged: false });
      expect(transport.sessionId).toMatch(/^mcp_[\w-]+$/);
      expect((await client.listResources()).resources.map((resource) => resource.uri)).toEqual(['postwise://events']);
      expect((await client.listResourceTemplates()).resourceTemplates.map((template) => template.uriTemplate)).toEqual(['postwise://schedules/{id}']);

      // Due once subscribed, not before: the news of a publish that came first would be gone.
      const watched = await dueIn('Watched over MCP', 600);
      const unwatched = await dueIn('Not watched', 600);
      await client.subscribeResource({ uri: `postwise://schedules/${watched}` });
      await client.subscribeResource({ uri: 'postwise://events' });
      for (const id of [watched, unwatched]) {
        const soon = { scheduledAt: new Date(Date.now() + 2000).toISOString() };
        expect((await call(`${service.api}/posts/schedules/${id}/reschedule`, { method: 'POST', key: ws.apiKey, body: soon })).status).toBe(200);
      }

      const read = async () => JSON.parse(((await client.readResource({ uri: `postwise://schedules/${watched}` })).contents[0] as { text: string }).text);
      const published = await eventually(read, (post) => post.schedules[0].status === 'PUBLISHED', 20_000);
      expect(published.schedules[0]).toMatchObject({ id: watched, status: 'PUBLISHED', platformPostId: expect.stringMatching(/^at:\/\//) });
      await eventually(async () => updated, (uris) => uris.includes(`postwise://schedules/${watched}`) && uris.includes('postwise://events'), 20_000);
      expect(updated).toContain(`postwise://schedules/${watched}`);
      expect(updated).toContain('postwise://events');
      expect(updated).not.toContain(`postwise://schedules/${unwatched}`);

      // The events resource reads as the feed of the last day.
      // (The feed shows an event once every transaction begun before it has ended: under load, a moment after the change.)
      const hasPublished = (events: { items: { type: string; data: { id: string } }[] }) => events.items.some((event) => event.type === 'schedule.published' && event.data.id === watched);
      const readEvents = async () => JSON.parse(((await client.readResource({ uri: 'postwise://events' })).contents[0] as { text: string }).text);
      expect(hasPublished(await eventually(readEvents, hasPublished, 10_000))).toBe(true);

      // Unsubscribed: no more news of it. Shown by news that does come, not by a moment of silence: the events resource,
      // still subscribed, is announced for the deletion (one transaction) by the read of the feed that would announce
      // the schedule too, just after it; then for a draft made once that has come, by a later read of the feed, on the
      // same ordered stream: by then all that the first read sent has come.
      await client.unsubscribeResource({ uri: `postwise://schedules/${watched}` });
      const seen = updated.length;
      const eventsAnnounced = () => updated.slice(seen).filter((uri) => uri === 'postwise://events').length;
      await call(`${service.api}/schedules/${watched}`, { method: 'DELETE', key: ws.apiKey });
      const forDeletion = await eventually(async () => eventsAnnounced(), (count) => count >= 1, 20_000);
      expect(forDeletion, 'the deletion announced on postwise://events').toBeGreaterThanOrEqual(1);
      const marker = await call(`${service.api}/posts`, {
        method: 'POST',
        key: ws.apiKey,
        body: { rows: [{ content: 'After the unsubscribe' }], shared: { selectedIntegrations: [channel] }, postAction: 'DRAFT' },
      });
      expect(marker.status, marker.text).toBe(201);
      expect(await eventually(async () => eventsAnnounced(), (count) => count > forDeletion, 20_000), 'the draft announced on postwise://events').toBeGreaterThan(forDeletion);
      expect(updated.slice(seen)).not.toContain(`postwise://schedules/${watched}`);
    } finally {
      await client.close();
    }
  }, 60_000);

  it('over stdio too (npm run mcp:stdio): a subscribed schedule is announced as the worker publishes it', async () => {
    const stdio = new Client({ name: 'test', version: '1.0.0' });
    const updated: string[] = [];
    stdio.setNotificationHandler('notifications/resources/updated', (notification) => void updated.push(notification.params.uri));
    const env = { ...(process.env as Record<string, string>), DATABASE_URL: service.databaseUrl, POSTWISE_API_KEY: ws.apiKey, LOG_LEVEL: 'warn' };
    await stdio.connect(new StdioClientTransport({ command: process.execPath, args: ['--import', 'tsx', 'src/mcp/stdio.ts'], env, stderr: 'pipe' }));
    try {
      const watched = await dueIn('Watched over stdio', 3);
      await stdio.subscribeResource({ uri: `postwise://schedules/${watched}` });
      await eventually(async () => updated, (uris) => uris.includes(`postwise://schedules/${watched}`), 20_000);
      expect(updated).toContain(`postwise://schedules/${watched}`);
    } finally {
      await stdio.close();
    }
  }, 60_000);

  it('keeps the 404 rule for resources, and ends a session\'s subscriptions on DELETE /mcp', async () => {
    const other = await service.workspace({ plan: 'business' });
    const foreign = await (async () => {
      const sky = (await other.admin('createIntegration', { platform: 'LINKEDIN', name: 'Theirs' })).id;
      const created = await call(`${service.api}/posts`, { method: 'POST', key: other.apiKey, body: { rows: [{ content: 'Theirs' }], shared: { selectedIntegrations: [sky] }, postAction: 'DRAFT' } });
      return (await sql<{ id: string }[]>`SELECT id FROM schedules WHERE post_id = ${created.json.postId}`)[0]!.id;
    })();
    const { client, transport } = await connectClient();
    try {
      for (const uri of [`postwise://schedules/${foreign}`, 'postwise://schedules/00000000-0000-4000-8000-000000000000', 'postwise://nothing']) {
        // 2025's code on the wire (the v2 client reads it as its ResourceNotFoundError whatever the code).
        for (const method of ['resources/subscribe', 'resources/read']) {
          const answer = await call(`${service.base}/mcp`, { method: 'POST', key: ws.apiKey, headers: { 'mcp-session-id': transport.sessionId! }, body: { jsonrpc: '2.0', id: 1, method, params: { uri } } });
          expect(answer.json.error).toEqual({ code: -32002, message: `Resource not found: ${uri}`, data: { uri } });
        }
        await expect(client.subscribeResource({ uri })).rejects.toThrow(`Resource not found: ${uri}`);
        await expect(client.readResource({ uri })).rejects.toThrow(`Resource not found: ${uri}`);
      }
      await client.subscribeResource({ uri: 'postwise://events' });
      const session = transport.sessionId!;
      expect(await sql`SELECT 1 FROM mcp_subscriptions WHERE session_id = ${session}`).toHaveLength(1);
      await transport.terminateSession();
      expect(await sql`SELECT 1 FROM mcp_subscriptions WHERE session_id = ${session}`).toHaveLength(0);
    } finally {
      await client.close();
    }

    // Without a session (a plain JSON-RPC client), a subscribe is refused with the reason; GET /mcp stays 405.
    const plain = await call(`${service.base}/mcp`, {
      method: 'POST',
      key: ws.apiKey,
      body: { jsonrpc: '2.0', id: 1, method: 'resources/subscribe', params: { uri: 'postwise://events' } },
    });
    expect(plain.json.error.message).toMatch(/Subscriptions need a session/);
    expect((await call(`${service.base}/mcp`, { key: ws.apiKey, headers: { accept: 'text/event-stream' } })).status).toBe(405);
  });
});
