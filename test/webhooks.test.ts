import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import postgres from 'postgres';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../src/process/free-port.js';
import { admin } from './support/processes.js';
import { call, eventually, startTestService, type TestService, type Workspace } from './support/service.js';

/**
 * Webhooks: endpoints made with the internal operations, deliveries signed as Standard Webhooks says (each one
 * verified here with the `standardwebhooks` package), retried after a 500, a timeout and a refused connection, in
 * order per resource, redelivered by hand, refused for addresses that are not public, and an endpoint that keeps
 * failing disabled with an event. The receiver runs on loopback, trusted through MEDIA_FETCH_ALLOW_HOSTS.
 */

interface Received {
  path: string;
  headers: IncomingMessage['headers'];
  body: string;
  answered: number | 'hang';
}

/** A receiver on loopback: each request is answered by the next of `plan` (200 once the plan is spent). */
class Receiver {
  server: Server;
  received: Received[] = [];
  plan: (number | 'hang')[] = [];
  constructor() {
    this.server = createServer((request: IncomingMessage, response: ServerResponse) => {
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', () => {
        const answered = this.plan.shift() ?? 200;
        this.received.push({ path: request.url ?? '', headers: request.headers, body: Buffer.concat(chunks).toString(), answered });
        if (answered === 'hang') return; // never answers: the delivery times out
        // A redirect names a path that records being followed: deliveries must not follow it.
        const location = answered >= 300 && answered < 400 ? { location: '/followed' } : {};
        response.writeHead(answered, { 'content-type': 'text/plain', ...location }).end(answered >= 300 ? 'receiver says no' : 'ok');
      });
    });
  }
  async start(port = 0) {
    this.server.listen(port, '127.0.0.1');
    await once(this.server, 'listening');
    return this;
  }
  get port() {
    return (this.server.address() as AddressInfo).port;
  }
  url(path = '/hook') {
    return `http://127.0.0.1:${this.port}${path}`;
  }
  stop() {
    this.server.closeAllConnections();
    this.server.close();
  }
}

let service: TestService;
let ws: Workspace;
let sql: postgres.Sql;
let receiver: Receiver;
/** A loopback port nothing listens on: connections to it are refused. */
let closedPort: number;

beforeAll(async () => {
  receiver = await new Receiver().start();
  closedPort = await freePort();
  service = await startTestService(
    {
      mediaFetchAllowHosts: [`127.0.0.1:${receiver.port}`, `127.0.0.1:${closedPort}`],
      webhookTimeoutMs: 1000,
      webhookRetryDelaysMs: [200, 200, 200, 200, 200],
    },
    { api: true, worker: true },
  );
  ws = await service.workspace({ plan: 'business' });
  sql = postgres(service.databaseUrl, { max: 2, onnotice: () => {}, transform: postgres.camel });
}, 60_000);
afterAll(async () => {
  await sql?.end();
  await service?.stop();
  receiver?.stop();
});

const rest = (path: string, options: { method?: string; body?: unknown } = {}) => call(`${service.api}${path}`, { key: ws.apiKey, ...options });

/** A draft on a channel of its own: one post.created event. */
async function draft(content: string) {
  const channel = (await ws.admin('createIntegration', { platform: 'LINKEDIN', name: content })).id;
  const created = await rest('/posts', { method: 'POST', body: { rows: [{ content }], shared: { selectedIntegrations: [channel] }, postAction: 'DRAFT' } });
  expect(created.status, created.text).toBe(201);
  return created.json.postId as string;
}

/** What the receiver got about `id`, verified with `secrets` (any of them may sign), in the order it got them. */
function receivedAbout(id: string, secrets: string[]) {
  return receiver.received
    .filter((request) => JSON.parse(request.body).data.id === id || JSON.parse(request.body).data.postId === id)
    .map((request) => {
      const headers = request.headers as Record<string, string>;
      const verified = secrets.map((secret) => new Webhook(secret).verify(request.body, headers));
      return { ...request, event: verified[0] as { id: string; type: string; data: any } };
    });
}

const deliveriesOf = async (endpointId: string) => (await ws.admin('listWebhookDeliveries', { id: endpointId, limit: 100 })).items;

describe('webhooks', () => {
  it('delivers each event signed as Standard Webhooks says, verified by its own library, with the envelope the feed serves', async () => {
    const endpoint = await ws.admin('createWebhook', { url: receiver.url(), description: 'all events' });
    expect(endpoint).toMatchObject({ url: receiver.url(), eventTypes: [], enabled: true, description: 'all events' });
    expect(endpoint.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect((await ws.admin('listWebhooks'))[0]).not.toHaveProperty('secret');

    const postId = await draft('Hooked');
    const [got] = await eventually(
      async () => receivedAbout(postId, [endpoint.secret]),
      (requests) => requests.length === 1,
    );
    expect(got!.event).toMatchObject({ type: 'post.created', data: { id: postId, content: 'Hooked' } });
    const [fromFeed] = (await eventually(() => rest(`/events?resourceId=${postId}`), (page) => page.json.items.length > 0)).json.items;
    expect(got!.event).toEqual(fromFeed);
    expect(got!.headers['webhook-id']).toBe(fromFeed.id);
    expect(Math.abs(Number(got!.headers['webhook-timestamp']) - Date.now() / 1000)).toBeLessThan(10);
    expect(got!.headers['content-type']).toBe('application/json');
    // A body altered in transit, or another secret, does not verify.
    expect(() => new Webhook(endpoint.secret).verify(got!.body.replace('Hooked', 'Hacked'), got!.headers as Record<string, string>)).toThrow();
    const [delivery] = (await deliveriesOf(endpoint.id)).filter((item: any) => item.eventId === fromFeed.id);
    expect(delivery).toMatchObject({ status: 'delivered', eventType: 'post.created', payload: fromFeed, nextAttemptAt: null });
    expect(delivery.attempts).toEqual([expect.objectContaining({ attempt: 1, url: receiver.url(), responseStatus: 200, responseExcerpt: 'ok', error: null })]);
    await ws.admin('deleteWebhook', { id: endpoint.id });
  });

  it('retries after a 500 and a timeout until a 2xx, logs each attempt, and a refused connection until the URL is mended', async () => {
    const endpoint = await ws.admin('createWebhook', { url: receiver.url('/flaky'), eventTypes: ['post.created'] });
    receiver.plan = [500, 'hang'];
    const postId = await draft('Flaky');
    await eventually(() => deliveriesOf(endpoint.id), (items) => items[0]?.status === 'delivered', 15_000);
    const [delivery] = await deliveriesOf(endpoint.id);
    expect(delivery.attempts.map((attempt: any) => [attempt.responseStatus, attempt.responseExcerpt, attempt.error])).toEqual([
      [500, 'receiver says no', null],
      [null, null, expect.stringMatching(/did not answer within 1000 ms/)],
      [200, 'ok', null],
    ]);
    // The same event each time, under the same webhook-id.
    const got = receivedAbout(postId, [endpoint.secret]);
    expect(got.map((request) => request.answered)).toEqual([500, 'hang', 200]);
    expect(new Set(got.map((request) => request.headers['webhook-id'])).size).toBe(1);

    const refused = await ws.admin('createWebhook', { url: `http://127.0.0.1:${closedPort}/hook`, eventTypes: ['post.created'] });
    await ws.admin('deleteWebhook', { id: endpoint.id });
    const second = await draft('Refused first');
    const failing = await eventually(() => deliveriesOf(refused.id), (items) => items[0]?.attempts.length >= 2, 15_000);
    expect(failing[0].attempts[0].error).toMatch(/could not be reached \(ECONNREFUSED\)/);
    expect((await ws.admin('listWebhooks')).find((item: any) => item.id === refused.id).failingSince).not.toBeNull();
    // Mended: the next retry goes to the new URL, and the endpoint is healthy again.
    await ws.admin('updateWebhook', { id: refused.id, url: receiver.url('/mended') });
    await eventually(() => deliveriesOf(refused.id), (items) => items[0]?.status === 'delivered', 15_000);
    expect(receivedAbout(second, [refused.secret]).map((request) => request.answered)).toEqual([200]);
    expect((await ws.admin('listWebhooks')).find((item: any) => item.id === refused.id).failingSince).toBeNull();
    await ws.admin('deleteWebhook', { id: refused.id });
  });

  it('keeps the order of one resource\'s events for an endpoint: a later event waits while an earlier one is retried', async () => {
    const endpoint = await ws.admin('createWebhook', { url: receiver.url('/ordered'), eventTypes: ['schedule.scheduled', 'schedule.publishing', 'schedule.failed'] });
    const bare = (await ws.admin('createIntegration', { platform: 'BLUESKY', name: 'Never connected' })).id;
    receiver.plan = [503, 503];
    const created = await rest('/posts', { method: 'POST', body: { rows: [{ content: 'In order' }], shared: { selectedIntegrations: [bare] }, postAction: 'PUBLISH_NOW' } });
    const postId = created.json.postId as string;
    await eventually(() => deliveriesOf(endpoint.id), (items) => items.length === 3 && items.every((item: any) => item.status === 'delivered'), 20_000);
    const delivered = receivedAbout(postId, [endpoint.secret]).filter((request) => request.answered === 200);
    expect(delivered.map((request) => request.event.type)).toEqual(['schedule.scheduled', 'schedule.publishing', 'schedule.failed']);
    await ws.admin('deleteWebhook', { id: endpoint.id });
  });

  it('rotates the secret: both sign for a while, then only the new one; a delivery is sent again by hand', async () => {
    const endpoint = await ws.admin('createWebhook', { url: receiver.url('/rotated'), eventTypes: ['post.created'] });
    const rotated = await ws.admin('rotateWebhookSecret', { id: endpoint.id });
    expect(rotated.secret).not.toBe(endpoint.secret);
    expect(Date.parse(rotated.previousSecretExpiresAt) - Date.now()).toBeGreaterThan(23.9 * 3_600_000);
    const postId = await draft('Rotated');
    const [got] = await eventually(async () => receivedAbout(postId, [rotated.secret, endpoint.secret]), (requests) => requests.length === 1);
    expect(String(got!.headers['webhook-signature']).split(' ')).toHaveLength(2);

    // Past the 24 hours, the old secret signs no more.
    await sql`UPDATE webhook_endpoints SET previous_secret_expires_at = now() - interval '1 second' WHERE id = ${endpoint.id}`;
    const [delivery] = await deliveriesOf(endpoint.id);
    const again = await ws.admin('redeliverWebhook', { id: endpoint.id, deliveryId: delivery.id });
    expect(again).toMatchObject({ eventId: delivery.eventId, status: 'pending' });
    const both = await eventually(async () => receiver.received.filter((request) => request.headers['webhook-id'] === delivery.eventId), (requests) => requests.length === 2);
    expect(both[1]!.body).toBe(both[0]!.body);
    expect(() => new Webhook(rotated.secret).verify(both[1]!.body, both[1]!.headers as Record<string, string>)).not.toThrow();
    expect(() => new Webhook(endpoint.secret).verify(both[1]!.body, both[1]!.headers as Record<string, string>)).toThrow();
    const statuses = await eventually(async () => (await deliveriesOf(endpoint.id)).map((item: any) => item.status), (list) => !list.includes('pending'));
    expect(statuses).toEqual(['delivered', 'delivered']);
    await ws.admin('deleteWebhook', { id: endpoint.id });
  });

  it('disables an endpoint that failed every delivery for the whole allowance, with an endpoint.disabled event', async () => {
    const endpoint = await ws.admin('createWebhook', { url: `http://127.0.0.1:${closedPort}/gone`, eventTypes: ['post.created'] });
    const postId = await draft('Nobody home');
    await eventually(() => deliveriesOf(endpoint.id), (items) => items[0]?.attempts.length >= 1, 10_000);
    // As if the failures had gone on for three days.
    await sql`UPDATE webhook_endpoints SET failing_since = now() - interval '3 days 1 minute' WHERE id = ${endpoint.id}`;
    const [disabled] = await eventually(
      async () => (await ws.admin('listWebhooks')).filter((item: any) => item.id === endpoint.id),
      (items) => items[0]?.enabled === false,
      10_000,
    );
    expect(disabled.disabledReason).toMatch(/^Every delivery failed for 3 days \(the last: 127\.0\.0\.1:\d+ could not be reached \(ECONNREFUSED\)\); enable it again once it answers$/);
    const events = (await eventually(() => rest(`/events?type=endpoint.disabled&resourceId=${endpoint.id}`), (page) => page.json.items.length > 0)).json.items;
    expect(events.map((event: any) => [event.type, event.data.enabled])).toEqual([['endpoint.disabled', false]]);
    // Its queued delivery is given up; nothing more is sent until it is enabled again.
    await eventually(() => deliveriesOf(endpoint.id), (items) => items[0]?.status === 'failed', 10_000);
    expect((await call(`${service.api}/webhooks/${endpoint.id}/deliveries/${(await deliveriesOf(endpoint.id))[0].id}/redeliver`, { method: 'POST', key: ws.apiKey })).status).toBe(404);
    await expect(ws.admin('redeliverWebhook', { id: endpoint.id, deliveryId: (await deliveriesOf(endpoint.id))[0].id })).rejects.toThrow(/INVALID_STATE/);
    void postId;
  });

  it('from a shell: the admin command makes, lists, disables and deletes an endpoint, its secret printed once', async () => {
    const env = {
      DATABASE_URL: service.databaseUrl,
      ENCRYPTION_KEY: service.service.core.app.config.encryptionKey!,
      MEDIA_FETCH_ALLOW_HOSTS: `127.0.0.1:${receiver.port}`,
    };
    const made = await admin(['create-webhook', '--workspace', ws.workspaceId, '--url', receiver.url('/shell'), '--event-types', 'post.created,post.deleted', '--description', 'from a shell'], env);
    expect(made.code).toBe(0);
    expect(made.json).toMatchObject({ url: receiver.url('/shell'), eventTypes: ['post.created', 'post.deleted'], description: 'from a shell', secret: expect.stringMatching(/^whsec_/) });
    const disabled = await admin(['update-webhook', '--workspace', ws.workspaceId, '--webhook', made.json.id, '--disable'], env);
    expect(disabled.json).toMatchObject({ enabled: false, disabledReason: 'Disabled by hand' });
    expect((await ws.admin('listWebhooks')).find((item: any) => item.id === made.json.id)).not.toHaveProperty('secret');
    expect((await admin(['delete-webhook', '--workspace', ws.workspaceId, '--webhook', made.json.id], env)).json).toEqual({ success: true });
    const refused = await admin(['create-webhook', '--workspace', ws.workspaceId, '--url', 'http://10.1.2.3/'], env);
    expect(refused).toMatchObject({ code: 1, json: { code: 'URL_NOT_ALLOWED' } });
  }, 60_000);

  it('refuses targets that are not public, at creation or when a delivery connects, and keeps webhooks from API keys', async () => {
    // The vectors of the import guard's tests (test/remote-fetch.test.ts), as literals: refused before anything exists.
    const literals = ['127.0.0.1', '0x7f000001', '2130706433', '0.0.0.0', '[::1]', '[::ffff:127.0.0.1]', '[::]', '169.254.169.254', '10.0.0.1',
      '172.16.0.1', '192.168.1.1', '100.64.0.1', '[fe80::1]', '[fd00::1]', '[::ffff:10.0.0.1]', '[::127.0.0.1]'];
    for (const url of [...literals.map((host) => `http://${host}:8080/hook`), 'http://169.254.169.254/latest/meta-data', 'ftp://example.com/', 'http://user:pw@example.com/']) {
      await expect(ws.admin('createWebhook', { url }), url).rejects.toThrow(/URL_NOT_ALLOWED/);
    }
    // A name is checked where the connection is made, against what it resolves to: localhost is loopback.
    const endpoint = await ws.admin('createWebhook', { url: `http://localhost:${receiver.port}/sneaky`, eventTypes: ['post.created'] });
    await draft('Sneaky');
    const [delivery] = await eventually(() => deliveriesOf(endpoint.id), (items) => items[0]?.attempts.length >= 1, 10_000);
    expect(delivery.attempts[0].error).toMatch(/localhost \((127\.0\.0\.1|::1)\) is not a public internet address/);
    expect(receiver.received.filter((request) => request.path === '/sneaky')).toEqual([]);
    await ws.admin('deleteWebhook', { id: endpoint.id });

    // A redirect is a failed attempt, never followed.
    const redirected = await ws.admin('createWebhook', { url: receiver.url('/moved'), eventTypes: ['post.created'] });
    receiver.plan = [302];
    await draft('Redirected');
    const [moved] = await eventually(() => deliveriesOf(redirected.id), (items) => items[0]?.attempts.length >= 1, 10_000);
    expect(moved.attempts[0]).toMatchObject({ responseStatus: 302, error: null });
    expect(receiver.received.filter((request) => request.path === '/followed')).toEqual([]);
    await ws.admin('deleteWebhook', { id: redirected.id });

    // Internal: a key gets the generic 404.
    for (const [method, path] of [['GET', '/webhooks'], ['POST', '/webhooks']] as const) {
      const answer = await call(`${service.api}${path}`, { method, key: ws.apiKey, ...(method === 'POST' && { body: { url: receiver.url() } }) });
      expect(answer.status).toBe(404);
    }
  });
});
