import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, startTestService, type TestService, type Workspace } from './support/service.js';

let service: TestService;
let ws: Workspace;
let sql: postgres.Sql;

beforeAll(async () => {
  service = await startTestService();
  ws = await service.workspace();
  sql = postgres(service.databaseUrl, { max: 2, onnotice: () => {} });
});
afterAll(async () => {
  await sql?.end();
  await service?.stop();
});

describe('GET /integrations', () => {
  it('answers the workspace\'s channels with every field of the contract, oldest first, and only its own', async () => {
    const other = await service.workspace();
    await other.admin('createIntegration', { platform: 'BLUESKY', name: 'Not yours' });
    const sky = await ws.admin('createIntegration', { platform: 'BLUESKY', name: 'Sky' });
    const pro = await ws.admin('createIntegration', { platform: 'LINKEDIN', name: 'Pro' });
    const answer = await call(`${service.api}/integrations`, { key: ws.apiKey });
    expect(answer.status).toBe(200);
    expect(answer.json).toEqual([
      {
        id: sky.id,
        platform: 'BLUESKY',
        name: 'Sky',
        image: null,
        tokenStatus: 'MISSING',
        connectStatus: 'ACTIVE',
        connectionErrorCode: null,
        connectionError: null,
        lastValidatedAt: null,
        expiresAt: null,
        autoRefreshUnavailable: false,
        hasFailedSchedules: false,
      },
      expect.objectContaining({ id: pro.id, platform: 'LINKEDIN', name: 'Pro', hasFailedSchedules: false }),
    ]);
  });

  it('says hasFailedSchedules while a schedule of the channel is FAILED', async () => {
    const [channel] = (await call(`${service.api}/integrations`, { key: ws.apiKey })).json;
    const created = await call(`${service.api}/posts`, {
      method: 'POST',
      key: ws.apiKey,
      body: { rows: [{ content: 'Will fail' }], shared: { selectedIntegrations: [channel.id] }, postAction: 'PUBLISH_NOW' },
    });
    expect(created.status).toBe(201);
    // The publishing engine sets FAILED; here the row is moved as it will.
    await sql`UPDATE schedules SET status = 'FAILED', failure_reason = 'no credentials' WHERE post_id = ${created.json.postId}`;
    const failed = (await call(`${service.api}/integrations`, { key: ws.apiKey })).json;
    expect(failed.find((integration: { id: string }) => integration.id === channel.id).hasFailedSchedules).toBe(true);
    expect(failed.filter((integration: { hasFailedSchedules: boolean }) => integration.hasFailedSchedules)).toHaveLength(1);
  });

  it('is internal to create: a key cannot add a channel', async () => {
    const answer = await call(`${service.api}/integrations`, { method: 'POST', key: ws.apiKey, body: { platform: 'BLUESKY', name: 'x' } });
    expect(answer.status).toBe(404);
    expect(answer.json).toEqual({ code: 'NOT_FOUND', message: 'Not found' });
  });
});
