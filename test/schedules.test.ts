import { randomUUID } from 'node:crypto';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, startWithChannels, type ChannelsFixture, type TestService, type Workspace } from './support/service.js';

/** The Schedules operations, retry and reschedule: the calendar's keyset pages, the state machine, and the publish jobs. */

let fixture: ChannelsFixture;
let service: TestService;
let ws: Workspace;
let other: Workspace;
let sql: postgres.Sql;
let bluesky: string;
let linkedin: string;

const HOUR = 3_600_000;
const future = (hours: number) => new Date(Date.now() + hours * HOUR).toISOString();

beforeAll(async () => {
  fixture = await startWithChannels();
  ({ service, ws, other, sql, bluesky, linkedin } = fixture);
});
afterAll(() => fixture?.stop());

const rest = (path: string, options: { method?: string; body?: unknown; key?: string } = {}) =>
  call(`${service.api}${path}`, { key: ws.apiKey, ...options });

async function mcp(name: string, args: Record<string, unknown>, key = ws.apiKey) {
  const answer = await call(`${service.base}/mcp`, {
    method: 'POST',
    key,
    body: { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name, arguments: args } },
  });
  const result = answer.json.result;
  return result.isError ? { error: JSON.parse(result.content[0].text) } : { body: result.structuredContent };
}

/** Creates one post per time on the given channels; returns its schedules. */
async function schedule(times: string[], integrations = [bluesky], postAction = 'SCHEDULED_TIME', thread?: string[]) {
  const created = await rest('/posts', {
    method: 'POST',
    body: {
      rows: times.map((scheduledAt, index) => ({ content: `Post ${index} at ${scheduledAt}`, scheduledAt, ...(thread && { thread: thread.map((content) => ({ content })) }) })),
      shared: { selectedIntegrations: integrations },
      postAction,
    },
  });
  expect(created.status, created.text).toBe(201);
  const rows = await sql<{ id: string; postId: string; status: string; threadOrder: number }[]>`
    SELECT id, post_id AS "postId", status, thread_order AS "threadOrder" FROM schedules WHERE post_id = ANY(${created.json.postIds}::uuid[])
    ORDER BY scheduled_at, thread_order`;
  return rows;
}

/** The schedule's publish job, as graphile-worker holds it (the public view has no payload). */
const job = async (scheduleId: string) =>
  (await sql<{ runAt: Date; payload: unknown; task: string }[]>`
    SELECT j.run_at AS "runAt", p.payload, j.task_identifier AS task
    FROM graphile_worker.jobs j JOIN graphile_worker._private_jobs p USING (id)
    WHERE j.key = ${`publish-schedule:${scheduleId}`}`)[0];
const statusOf = async (id: string) => (await sql<{ status: string }[]>`SELECT status FROM schedules WHERE id = ${id}`)[0]?.status;
/** Puts a schedule where the publishing engine would leave it: in that status, its job done. */
const force = async (id: string, status: string) => {
  await sql`UPDATE schedules SET status = ${status} WHERE id = ${id}`;
  await sql`SELECT graphile_worker.remove_job(${`publish-schedule:${id}`})`;
};

describe('GET /schedules', () => {
  it('walks the calendar forward and backward to the end, each schedule once, while schedules are added during the walk', async () => {
    const base = 24 * 400; // hours ahead: a stretch of the calendar of its own
    const existing = await schedule(Array.from({ length: 35 }, (_, i) => future(base + i)));
    const window = `startDate=${encodeURIComponent(future(base - 1))}&endDate=${encodeURIComponent(future(base + 200))}`;
    for (const direction of ['forward', 'backward']) {
      const seen: string[] = [];
      let cursor: { scheduledAt: string; id: string } | null = null;
      let added = 0;
      for (let page = 0; page < 20; page++) {
        const query: string = cursor ? `&cursor[scheduledAt]=${encodeURIComponent(cursor.scheduledAt)}&cursor[id]=${cursor.id}` : '';
        const answer = await rest(`/schedules?${window}&limit=10&direction=${direction}${query}`);
        expect(answer.status, answer.text).toBe(200);
        seen.push(...answer.json.schedules.map((s: { id: string }) => s.id));
        // Rows appear behind and ahead of the walk while it goes on.
        await schedule([future(base + 100 + added), future(base + 0.5)]);
        added++;
        if (!answer.json.hasMore) {
          expect(answer.json.nextCursor).toBeNull();
          break;
        }
        cursor = answer.json.nextCursor;
      }
      expect(new Set(seen).size).toBe(seen.length);
      for (const row of existing) expect(seen).toContain(row.id);
      const times = await sql<{ id: string; at: Date }[]>`SELECT id, scheduled_at AS at FROM schedules WHERE id = ANY(${seen}::uuid[])`;
      const order = seen.map((id) => times.find((row) => row.id === id)!.at.getTime());
      expect(order).toEqual([...order].sort((a, b) => (direction === 'forward' ? a - b : b - a)));
    }
  });

  it('takes the cursor as deep-object keys, as JSON text, and as an object over MCP, with the same next page', async () => {
    await schedule(Array.from({ length: 12 }, (_, i) => future(24 * 500 + i)));
    const window = `startDate=${encodeURIComponent(future(24 * 500 - 1))}&limit=10`;
    const first = await rest(`/schedules?${window}`);
    const cursor = first.json.nextCursor;
    expect(cursor.scheduledAt).toMatch(/\.\d{6}Z$/);
    const deep = await rest(`/schedules?${window}&cursor[scheduledAt]=${encodeURIComponent(cursor.scheduledAt)}&cursor[id]=${cursor.id}`);
    const json = await rest(`/schedules?${window}&cursor=${encodeURIComponent(JSON.stringify(cursor))}`);
    const overMcp = await mcp('listSchedules', { startDate: future(24 * 500 - 1), limit: 10, cursor });
    expect(deep.json.schedules.length).toBeGreaterThan(0);
    expect(json.json).toEqual(deep.json);
    expect(overMcp.body).toEqual(deep.json);
    const bad = await rest(`/schedules?cursor[scheduledAt]=yesterday&cursor[id]=${cursor.id}`);
    expect(bad.status).toBe(400);
    expect(bad.json.message).toMatch(/^query\.cursor\.scheduledAt: /);
  });

  it('shows each schedule with the calendar shapes of its channel and post', async () => {
    const [row] = await schedule([future(24 * 600)], [linkedin]);
    const answer = await rest(`/schedules?startDate=${encodeURIComponent(future(24 * 600 - 1))}&limit=10`);
    const found = answer.json.schedules.find((s: { id: string }) => s.id === row!.id);
    expect(found.integration).toEqual({ id: linkedin, platform: 'LINKEDIN', name: 'In', image: null });
    expect(found.post).toEqual({ id: row!.postId, content: expect.stringMatching(/^Post 0/), createdAt: expect.any(String), attachmentCount: 0, thumbnail: null });
    expect(found).toEqual(expect.objectContaining({ organizationId: ws.workspaceId, status: 'SCHEDULED', postId: row!.postId }));
  });

  it('filters by platforms, statuses and integrationIds, as repeated keys or comma-separated values', async () => {
    const start = 24 * 700;
    const [sky] = await schedule([future(start)], [bluesky]);
    const [inn] = await schedule([future(start + 1)], [linkedin]);
    const [draft] = await schedule([future(start + 2)], [bluesky], 'DRAFT');
    const window = `startDate=${encodeURIComponent(future(start - 1))}&endDate=${encodeURIComponent(future(start + 3))}`;
    const ids = async (filter: string) => (await rest(`/schedules?${window}&${filter}`)).json.schedules.map((s: { id: string }) => s.id);
    expect(await ids('platforms=LINKEDIN')).toEqual([inn!.id]);
    expect(await ids('platforms=LINKEDIN,BLUESKY')).toEqual([sky!.id, inn!.id, draft!.id]);
    expect(await ids('statuses=DRAFT')).toEqual([draft!.id]);
    expect(await ids('statuses=DRAFT&statuses=SCHEDULED&platforms=BLUESKY')).toEqual([sky!.id, draft!.id]);
    expect(await ids(`integrationIds=${linkedin}`)).toEqual([inn!.id]);
    const empty = await rest('/schedules?statuses=');
    expect(empty.json).toEqual({ code: 'VALIDATION_ERROR', message: 'query.statuses: must have at least one item' });
    expect((await rest(`/schedules?statuses=GONE`)).status).toBe(400);
  });

  it('lists the week or month of the workspace\'s time zone that holds startDate, across a daylight-saving change', async () => {
    await sql`UPDATE organizations SET time_zone = 'Europe/Paris' WHERE id = ${ws.workspaceId}`;
    try {
      // March 2031 in Paris: clocks go forward on Sunday the 30th. 2031-03-31 00:30 local is 2031-03-30T22:30Z (UTC+2).
      const inMarch = await schedule(['2031-03-30T21:30:00Z']); // 23:30 local on the 30th: March
      const inApril = await schedule(['2031-03-30T22:30:00Z']); // 00:30 local on the 31st (a Monday): next week
      const week = await rest('/schedules?view=week&startDate=2031-03-30');
      expect(week.json.schedules.map((s: { id: string }) => s.id)).toEqual([inMarch[0]!.id]);
      const nextWeek = await rest('/schedules?view=week&startDate=2031-03-31');
      expect(nextWeek.json.schedules.map((s: { id: string }) => s.id)).toEqual([inApril[0]!.id]);
      const month = await rest('/schedules?view=month&startDate=2031-03-15T12:00:00Z');
      expect(month.json.schedules.map((s: { id: string }) => s.id)).toEqual([inMarch[0]!.id, inApril[0]!.id]);
    } finally {
      await sql`UPDATE organizations SET time_zone = 'UTC' WHERE id = ${ws.workspaceId}`;
    }
  });

  it('keeps limit between 10 and 100, 20 unless given', async () => {
    expect((await rest('/schedules?limit=9')).status).toBe(400);
    expect((await rest('/schedules?limit=101')).status).toBe(400);
    expect((await rest('/schedules?limit=100')).status).toBe(200);
    await schedule(Array.from({ length: 21 }, (_, i) => future(24 * 800 + i)));
    expect((await rest(`/schedules?startDate=${encodeURIComponent(future(24 * 800 - 1))}`)).json.schedules).toHaveLength(20);
  });
});

describe('GET /schedules/{id}', () => {
  it('answers the post with that one schedule, its channel and its post; 404 when the post is not its own', async () => {
    const [first, second] = await schedule([future(30)], [bluesky, linkedin]);
    const answer = await rest(`/schedules/${second!.id}?postId=${second!.postId}`);
    expect(answer.status, answer.text).toBe(200);
    expect(answer.json).toEqual(expect.objectContaining({ id: second!.postId, organizationId: ws.workspaceId }));
    expect(answer.json.schedules).toHaveLength(1);
    expect(answer.json.schedules[0]).toEqual(
      expect.objectContaining({
        id: second!.id,
        integration: { id: linkedin, name: 'In', platform: 'LINKEDIN', tokenStatus: 'MISSING' },
        post: expect.objectContaining({ id: second!.postId, attachmentCount: 0 }),
      }),
    );
    expect((await mcp('getSchedule', { id: second!.id, postId: second!.postId })).body).toEqual(answer.json);
    const [elsewhere] = await schedule([future(31)]);
    expect((await rest(`/schedules/${first!.id}?postId=${elsewhere!.postId}`)).json).toEqual({ code: 'NOT_FOUND', message: 'Not found' });
    expect((await rest(`/schedules/${first!.id}`)).status).toBe(400);
  });
});

describe('the state machine', () => {
  const statuses = ['DRAFT', 'SCHEDULED', 'PUBLISHING', 'PUBLISHED', 'FAILED'] as const;
  const allowed: Record<string, Partial<Record<string, string | null>>> = {
    reschedule: { DRAFT: 'DRAFT', SCHEDULED: 'SCHEDULED', FAILED: 'SCHEDULED' },
    retry: { FAILED: 'SCHEDULED' },
    delete: { DRAFT: null, SCHEDULED: null, FAILED: null },
  };
  const moves: Record<string, (id: string, at: string) => Promise<{ status: number; json: any }>> = {
    reschedule: (id, at) => rest(`/posts/schedules/${id}/reschedule`, { method: 'POST', body: { scheduledAt: at } }),
    retry: (id) => rest(`/posts/schedules/${id}/retry`, { method: 'POST', body: {} }),
    delete: (id) => rest(`/schedules/${id}`, { method: 'DELETE', body: {} }),
  };

  for (const [move, table] of Object.entries(allowed)) {
    for (const from of statuses) {
      // Deleting a PUBLISHED schedule deletes its post on the platform: test/publishing.test.ts, against a real PDS.
      if (move === 'delete' && from === 'PUBLISHED') continue;
      const to = table[from];
      it(`${move} of a ${from} schedule ${to === undefined ? 'answers 409 INVALID_STATE' : to === null ? 'removes it and its job' : `makes it ${to}`}`, async () => {
        const [row] = await schedule([future(40)], [bluesky], from === 'DRAFT' ? 'DRAFT' : 'SCHEDULED_TIME');
        if (from !== 'DRAFT' && from !== 'SCHEDULED') await force(row!.id, from);
        const at = future(50);
        const answer = await moves[move]!(row!.id, at);
        if (to === undefined) {
          expect(answer.status).toBe(409);
          expect(answer.json).toEqual({ code: 'INVALID_STATE', message: expect.stringContaining(`is ${from}`) });
          expect(await statusOf(row!.id)).toBe(from);
          return;
        }
        expect(answer.status, JSON.stringify(answer.json)).toBe(200);
        expect(answer.json).toEqual({ success: true });
        expect(await statusOf(row!.id)).toBe(to ?? undefined);
        const queued = await job(row!.id);
        if (to === 'SCHEDULED') {
          expect(queued).toEqual(expect.objectContaining({ task: 'publish-schedule', payload: { scheduleId: row!.id } }));
          const due = move === 'retry' ? Date.now() : Date.parse(at);
          expect(Math.abs(queued!.runAt.getTime() - due)).toBeLessThan(move === 'retry' ? 5000 : 1);
        } else {
          expect(queued).toBeUndefined();
        }
      });
    }
  }

  it('moves a thread with its first schedule, refuses a part alone, and retries the failed parts after a failed one', async () => {
    const [root, part1, part2] = await schedule([future(60)], [bluesky], 'SCHEDULED_TIME', ['one', 'two']);
    expect([root, part1, part2].map((row) => row!.threadOrder)).toEqual([0, 1, 2]);
    const refused = await rest(`/posts/schedules/${part1!.id}/reschedule`, { method: 'POST', body: { scheduledAt: future(70) } });
    expect(refused.status).toBe(400);
    expect(refused.json.message).toMatch(new RegExp(root!.id));
    const movedTo = future(70);
    expect((await rest(`/posts/schedules/${root!.id}/reschedule`, { method: 'POST', body: { scheduledAt: movedTo } })).status).toBe(200);
    const times = await sql<{ at: Date }[]>`SELECT DISTINCT scheduled_at AS at FROM schedules WHERE post_id = ${root!.postId}`;
    expect(times.map((row) => row.at.toISOString())).toEqual([movedTo]);
    expect(await job(part1!.id)).toBeUndefined();

    await force(root!.id, 'PUBLISHED');
    await force(part1!.id, 'FAILED');
    await force(part2!.id, 'FAILED');
    expect((await rest(`/posts/schedules/${part1!.id}/retry`, { method: 'POST', body: {} })).status).toBe(200);
    expect([await statusOf(root!.id), await statusOf(part1!.id), await statusOf(part2!.id)]).toEqual(['PUBLISHED', 'SCHEDULED', 'SCHEDULED']);
    expect(await job(part1!.id)).toBeDefined();
  });

  it('reschedule and retry make a FAILED schedule live as new: its failure cleared, its automatic retries renewed', async () => {
    for (const move of ['reschedule', 'retry'] as const) {
      const [row] = await schedule([future(85)]);
      await force(row!.id, 'FAILED');
      await sql`UPDATE schedules SET retry_count = 3, failure_reason = 'Bluesky did not answer (gave up after 3 retries)',
        failure_detail = '{"status": 503}' WHERE id = ${row!.id}`;
      const body = move === 'reschedule' ? { scheduledAt: future(95) } : {};
      expect((await rest(`/posts/schedules/${row!.id}/${move}`, { method: 'POST', body })).status).toBe(200);
      const [state] = await sql`SELECT status, retry_count AS "retryCount", failure_reason AS "failureReason", failure_detail AS "failureDetail" FROM schedules WHERE id = ${row!.id}`;
      expect(state, move).toEqual({ status: 'SCHEDULED', retryCount: 0, failureReason: null, failureDetail: null });
    }
  });

  it('refuses a time in the past, and answers 402 for making a failed schedule live without a subscription', async () => {
    const [row] = await schedule([future(80)]);
    const past = await rest(`/posts/schedules/${row!.id}/reschedule`, { method: 'POST', body: { scheduledAt: new Date(Date.now() - HOUR).toISOString() } });
    expect(past.status).toBe(400);
    expect(past.json.message).toMatch(/^body\.scheduledAt: .* is in the past/);
    await force(row!.id, 'FAILED');
    await sql`UPDATE organizations SET subscription_status = 'none' WHERE id = ${ws.workspaceId}`;
    try {
      for (const answer of [
        await rest(`/posts/schedules/${row!.id}/retry`, { method: 'POST', body: {} }),
        await rest(`/posts/schedules/${row!.id}/reschedule`, { method: 'POST', body: { scheduledAt: future(90) } }),
      ]) {
        expect(answer.status).toBe(402);
        expect(answer.json.code).toBe('PAYMENT_REQUIRED');
      }
      expect(await statusOf(row!.id)).toBe('FAILED');
      expect(await job(row!.id)).toBeUndefined();
    } finally {
      await sql`UPDATE organizations SET subscription_status = 'active' WHERE id = ${ws.workspaceId}`;
    }
  });

  it('answers the same over MCP', async () => {
    const [row] = await schedule([future(100)]);
    expect(await mcp('retrySchedule', { scheduleId: row!.id })).toEqual({ error: { code: 'INVALID_STATE', message: expect.stringContaining('is SCHEDULED') } });
    expect(await mcp('rescheduleSchedule', { scheduleId: row!.id, scheduledAt: future(110) })).toEqual({ body: { success: true } });
    expect(await mcp('deleteSchedule', { id: row!.id })).toEqual({ body: { success: true } });
    expect(await job(row!.id)).toBeUndefined();
  });
});

describe('another workspace', () => {
  it('gets 404 for every schedule path with an id, and changes nothing', async () => {
    const [row] = await schedule([future(120)]);
    for (const answer of [
      await call(`${service.api}/schedules/${row!.id}?postId=${row!.postId}`, { key: other.apiKey }),
      await call(`${service.api}/schedules/${row!.id}`, { method: 'DELETE', key: other.apiKey, body: {} }),
      await call(`${service.api}/posts/schedules/${row!.id}/retry`, { method: 'POST', key: other.apiKey, body: {} }),
      await call(`${service.api}/posts/schedules/${row!.id}/reschedule`, { method: 'POST', key: other.apiKey, body: { scheduledAt: future(130) } }),
      await call(`${service.api}/schedules/${randomUUID()}`, { method: 'DELETE', key: ws.apiKey, body: {} }),
    ]) {
      expect(answer.status).toBe(404);
      expect(answer.json).toEqual({ code: 'NOT_FOUND', message: 'Not found' });
    }
    expect(await statusOf(row!.id)).toBe('SCHEDULED');
    expect(await job(row!.id)).toBeDefined();
  });
});
