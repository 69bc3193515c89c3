import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { fileTypeFromBuffer } from 'file-type';
import postgres from 'postgres';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../src/process/config.js';
import { startFakeGiphy, type FakeGiphy } from './support/giphy.js';
import { connectMastodon, startFakeMastodon, type FakeMastodon } from './support/mastodon.js';
import { call, eventually, isSettled, startTestService, type TestService, type Workspace } from './support/service.js';

/**
 * GIFs from a provider (GIPHY), against the strict GIPHY fake on loopback (test/support/giphy.ts): searched over REST
 * and MCP, picked (copied through the fetch guard into the store as media with its provider), attached and published
 * to a Mastodon channel as the animated GIF itself; and a server without GIPHY_API_KEY saying so.
 */
let giphy: FakeGiphy;
let mastodon: FakeMastodon;
let service: TestService;
let ws: Workspace;
let sql: postgres.Sql;

beforeAll(async () => {
  [giphy, mastodon] = await Promise.all([startFakeGiphy(), startFakeMastodon({ autoConsent: 'ann' })]);
  service = await startTestService(
    { giphy: { ...loadConfig({}).giphy, apiKey: giphy.apiKey, apiUrl: giphy.url }, mediaFetchAllowHosts: [giphy.host, mastodon.host] },
    { api: true, worker: true },
  );
  ws = await service.workspace({ plan: 'business' });
  sql = postgres(service.databaseUrl, { max: 2, onnotice: () => {}, transform: postgres.camel });
});

afterAll(async () => {
  await sql?.end();
  await service?.stop();
  await Promise.all([giphy?.close(), mastodon?.close()]);
});

const rest = (path: string, options: { method?: string; body?: unknown } = {}) => call(`${service.api}${path}`, { key: ws.apiKey, ...options });

describe('searching', () => {
  it('answers the provider\'s GIFs with previews and whom to credit, page by page, rated pg-13 at most unless asked', async () => {
    const found = await rest('/media/search?query=cat&limit=2');
    expect(found.status, found.text).toBe(200);
    expect(found.json.items).toHaveLength(2);
    expect(found.json.total).toBe(3); // the r-rated cat is left out by default
    expect(found.json.nextOffset).toBe(2);
    for (const item of found.json.items) {
      expect(item).toMatchObject({ provider: 'GIPHY', providerId: expect.any(String), previewUrl: expect.stringContaining(giphy.url), width: expect.any(Number) });
    }
    const credited = (await rest('/media/search?query=sleepy')).json.items[0];
    expect(credited.attribution).toEqual({ name: 'The Cat Channel', url: expect.any(String) });
    const last = await rest('/media/search?query=cat&limit=2&offset=2');
    expect(last.json.items).toHaveLength(1);
    expect(last.json.nextOffset).toBeNull();
    expect((await rest('/media/search?query=cat&rating=r')).json.total).toBe(4);
    // The server's key went to GIPHY; the caller's never does.
    expect(giphy.requests.filter((request) => request.path === '/v1/gifs/search').every((request) => request.query.api_key === giphy.apiKey)).toBe(true);
  });

  it('says what is wrong: an empty or too long query, the provider refusing or down', async () => {
    expect((await rest('/media/search?query=')).json.code).toBe('VALIDATION_ERROR');
    expect((await rest(`/media/search?query=${'x'.repeat(51)}`)).json.code).toBe('VALIDATION_ERROR');
    giphy.failNext('search', { status: 429 });
    const limited = await rest('/media/search?query=dog');
    expect(limited.status).toBe(502);
    expect(limited.json).toMatchObject({ code: 'PLATFORM_ERROR', message: expect.stringMatching(/GIPHY asks to slow down/) });
    giphy.failNext('search', 'synthetic');
    expect((await rest('/media/search?query=dog')).json).toMatchObject({ items: [], total: 0, nextOffset: null });
  });

  it('is a tool an agent calls over MCP, with the same answer as REST', async () => {
    const mcp = new Client({ name: 'test', version: '1.0.0' });
    await mcp.connect(new StreamableHTTPClientTransport(new URL(`${service.base}/mcp`), { requestInit: { headers: { 'x-api-key': ws.apiKey } } }));
    try {
      const tools = (await mcp.listTools()).tools.map((tool) => tool.name);
      expect(tools).toEqual(expect.arrayContaining(['searchMedia', 'importProviderMedia']));
      const result = await mcp.callTool({ name: 'searchMedia', arguments: { query: 'party' } });
      expect(result.isError).toBeFalsy();
      expect(result.structuredContent).toEqual((await rest('/media/search?query=party')).json);
    } finally {
      await mcp.close();
    }
  });
});

describe('attaching and publishing', () => {
  it('copies a picked GIF into the store as media from GIPHY, then publishes it to Mastodon as the animated GIF', async () => {
    const picked = (await rest('/media/search?query=party')).json.items[0];
    const imported = await rest('/uploads/from-provider', { method: 'POST', body: { providerId: picked.providerId, scenarioId: 'post_attachments' } });
    expect(imported.status, imported.text).toBe(200);
    expect(imported.json).toMatchObject({ provider: 'GIPHY', mediaId: expect.any(String) });
    const mediaId = imported.json.mediaId as string;
    const [row] = await sql<{ providerId: string; mimeType: string; objectKey: string }[]>`SELECT provider_id, mime_type, object_key FROM media WHERE id = ${mediaId}`;
    expect(row).toMatchObject({ providerId: picked.providerId, mimeType: 'image/gif' });
    // The copy is ours: the store holds the GIF, animated, whatever GIPHY does with its link afterwards.
    const stored = Buffer.from(await (await fetch(imported.json.publicUrl)).arrayBuffer());
    expect((await fileTypeFromBuffer(stored))?.mime).toBe('image/gif');
    expect((await sharp(stored, { animated: true }).metadata()).pages).toBeGreaterThan(1);
    expect([...giphy.downloads.values()].reduce((a, b) => a + b, 0)).toBeGreaterThan(0);

    const channel = await connectMastodon(service.api, ws.apiKey, mastodon);
    await eventually(
      async () => (await sql<{ variantsStatus: string }[]>`SELECT variants_status FROM media WHERE id = ${mediaId}`)[0]!.variantsStatus,
      (status) => status !== 'pending',
      20_000,
    );
    const created = await rest('/posts', {
      method: 'POST',
      body: { rows: [{ content: 'Party time', media: [{ id: mediaId, altText: picked.title }] }], shared: { selectedIntegrations: [channel] }, postAction: 'PUBLISH_NOW' },
    });
    expect(created.status, created.text).toBe(201);
    const [schedule] = await sql<{ id: string }[]>`SELECT id FROM schedules WHERE post_id = ${created.json.postId}`;
    const state = await eventually(
      async () => (await sql<{ status: string; platformPostId: string | null; failureReason: string | null }[]>`SELECT status, platform_post_id, failure_reason FROM schedules WHERE id = ${schedule!.id}`)[0]!,
      isSettled,
      30_000,
    );
    expect(state, JSON.stringify(state)).toMatchObject({ status: 'PUBLISHED' });
    // The post's media says where it came from.
    const post = await rest(`/posts/${created.json.postId}`);
    expect(post.json.attachments?.[0]?.media ?? post.json.media?.[0]).toMatchObject({ provider: 'GIPHY' });
    const status = mastodon.statuses.get(state.platformPostId!)!;
    expect(status.mediaIds.map((id) => mastodon.media.get(id)!.mimeType)).toEqual(['image/gif']);
  });

  it('a GIF the provider does not have is NOT_FOUND, and nothing is stored', async () => {
    const before = await sql<{ n: number }[]>`SELECT count(*)::int AS n FROM media`;
    const missing = await rest('/uploads/from-provider', { method: 'POST', body: { providerId: 'noSuchGif', scenarioId: 'post_attachments' } });
    expect(missing.status).toBe(404);
    expect(missing.json).toMatchObject({ code: 'NOT_FOUND', message: 'GIPHY has no GIF noSuchGif' });
    giphy.failNext('media', 'drop');
    const cut = await rest('/uploads/from-provider', { method: 'POST', body: { providerId: 'catNap2', scenarioId: 'post_attachments' } });
    expect(cut.status).toBe(502);
    expect(cut.json.message).toMatch(/GIPHY's file could not be imported/);
    expect(await sql<{ n: number }[]>`SELECT count(*)::int AS n FROM media`).toEqual(before);
  });
});

describe('a server without GIPHY_API_KEY', () => {
  it('says GIF search is not configured, on both operations', async () => {
    const bare = await startTestService({}, { api: true, worker: false });
    try {
      const other = await bare.workspace({ plan: 'business' });
      const search = await call(`${bare.api}/media/search?query=cat`, { key: other.apiKey });
      expect(search.status).toBe(400);
      expect(search.json).toEqual({ code: 'VALIDATION_ERROR', message: 'GIF search is not configured on this server: set GIPHY_API_KEY (a GIPHY API key) to search GIPHY' });
      const pick = await call(`${bare.api}/uploads/from-provider`, { key: other.apiKey, method: 'POST', body: { providerId: 'catNap2', scenarioId: 'post_attachments' } });
      expect(pick.json.code).toBe('VALIDATION_ERROR');
    } finally {
      await bare.stop();
    }
  });
});
