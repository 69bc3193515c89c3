import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, startTestService, type TestService, type Workspace } from './support/service.js';

/** Idempotency-Key on the creates: replay, reuse, in progress, failures not pinned, REST and MCP alike. */

let service: TestService;
let ws: Workspace;
let other: Workspace;
let sql: postgres.Sql;
let channel: string;

beforeAll(async () => {
  service = await startTestService();
  ws = await service.workspace({ plan: 'business' });
  other = await service.workspace({ plan: 'business' });
  sql = postgres(service.databaseUrl, { max: 2, onnotice: () => {} });
  channel = (await ws.admin('createIntegration', { platform: 'BLUESKY', name: 'Sky' })).id;
});
afterAll(async () => {
  await sql?.end();
  await service?.stop();
});

const future = (hours: number) => new Date(Date.now() + hours * 3_600_000).toISOString();
/** One time for every request, so the same content makes the same request. */
const AT = future(24);
const body = (content: string) => ({ rows: [{ content, scheduledAt: AT }], shared: { selectedIntegrations: [channel] }, postAction: 'SCHEDULED_TIME' });
const create = (key: string | undefined, payload: unknown, apiKey = ws.apiKey) =>
  call(`${service.api}/posts`, { method: 'POST', key: apiKey, body: payload, headers: key === undefined ? {} : { 'idempotency-key': key } });
const postsWith = async (content: string) => (await sql`SELECT id FROM posts WHERE content = ${content}`).length;
const mcp = async (name: string, args: Record<string, unknown>) =>
  (
    await call(`${service.base}/mcp`, {
      method: 'POST',
      key: ws.apiKey,
      body: { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name, arguments: args } },
    })
  ).json.result;

describe('Idempotency-Key', () => {
  it('replays the first answer for the same request, without doing the work again', async () => {
    const first = await create('replay-1', body('Once only'));
    const second = await create('replay-1', body('Once only'));
    expect(first.status).toBe(201);
    expect(second.status).toBe(201);
    expect(second.json).toEqual(first.json);
    // Byte for byte, keys in the same order: a client may compare the texts.
    expect(second.text).toBe(first.text);
    expect(await postsWith('Once only')).toBe(1);
  });

  it('answers 422 IDEMPOTENCY_KEY_REUSED for the same key with another request, and keys are the workspace\'s own', async () => {
    await create('reused-1', body('First request'));
    const reused = await create('reused-1', body('Another request'));
    expect(reused.status).toBe(422);
    expect(reused.json.code).toBe('IDEMPOTENCY_KEY_REUSED');
    expect(await postsWith('Another request')).toBe(0);
    const otherChannel = (await other.admin('createIntegration', { platform: 'BLUESKY', name: 'Theirs' })).id;
    const elsewhere = await create('reused-1', { ...body('Their own'), shared: { selectedIntegrations: [otherChannel] } }, other.apiKey);
    expect(elsewhere.status).toBe(201);
  });

  it('lets 20 parallel requests with one key create exactly one post; the others replay it or are told it is in progress', async () => {
    const answers = await Promise.all(Array.from({ length: 20 }, () => create('parallel-1', body('Twenty at once'))));
    expect(await postsWith('Twenty at once')).toBe(1);
    const created = answers.filter((answer) => answer.status === 201);
    expect(created.length).toBeGreaterThanOrEqual(1);
    for (const answer of created) expect(answer.json).toEqual(created[0]!.json);
    for (const answer of answers.filter((answer) => answer.status !== 201)) {
      expect(answer.status).toBe(409);
      expect(answer.json.code).toBe('IDEMPOTENCY_KEY_IN_PROGRESS');
    }
    expect((await create('parallel-1', body('Twenty at once'))).json).toEqual(created[0]!.json);
  });

  it('does not pin a failure: the same request may succeed once what failed is fixed', async () => {
    await sql`UPDATE organizations SET subscription_status = 'none' WHERE id = ${ws.workspaceId}`;
    try {
      expect((await create('failed-1', body('After payment'))).status).toBe(402);
    } finally {
      await sql`UPDATE organizations SET subscription_status = 'active' WHERE id = ${ws.workspaceId}`;
    }
    expect((await create('failed-1', body('After payment'))).status).toBe(201);
    expect(await postsWith('After payment')).toBe(1);
  });

  it('replays across REST and MCP: the header and the idempotencyKey argument are one key', async () => {
    const rest = await create('cross-1', body('Either surface'));
    const viaMcp = await mcp('createPost', { ...body('Either surface'), idempotencyKey: 'cross-1' });
    expect(viaMcp.structuredContent).toEqual(rest.json);
    expect(await postsWith('Either surface')).toBe(1);

    const [schedule] = await sql<{ id: string }[]>`SELECT id FROM schedules WHERE post_id = ${rest.json.postId}`;
    const at = future(30);
    const moved = await mcp('rescheduleSchedule', { scheduleId: schedule!.id, scheduledAt: at, idempotencyKey: 'move-1' });
    expect(moved.structuredContent).toEqual({ success: true });
    const again = await call(`${service.api}/posts/schedules/${schedule!.id}/reschedule`, {
      method: 'POST',
      key: ws.apiKey,
      headers: { 'idempotency-key': 'move-1' },
      body: { scheduledAt: at },
    });
    expect(again.json).toEqual({ success: true });
  });

  it('refuses a key that is not visible ASCII, naming the header', async () => {
    const answer = await create('has space', body('Bad key'));
    expect(answer.status).toBe(400);
    expect(answer.json.message).toMatch(/^header\.idempotency-key: /);
    const tooLong = await mcp('createPost', { ...body('Bad key'), idempotencyKey: 'k'.repeat(256) });
    expect(JSON.parse(tooLong.content[0].text).message).toMatch(/^idempotencyKey: /);
  });

  it('is declared once: a header in the OpenAPI document, an argument in the tool schema', async () => {
    const doc = (await call(`${service.api}/openapi.json`)).json;
    for (const [path, method] of [
      ['/posts', 'post'],
      ['/posts/schedules/{scheduleId}/retry', 'post'],
      ['/posts/schedules/{scheduleId}/reschedule', 'post'],
    ] as const) {
      const operation = doc.paths[path][method];
      expect(operation.parameters).toContainEqual(expect.objectContaining({ in: 'header', name: 'idempotency-key' }));
      expect(operation.responses['422'].content['application/json'].schema.properties.code.enum).toEqual(['IDEMPOTENCY_KEY_REUSED']);
    }
    expect(doc.paths['/posts'].get.parameters.some((p: { name: string }) => p.name === 'idempotency-key')).toBe(false);
    const tools = await call(`${service.base}/mcp`, { method: 'POST', key: ws.apiKey, body: { jsonrpc: '2.0', id: 1, method: 'tools/list' } });
    const createPost = tools.json.result.tools.find((tool: { name: string }) => tool.name === 'createPost');
    expect(createPost.inputSchema.properties.idempotencyKey).toEqual(expect.objectContaining({ type: 'string', maxLength: 255 }));
  });
});
