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
        handle: null,
        limits: null,
        tokenStatus: 'MISSING',
        connectStatus: 'ACTIVE',
        connectionErrorCode: null,
        connectionError: null,
        lastValidatedAt: null,
        expiresAt: null,
        autoRefreshUnavailable: false,
        hasFailedSchedules: false,
        failingSchedules: 0,
        lastFailure: null,
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

  it('counts the failing schedules (FAILED, or waiting for an automatic retry) with the latest one\'s reason, and GET /posts?failing=true lists exactly their posts', async () => {
    const sky = await ws.admin('createIntegration', { platform: 'BLUESKY', name: 'Failing sky' });
    const other = await ws.admin('createIntegration', { platform: 'BLUESKY', name: 'Healthy sky' });
    const post = async (content: string, channels: string[]) => {
      const created = await call(`${service.api}/posts`, {
        method: 'POST',
        key: ws.apiKey,
        body: { rows: [{ content }], shared: { selectedIntegrations: channels }, postAction: 'PUBLISH_NOW' },
      });
      expect(created.status, created.text).toBe(201);
      return created.json.postId as string;
    };
    const failed = await post('Failed for good', [sky.id]);
    const retrying = await post('Waiting for its retry', [sky.id, other.id]);
    const fine = await post('Still to publish', [sky.id]);
    // The publishing engine moves these rows (test/publishing.test.ts); here they are moved as it does.
    await sql`UPDATE schedules SET status = 'FAILED', failure_reason = 'Bluesky refused the post: too long', last_attempt = now() - interval '1 hour'
      WHERE post_id = ${failed}`;
    await sql`UPDATE schedules SET failure_reason = 'Bluesky did not answer: attempt 1 of 4 failed, and it is tried again automatically', retry_count = 1,
        last_attempt = now() - interval '1 minute', next_attempt_at = now() + interval '30 seconds'
      WHERE post_id = ${retrying} AND integration_id = ${sky.id}`;
    const channels = (await call(`${service.api}/integrations`, { key: ws.apiKey })).json as any[];
    const flagged = channels.find((channel) => channel.id === sky.id);
    expect(flagged).toMatchObject({
      hasFailedSchedules: true,
      failingSchedules: 2,
      lastFailure: {
        at: expect.stringMatching(/Z$/),
        reason: 'Bluesky did not answer: attempt 1 of 4 failed, and it is tried again automatically',
        retrying: true,
        scheduleId: expect.any(String),
      },
    });
    expect(channels.find((channel) => channel.id === other.id)).toMatchObject({ hasFailedSchedules: false, failingSchedules: 0, lastFailure: null });

    const list = async (query: string) => {
      const answer = await call(`${service.api}/posts?${query}`, { key: ws.apiKey });
      expect(answer.status, answer.text).toBe(200);
      return { ids: (answer.json.items as { id: string }[]).map((item) => item.id).sort(), total: answer.json.pageInfo.total };
    };
    expect(await list(`failing=true&integrationId=${sky.id}`)).toEqual({ ids: [failed, retrying].sort(), total: 2 });
    // The retrying post's schedule on the healthy channel is not failing.
    expect(await list(`failing=true&integrationId=${other.id}`)).toEqual({ ids: [], total: 0 });
    expect((await list(`integrationId=${sky.id}`)).ids).toContain(fine);
    expect(await list(`failing=true&status=FAILED&integrationId=${sky.id}`)).toEqual({ ids: [failed], total: 1 });
  });

  it('is internal to create: a key cannot add a channel', async () => {
    const answer = await call(`${service.api}/integrations`, { method: 'POST', key: ws.apiKey, body: { platform: 'BLUESKY', name: 'x' } });
    expect(answer.status).toBe(404);
    expect(answer.json).toEqual({ code: 'NOT_FOUND', message: 'Not found' });
  });
});
