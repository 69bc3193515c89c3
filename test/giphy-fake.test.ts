import { createHash } from 'node:crypto';
import { fileTypeFromBuffer } from 'file-type';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeGiphy, type FakeGifInput, type FakeGiphy } from './support/giphy.js';

/**
 * The fake GIPHY (test/support/giphy.ts) answers as GIPHY's documentation says, proved through plain fetch: search and
 * its pagination, a GIF by id, the GIF Object's shape, media served as real animated GIFs, the key's errors, the rating
 * ceiling, the rate limit, refused parameters, and the faults other tests inject.
 */

const KEY = 'test-key';
const cats: FakeGifInput[] = Array.from({ length: 30 }, (_, index) => ({ id: `cat${String(index).padStart(2, '0')}`, title: `Cat number ${index} GIF`, width: 160, height: 120 }));
const catalogue: FakeGifInput[] = [
  ...cats,
  { id: 'dogcat', title: 'Dog and Cat GIF', tags: ['friends'], width: 160, height: 120 },
  { id: 'party', title: 'Party Dog GIF', rating: 'pg', username: 'dogchannel', user: { displayName: 'The Dog Channel', verified: true }, altText: 'A dog dancing', width: 160, height: 120 },
  { id: 'wild', title: 'Wild Dog GIF', rating: 'r', width: 160, height: 120 },
  { id: 'teen', title: 'Sulky Dog GIF', rating: 'pg-13', width: 160, height: 120 },
];

let fake: FakeGiphy;
beforeAll(async () => void (fake = await startFakeGiphy({ apiKey: KEY, gifs: catalogue, rateLimitPerHour: 1000 })));
afterAll(() => fake?.close());

async function get(path: string, params: Record<string, string> = {}, base = fake) {
  const query = new URLSearchParams(params).toString();
  const response = await fetch(`${base.url}${path}${query ? `?${query}` : ''}`);
  return { status: response.status, headers: response.headers, json: (await response.json()) as any };
}
const search = (params: Record<string, string>, base = fake) => get('/v1/gifs/search', { api_key: base.apiKey, ...params }, base);
const ids = (answer: { json: any }) => (answer.json.data as { id: string }[]).map((gif) => gif.id);

describe('search', () => {
  it('answers data, pagination and meta; 25 by default; ordered by relevance, then id', async () => {
    const answer = await search({ q: 'cat dog' });
    expect(answer.status).toBe(200);
    expect(answer.headers.get('content-type')).toMatch(/^application\/json/);
    expect(answer.json.meta).toEqual({ status: 200, msg: 'OK', response_id: expect.stringMatching(/^[0-9a-f]{24}$/) });
    // 31 GIFs say cat, 3 more (the r one included: no rating means every rating) say dog; "Dog and Cat" says both.
    expect(answer.json.pagination).toEqual({ total_count: 34, count: 25, offset: 0 });
    expect(ids(answer).slice(0, 3)).toEqual(['dogcat', 'cat00', 'cat01']);
  });

  it('pages with limit and offset, up to the last', async () => {
    const second = await search({ q: 'CAT', limit: '10', offset: '25' });
    expect(second.json.pagination).toEqual({ total_count: 31, count: 6, offset: 25 });
    expect(ids(second)).toEqual(['cat25', 'cat26', 'cat27', 'cat28', 'cat29', 'dogcat']);
    const past = await search({ q: 'cat', offset: '4999' });
    expect(past.json.pagination).toEqual({ total_count: 31, count: 0, offset: 4999 });
    expect((await search({ q: 'unicorn' })).json.data).toEqual([]);
  });

  it('takes rating as a ceiling: g < pg < pg-13 < r', async () => {
    expect(ids(await search({ q: 'dog', rating: 'g' }))).toEqual(['dogcat']);
    expect(ids(await search({ q: 'dog', rating: 'pg' }))).toEqual(['dogcat', 'party']);
    expect(ids(await search({ q: 'dog', rating: 'pg-13' }))).toEqual(['dogcat', 'party', 'teen']);
    expect(ids(await search({ q: 'dog', rating: 'r' }))).toEqual(['dogcat', 'party', 'teen', 'wild']);
  });

  it('narrows to a verified channel with @username', async () => {
    expect(ids(await search({ q: '@dogchannel' }))).toEqual(['party']);
    expect(ids(await search({ q: 'party @dogchannel' }))).toEqual(['party']);
    expect(ids(await search({ q: 'cat @dogchannel' }))).toEqual([]);
  });

  it('refuses what the docs bound, saying what: q, limit, offset, rating, lang, bundle, unknown or repeated parameters', async () => {
    const refused = async (params: Record<string, string>, status = 400) => {
      const answer = await search(params);
      expect(answer.status, JSON.stringify(params)).toBe(status);
      expect(answer.json.data).toEqual([]);
      expect(answer.json.meta).toMatchObject({ status, response_id: '' });
      return answer.json.meta.msg as string;
    };
    expect(await refused({})).toMatch(/q is required/);
    expect(await refused({ q: '  ' })).toMatch(/q is required/);
    // response-codes: 414 when the query is longer than 50 characters.
    expect(await refused({ q: 'x'.repeat(51) }, 414)).toBe('URI Too Long');
    expect((await search({ q: `cat ${'x'.repeat(46)}` })).status).toBe(200);
    expect(await refused({ q: 'cat', limit: '51' })).toMatch(/limit must be an integer from 1 to 50/);
    await refused({ q: 'cat', limit: '0' });
    await refused({ q: 'cat', limit: 'ten' });
    expect(await refused({ q: 'cat', offset: '5000' })).toMatch(/offset/);
    await refused({ q: 'cat', offset: '-1' });
    expect(await refused({ q: 'cat', rating: 'PG' })).toMatch(/rating must be one of g, pg, pg-13, r/);
    await refused({ q: 'cat', rating: 'y' });
    expect(await refused({ q: 'cat', lang: 'english' })).toMatch(/lang/);
    expect((await search({ q: 'cat', lang: 'zh-CN', bundle: 'messaging_non_clips', random_id: 'abc' })).status).toBe(200);
    expect(await refused({ q: 'cat', bundle: 'everything' })).toMatch(/bundle/);
    expect(await refused({ query: 'cat' })).toMatch(/unknown parameter query/);
    const repeated = await fetch(`${fake.url}/v1/gifs/search?api_key=${KEY}&q=cat&q=dog`);
    expect(((await repeated.json()) as any).meta.msg).toMatch(/q given more than once/);
  });
});

describe('a GIF by id, and the GIF Object', () => {
  it('answers { data: GIF Object, meta } with the Images Object as strings, media on the fake', async () => {
    const answer = await get('/v1/gifs/party', { api_key: KEY });
    expect(answer.status).toBe(200);
    const gif = answer.json.data;
    expect(gif).toMatchObject({
      type: 'gif', id: 'party', slug: 'party-dog-party', url: 'https://giphy.com/gifs/party-dog-party', embed_url: 'https://giphy.com/embed/party',
      username: 'dogchannel', title: 'Party Dog GIF', rating: 'pg', alt_text: 'A dog dancing', import_datetime: '2021-01-01 00:00:00',
      user: { username: 'dogchannel', display_name: 'The Dog Channel', profile_url: 'https://giphy.com/dogchannel/', is_verified: true },
    });
    expect(gif.user.avatar_url).toBe(gif.images.original_still.url);
    const { original, fixed_width, fixed_height, fixed_width_small, downsized, preview_gif } = gif.images;
    expect(original).toEqual({
      url: expect.stringMatching(new RegExp(`^${fake.url}/media/party/giphy\\.gif\\?cid=[0-9a-f]+&rid=giphy\\.gif&ct=g$`)),
      width: '160', height: '120', size: expect.stringMatching(/^\d+$/), frames: '4', hash: expect.stringMatching(/^[0-9a-f]{32}$/),
      webp: expect.stringContaining('/media/party/giphy.webp?'), webp_size: expect.stringMatching(/^\d+$/),
    });
    expect([fixed_width.width, fixed_width.height, fixed_height.width, fixed_height.height]).toEqual(['200', '150', '267', '200']);
    expect([fixed_width_small.width, downsized.width, preview_gif.width]).toEqual(['100', '80', '120']);
    expect(Object.keys(gif.images).sort()).toEqual(['downsized', 'fixed_height', 'fixed_height_small', 'fixed_height_still', 'fixed_width', 'fixed_width_small', 'fixed_width_still', 'original', 'original_still', 'preview_gif']);
    // No user, no User Object.
    const plain = (await get('/v1/gifs/cat00', { api_key: KEY })).json.data;
    expect(plain.username).toBe('');
    expect(plain).not.toHaveProperty('user');
  });

  it('answers 404 with a Meta Object for an unknown id, or a GIF rated above `rating`', async () => {
    for (const [path, params] of [['/v1/gifs/nope', {}], ['/v1/gifs/wild', { rating: 'pg-13' }]] as const) {
      const answer = await get(path, { api_key: KEY, ...params });
      expect(answer.status).toBe(404);
      expect(answer.json).toEqual({ data: [], meta: { status: 404, msg: 'Not Found', response_id: '' } });
    }
    expect((await get('/v1/gifs/wild', { api_key: KEY, rating: 'r' })).status).toBe(200);
    expect((await get('/v1/gifs/wild', { api_key: KEY, q: 'x' })).status).toBe(400);
  });
});

describe('media', () => {
  it('serves the renditions as real animated GIFs (and WebP), as the Images Object describes them, counting downloads', async () => {
    const gif = (await get('/v1/gifs/cat03', { api_key: KEY })).json.data;
    for (const name of ['original', 'fixed_width', 'fixed_width_small', 'downsized', 'preview_gif']) {
      const rendition = gif.images[name];
      const response = await fetch(rendition.url);
      expect(response.status).toBe(200);
      expect(response.headers.get('content-type')).toBe('image/gif');
      const bytes = Buffer.from(await response.arrayBuffer());
      expect(await fileTypeFromBuffer(bytes)).toEqual({ ext: 'gif', mime: 'image/gif' });
      const metadata = await sharp(bytes, { animated: true }).metadata();
      expect(metadata.pages).toBeGreaterThan(1);
      expect([String(metadata.width), String(metadata.pageHeight), String(bytes.length)]).toEqual([rendition.width, rendition.height, rendition.size]);
      if (name === 'original') {
        expect(String(metadata.pages)).toBe(rendition.frames);
        expect(createHash('md5').update(bytes).digest('hex')).toBe(rendition.hash);
      }
    }
    const still = Buffer.from(await (await fetch(gif.images.fixed_width_still.url)).arrayBuffer());
    expect((await sharp(still, { animated: true }).metadata()).pages).toBe(1);
    const webp = await fetch(gif.images.original.webp);
    expect(webp.headers.get('content-type')).toBe('image/webp');
    const webpBytes = Buffer.from(await webp.arrayBuffer());
    expect((await fileTypeFromBuffer(webpBytes))?.mime).toBe('image/webp');
    expect((await sharp(webpBytes, { animated: true }).metadata()).pages).toBe(4);
    await fetch(gif.images.original.url);
    expect(fake.downloads.get('/media/cat03/giphy.gif')).toBe(2);
    expect(fake.downloads.get('/media/cat03/200w.gif')).toBe(1);
  });

  it('refuses a media URL whose query was stripped or changed (best practices), and unknown files', async () => {
    const { url } = (await get('/v1/gifs/cat04', { api_key: KEY })).json.data.images.original;
    expect((await fetch(url.split('?')[0])).status).toBe(400);
    expect((await fetch(url.replace('ct=g', 'ct=s'))).status).toBe(400);
    expect((await fetch(url.replace('giphy.gif?', 'giphy.mp4?'))).status).toBe(404);
    expect(fake.downloads.has('/media/cat04/giphy.gif')).toBe(false);
  });
});

describe('the key, the rate limit and the faults', () => {
  it('answers 401 with a Meta Object for a missing or a wrong key', async () => {
    const missing = await get('/v1/gifs/search', { q: 'cat' });
    expect([missing.status, missing.json]).toEqual([401, { data: [], meta: { status: 401, msg: 'No API key found in request.', response_id: '' } }]);
    const wrong = await get('/v1/gifs/cat00', { api_key: 'guess' });
    expect([wrong.status, wrong.json.meta.msg]).toEqual([401, 'Unauthorized']);
  });

  it('answers 429 past the key\'s calls per hour, searches and GIFs alike; media still flow', async () => {
    const limited = await startFakeGiphy({ rateLimitPerHour: 3 });
    try {
      const first = await search({ q: 'cat' }, limited);
      await get('/v1/gifs/catNap2', { api_key: limited.apiKey }, limited);
      await search({ q: 'cat', limit: '99' }, limited); // refused (400), still a call
      const over = await search({ q: 'cat' }, limited);
      expect([over.status, over.json]).toEqual([429, { data: [], meta: { status: 429, msg: 'Too Many Requests', response_id: '' } }]);
      expect((await get('/v1/gifs/catNap2', { api_key: limited.apiKey }, limited)).status).toBe(429);
      expect((await fetch(first.json.data[0].images.fixed_width.url)).status).toBe(200);
      expect(limited.requests.map((request) => request.status)).toEqual([200, 200, 400, 429, 429, 200]);
    } finally {
      await limited.close();
    }
  });

  it('injects faults: a status, a dropped connection, GIPHY\'s synthetic response, a media download cut short', async () => {
    fake.failNext('search', { status: 503 });
    const failed = await search({ q: 'cat' });
    expect([failed.status, failed.json.meta]).toEqual([503, { status: 503, msg: 'Service Unavailable', response_id: '' }]);
    fake.failNext('gif', 'drop');
    await expect(fetch(`${fake.url}/v1/gifs/cat00?api_key=${KEY}`)).rejects.toThrow();
    fake.failNext('search', 'synthetic');
    const synthetic = await search({ q: 'cat' });
    expect([synthetic.status, synthetic.json]).toEqual([200, { data: [], meta: { status: 200, msg: 'OK', response_id: '' } }]);
    const { url } = (await search({ q: 'cat', limit: '1' })).json.data[0].images.original;
    fake.failNext('media', { status: 503 });
    expect((await fetch(url)).status).toBe(503);
    fake.failNext('media', 'drop');
    const cut = await fetch(url);
    await expect(cut.arrayBuffer()).rejects.toThrow();
    expect((await fetch(url)).status).toBe(200);
  });
});
