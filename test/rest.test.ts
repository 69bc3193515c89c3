import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, eventually, startTestService, type TestService, type Workspace } from './support/service.js';

let service: TestService;
let ws: Workspace;

beforeAll(async () => {
  service = await startTestService();
  ws = await service.workspace();
});
afterAll(() => service?.stop());

const get = (path: string, key = ws.apiKey) => call(`${service.api}${path}`, { key });

describe('GET /users/me', () => {
  it('answers the User of the contract', async () => {
    const answer = await get('/users/me');
    expect(answer.status).toBe(200);
    expect(answer.json).toEqual({
      id: ws.userId,
      name: 'Owner',
      email: expect.stringMatching(/@example\.com$/),
      image: null,
      emailVerified: false,
      createdAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT.*Z$/),
      updatedAt: expect.any(String),
      defaultOrganizationId: ws.workspaceId,
    });
  });
});

describe('tags', () => {
  let tags: { id: string; name: string; slug: string }[];

  beforeAll(async () => {
    tags = [];
    for (const name of ['Zebra', 'apple', 'Mango', 'Banana split', 'Cherry', 'Été']) tags.push(await ws.admin('createTag', { name }));
  });

  it('GET /tags/{id} answers the Tag', async () => {
    const answer = await get(`/tags/${tags[3]!.id}`);
    expect(answer.status).toBe(200);
    expect(answer.json).toEqual({
      id: tags[3]!.id,
      organizationId: ws.workspaceId,
      name: 'Banana split',
      slug: 'banana-split',
      createdAt: expect.any(String),
      updatedAt: expect.any(String),
    });
  });

  it('GET /tags/{id} answers its bytes with their exact length, in UTF-8, and HEAD the same headers with no body', async () => {
    const path = `${service.api}/tags/${tags[5]!.id}`;
    const got = await fetch(path, { headers: { 'x-api-key': ws.apiKey } });
    const bytes = Buffer.from(await got.arrayBuffer());
    expect(got.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(Number(got.headers.get('content-length'))).toBe(bytes.length);
    expect(JSON.parse(bytes.toString('utf8')).name).toBe('Été');
    const head = await fetch(path, { method: 'HEAD', headers: { 'x-api-key': ws.apiKey } });
    expect(head.status).toBe(200);
    expect(head.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(head.headers.get('content-length')).toBe(String(bytes.length));
    expect((await head.arrayBuffer()).byteLength).toBe(0);
  });

  it('GET /tags pages through every tag once, in slug order, with nextCursor null at the end', async () => {
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const answer = await get(`/tags?limit=4${cursor ? `&cursor=${cursor}` : ''}`);
      expect(answer.status).toBe(200);
      expect(Object.keys(answer.json).sort()).toEqual(['items', 'nextCursor']);
      seen.push(...answer.json.items.map((tag: { name: string }) => tag.name));
      cursor = answer.json.nextCursor;
      pages++;
    } while (cursor);
    expect(pages).toBe(2);
    expect(seen).toEqual(['apple', 'Banana split', 'Cherry', 'Été', 'Mango', 'Zebra']);
  });

  it('keeps slugs unique in a workspace', async () => {
    await expect(ws.admin('createTag', { name: 'banana  SPLIT' })).rejects.toThrow(/CONFLICT/);
  });
});

describe('validation', () => {
  it.each([
    ['/usage?days=0', 'query.days'],
    ['/usage?days=91', 'query.days'],
    ['/usage?days=abc', 'query.days'],
    ['/usage?days=1.5', 'query.days'],
    ['/tags?limit=0', 'query.limit'],
    ['/tags?limit=101', 'query.limit'],
    ['/tags?cursor=bm90LWEtY3Vyc29y', 'query.cursor'],
    ['/tags/not-a-uuid', 'path.id'],
    ['/usage/events?cursor=-3', 'query.cursor'],
    [`/tags?cursor=${Buffer.from(JSON.stringify(['\u0000'])).toString('base64url')}`, 'query.cursor'],
  ])('%s answers 400 VALIDATION_ERROR naming %s', async (path, field) => {
    const answer = await get(path);
    expect(answer.status).toBe(400);
    expect(answer.json.code).toBe('VALIDATION_ERROR');
    expect(answer.json.message).toContain(field);
  });

  it('applies the contract defaults', async () => {
    expect((await get('/usage')).json.windowDays).toBe(30);
    expect((await get('/usage?days=90')).json.windowDays).toBe(90);
  });
});

describe('request bodies', () => {
  it('answers malformed JSON with 400 INVALID_JSON', async () => {
    const answer = await call(`${service.api}/tags`, { method: 'POST', key: ws.apiKey, raw: '{"name": ' });
    expect(answer.status).toBe(400);
    expect(answer.json).toEqual({ code: 'INVALID_JSON', message: expect.any(String) });
  });

  it('answers a body that is not JSON with 415 UNSUPPORTED_MEDIA_TYPE', async () => {
    const answer = await call(`${service.api}/tags`, { method: 'POST', key: ws.apiKey, raw: 'name=x', headers: { 'content-type': 'application/x-www-form-urlencoded' } });
    expect(answer.status).toBe(415);
    expect(answer.json.code).toBe('UNSUPPORTED_MEDIA_TYPE');
  });

  it('answers a body whose compression is broken with 400 INVALID_JSON, over REST and MCP', async () => {
    const headers = { 'content-type': 'application/json', 'content-encoding': 'gzip' };
    const rest = await call(`${service.api}/tags`, { method: 'POST', key: ws.apiKey, raw: 'not gzip at all', headers });
    expect(rest.status).toBe(400);
    expect(rest.json.code).toBe('INVALID_JSON');
    const mcp = await call(`${service.base}/mcp`, { method: 'POST', key: ws.apiKey, raw: 'not gzip at all', headers });
    expect(mcp.status).toBe(400);
    expect(mcp.json.error.code).toBe(-32700);
  });

  it('answers an oversized body with 413 PAYLOAD_TOO_LARGE', async () => {
    const answer = await call(`${service.api}/tags`, { method: 'POST', key: ws.apiKey, body: { name: 'x'.repeat(2_000_000) } });
    expect(answer.status).toBe(413);
    expect(answer.json.code).toBe('PAYLOAD_TOO_LARGE');
  });
});

/** Usage is written in batches: wait until the workspace has `count` events, reading the table, not the API. */
const recorded = (workspaceId: string, count: number) =>
  eventually(
    async () => (await service.service.core.db`SELECT count(*)::int AS n FROM usage_events WHERE organization_id = ${workspaceId}`)[0]!.n as number,
    (n) => n >= count,
  );

describe('usage', () => {
  it('counts each key-authenticated REST call once, errors included, and lists them newest first', async () => {
    const fresh = await service.workspace();
    const key = fresh.apiKey;
    await get('/users/me', key);
    await get('/users/me', key);
    await get('/tags?limit=0', key);
    await get('/nowhere', key);
    await get('/users/me', 'pw_unknownunknownunknownunknownunknownunknown1'); // no key: not counted anywhere

    await recorded(fresh.workspaceId, 4);
    const summary = (await get('/usage?days=1', key)).json;
    // The summary call itself is counted only after it answered.
    expect(summary.api).toEqual({ calls: 4, errors: 2, lastUsedAt: expect.any(String) });
    expect(summary.mcp).toEqual({ calls: 0, errors: 0, lastUsedAt: null });

    await recorded(fresh.workspaceId, 5);
    const events = (await get('/usage/events?limit=2', key)).json;
    expect(events.items[0]).toEqual({ id: expect.any(Number), surface: 'api', operation: 'getUsage', status: 200, apiKeyId: expect.any(String), createdAt: expect.any(String) });
    expect(events.nextCursor).toBe(events.items[1].id);

    const all: { operation: string | null; status: number }[] = [];
    let cursor: number | null = null;
    do {
      const page: { items: { operation: string | null; status: number }[]; nextCursor: number | null } = (
        await get(`/usage/events?limit=2${cursor ? `&cursor=${cursor}` : ''}`, key)
      ).json;
      all.push(...page.items);
      cursor = page.nextCursor;
    } while (cursor);
    const oldestFirst = all.reverse().slice(0, 4).map(({ operation, status }) => [operation, status]);
    expect(oldestFirst).toEqual([
      ['getCurrentUser', 200],
      ['getCurrentUser', 200],
      ['listTags', 400],
      [null, 404],
    ]);
  });

  it('counts unreadable requests too, whatever the path\'s case, under their surface', async () => {
    const fresh = await service.workspace();
    const bad = { method: 'POST', key: fresh.apiKey, raw: '{bad' };
    expect((await call(`${service.base}/API/V1/tags`, bad)).status).toBe(400);
    expect((await call(`${service.api}`, bad)).status).toBe(400);
    const mcp = await call(`${service.base}/mcp/`, bad);
    expect(mcp.status).toBe(400);
    expect(mcp.json.error.code).toBe(-32700);
    await recorded(fresh.workspaceId, 3);
    const events = (await get('/usage/events', fresh.apiKey)).json.items;
    expect(events.map((event: { surface: string; operation: string | null; status: number }) => [event.surface, event.operation, event.status]).sort()).toEqual([
      ['api', null, 400],
      ['api', null, 400],
      ['mcp', null, 400],
    ]);
  });

  it('walks GET /usage/events to the end while new events arrive: each event once, newest first', async () => {
    const fresh = await service.workspace();
    for (let i = 0; i < 7; i++) await get('/users/me', fresh.apiKey);
    await recorded(fresh.workspaceId, 7);
    const before = (await service.service.core.db`SELECT id FROM usage_events WHERE organization_id = ${fresh.workspaceId}`).map((row) => Number(row.id));
    const seen: number[] = [];
    let cursor: number | null = null;
    do {
      const page: { items: { id: number }[]; nextCursor: number | null } = (
        await get(`/usage/events?limit=2${cursor ? `&cursor=${cursor}` : ''}`, fresh.apiKey)
      ).json;
      seen.push(...page.items.map((item) => item.id));
      // Each page is itself an event, and one more arrives between pages: both land ahead of the walk.
      await get('/users/me', fresh.apiKey);
      await recorded(fresh.workspaceId, before.length + seen.length);
      cursor = page.nextCursor;
    } while (cursor);
    expect(new Set(seen).size).toBe(seen.length);
    expect(seen).toEqual([...seen].sort((a, b) => b - a));
    for (const id of before) expect(seen).toContain(id);
  });

  it('keeps each workspace to its own usage', async () => {
    const a = await service.workspace();
    const b = await service.workspace();
    await get('/users/me', a.apiKey);
    await recorded(a.workspaceId, 1);
    expect((await get('/usage', a.apiKey)).json.api.calls).toBe(1);
    const ofB = (await get('/usage', b.apiKey)).json;
    expect(ofB.api.calls).toBe(0);
  });
});
