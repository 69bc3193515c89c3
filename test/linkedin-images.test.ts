import { createHash } from 'node:crypto';
import postgres from 'postgres';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FakeLinkedIn, FakeMember } from './support/linkedin.js';
import { connectLinkedIn, startLinkedInFixture, stopLinkedInFixture } from './support/linkedin-browser.js';
import { call, eventually, isSettled, settledScheduleOf, type TestService, type Workspace } from './support/service.js';

/**
 * LinkedIn images end to end: real images through the uploads API (the worker making their variants), a post published
 * by the worker, and what LinkedIn's contract fake (test/support/linkedin.ts) received: the Images API's uploads (the
 * bytes of the version chosen) and the post's `content.media` or `content.multiImage` with alt text.
 */

let fake: FakeLinkedIn;
let service: TestService;
let ws: Workspace;
let sql: postgres.Sql;

beforeAll(async () => ({ fake, service, ws, sql } = await startLinkedInFixture()));
afterAll(() => stopLinkedInFixture({ fake, service, sql }));

const rest = (path: string, options: { method?: string; body?: unknown } = {}) => call(`${service.api}${path}`, { key: ws.apiKey, ...options });
const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('base64');
const download = async (url: string) => Buffer.from(await (await fetch(url)).arrayBuffer());

const connect = (member: FakeMember, page?: string) => connectLinkedIn(service, ws.apiKey, fake, member, page);

/** A photo-like image: a gradient, so it compresses as photos do. */
async function photo(width: number, height: number): Promise<Buffer> {
  const raw = Buffer.alloc(width * height * 3);
  for (let i = 0; i < width * height; i++) raw.set([((i % width) * 255) / width, (Math.floor(i / width) * 255) / height, i % 256], i * 3);
  return sharp(raw, { raw: { width, height, channels: 3 } }).jpeg({ quality: 90 }).toBuffer();
}

/** initiate → PUT → complete, then the variants waited for; answers the upload as completeUpload shows it once ready. */
async function upload(bytes: Buffer, fileType: string) {
  const body = { scenarioId: 'post_attachments', fileName: 'image', fileType, fileSize: bytes.length, checksum: sha256(bytes) };
  const started = await rest('/uploads/initiate', { method: 'POST', body });
  expect(started.status, started.text).toBe(200);
  expect((await fetch(started.json.signedUrl, { method: 'PUT', body: new Uint8Array(bytes), headers: started.json.requiredHeaders })).status).toBe(200);
  const complete = () => rest('/uploads/complete', { method: 'POST', body: { uploadId: started.json.uploadId, checksum: sha256(bytes) } });
  const done = await eventually(complete, (answer) => answer.json.variantsStatus !== 'pending', 20_000);
  expect(done.json, done.text).toMatchObject({ variantsStatus: 'ready' });
  return done.json as { mediaId: string; publicUrl: string; variants: Record<string, { url: string; width: number; height: number }> };
}

async function publish(media: { id: string; altText: string }[], integrationId: string, content: string) {
  const created = await rest('/posts', { method: 'POST', body: { rows: [{ content, media }], shared: { selectedIntegrations: [integrationId] }, postAction: 'PUBLISH_NOW' } });
  expect(created.status, created.text).toBe(201);
  const schedule = await settledScheduleOf(sql, created.json.postId);
  expect(schedule, schedule.failureReason ?? '').toMatchObject({ status: 'PUBLISHED' });
  return fake.posts.get(schedule.platformPostId!)!;
}

describe('LinkedIn images', () => {
  it('one image: uploaded through the Images API as the member, its source variant\'s bytes, posted as content.media with alt text', async () => {
    const member = fake.addMember('Grace Hopper');
    const channel = await connect(member);
    const image = await upload(await photo(2400, 1600), 'image/jpeg');

    const post = await publish([{ id: image.mediaId, altText: 'A gradient, (wide) #1' }], channel, 'One image');
    expect(post.author).toBe(`urn:li:person:${member.sub}`);
    expect(post.content).toEqual({ media: { id: expect.stringMatching(/^urn:li:image:/), altText: 'A gradient, (wide) #1' } });
    const uploaded = fake.images.get((post.content as any).media.id)!;
    expect(uploaded).toMatchObject({ owner: post.author, status: 'AVAILABLE', mimeType: 'image/jpeg' });
    // The source variant (at most 2000 px wide), not the 2400 px upload.
    expect(image.variants.source).toMatchObject({ width: 2000, height: 1333 });
    expect(uploaded.bytes!.equals(await download(image.variants.source!.url))).toBe(true);
    expect(fake.requests.filter((request) => request === 'POST /rest/images')).toHaveLength(1);
  });

  it('two images as a page: content.multiImage in order with alt text; a transparent PNG goes as itself, LinkedIn taking no WebP', async () => {
    const member = fake.addMember('Ida Wells', [{ id: 81_234, name: 'Gazette' }]);
    const page = 'urn:li:organization:81234';
    const channel = await connect(member, page);
    const jpeg = await photo(600, 400);
    const png = await sharp({ create: { width: 300, height: 500, channels: 4, background: { r: 20, g: 120, b: 200, alpha: 0.5 } } }).png().toBuffer();
    const first = await upload(jpeg, 'image/jpeg');
    const second = await upload(png, 'image/png');
    // The variants of a transparent image are WebP, which LinkedIn does not take.
    expect((await sharp(await download(second.variants.source!.url)).metadata()).format).toBe('webp');

    const post = await publish(
      [
        { id: first.mediaId, altText: 'A small gradient' },
        { id: second.mediaId, altText: 'A translucent blue panel' },
      ],
      channel,
      'Two images',
    );
    expect(post.author).toBe(page);
    const images = (post.content as { multiImage: { images: { id: string; altText: string }[] } }).multiImage.images;
    expect(post.content).toEqual({ multiImage: { images: [expect.anything(), expect.anything()] } });
    expect(images.map((image) => image.altText)).toEqual(['A small gradient', 'A translucent blue panel']);
    const [one, two] = images.map((image) => fake.images.get(image.id)!);
    expect([one!.owner, two!.owner]).toEqual([page, page]);
    expect(one!.bytes!.equals(await download(first.variants.source!.url))).toBe(true);
    expect(two).toMatchObject({ mimeType: 'image/png' });
    expect(two!.bytes!.equals(png)).toBe(true);
  });

  it('an animated GIF goes as itself, its frames kept', async () => {
    const channel = await connect(fake.addMember('Emmy Noether'));
    const [width, height, frames] = [120, 80, 3];
    const raw = Buffer.alloc(width * height * frames * 3);
    for (let i = 0; i < width * height * frames; i++) raw.set([Math.floor(i / (width * height)) * 100, i % 255, 60], i * 3);
    const gif = await sharp(raw, { raw: { width, height: height * frames, channels: 3, pageHeight: height } }).gif({ delay: [100, 100, 100] }).toBuffer();
    const image = await upload(gif, 'image/gif');

    const post = await publish([{ id: image.mediaId, altText: 'Three frames' }], channel, 'A GIF');
    const uploaded = fake.images.get((post.content as { media: { id: string } }).media.id)!;
    expect(uploaded).toMatchObject({ mimeType: 'image/gif', status: 'AVAILABLE' });
    expect(uploaded.bytes!.equals(gif)).toBe(true);
    expect((await sharp(uploaded.bytes!, { animated: true }).metadata()).pages).toBe(frames);
  });

  it('a 429 to initializeUpload is retried after its backoff, and an upload answer lost is tried again: one post, its images uploaded', async () => {
    const member = fake.addMember('Lise Meitner');
    const channel = await connect(member);
    const image = await upload(await photo(500, 300), 'image/jpeg');
    fake.failNext('images', { status: 429, retryAfter: 60 });
    fake.failNext('images', 'drop');
    const created = await rest('/posts', {
      method: 'POST',
      body: { rows: [{ content: 'Throttled', media: [{ id: image.mediaId, altText: 'Later' }] }], shared: { selectedIntegrations: [channel] }, postAction: 'PUBLISH_NOW' },
    });
    expect(created.status, created.text).toBe(201);
    const [{ id }] = [...(await sql<{ id: string }[]>`SELECT id FROM schedules WHERE post_id = ${created.json.postId}`)] as [{ id: string }];
    const state = () => sql<{ status: string; retryCount: number; failureReason: string | null; runAt: Date | null }[]>`
      SELECT s.status, s.retry_count, s.failure_reason, j.run_at FROM schedules s
      LEFT JOIN graphile_worker._private_jobs j ON j.key = 'publish-schedule:' || s.id WHERE s.id = ${id}`.then((rows) => rows[0]!);
    const retryNow = () => sql`UPDATE graphile_worker._private_jobs SET run_at = now() WHERE key = ${`publish-schedule:${id}`}`;

    // The 429: a transient failure, the retry queued after LinkedIn's Retry-After.
    const settledOr = (retries: number) => (row: { status: string; retryCount: number }) => row.retryCount === retries || isSettled(row);
    const throttled = await eventually(state, settledOr(1), 20_000);
    expect(throttled.status, throttled.failureReason ?? '').toBe('SCHEDULED');
    expect(throttled.runAt!.getTime()).toBeGreaterThan(Date.now() + 50_000);
    await retryNow();
    // The dropped initializeUpload: nothing published, so transient too, and retried.
    const dropped = await eventually(state, settledOr(2), 20_000);
    expect(dropped, dropped.failureReason ?? '').toMatchObject({ status: 'SCHEDULED', retryCount: 2 });
    await retryNow();
    const done = await eventually(state, isSettled, 30_000);
    expect(done.status, done.failureReason ?? '').toBe('PUBLISHED');

    const posts = [...fake.posts.values()].filter((post) => post.author === `urn:li:person:${member.sub}`);
    expect(posts).toHaveLength(1);
    expect(posts[0]!.content).toEqual({ media: { id: expect.stringMatching(/^urn:li:image:/), altText: 'Later' } });
    // The dropped call's image was made but never uploaded; the post names the one uploaded on the last attempt.
    const owned = [...fake.images.values()].filter((stored) => stored.owner === posts[0]!.author);
    expect(owned.map((stored) => stored.status).sort()).toEqual(['AVAILABLE', 'WAITING_UPLOAD']);
  });

  it('a WebP image is refused for a LinkedIn channel with MEDIA_RULE_VIOLATED, and nothing is created', async () => {
    const channel = await connect(fake.addMember('Mary Somerville'));
    const webp = await upload(await sharp(await photo(200, 100)).webp().toBuffer(), 'image/webp');
    const before = fake.posts.size;
    const refused = await rest('/posts', {
      method: 'POST',
      body: { rows: [{ content: 'WebP', media: [{ id: webp.mediaId, altText: 'webp' }] }], shared: { selectedIntegrations: [channel] }, postAction: 'PUBLISH_NOW' },
    });
    expect(refused.status, refused.text).toBe(400);
    expect(refused.json).toMatchObject({ code: 'MEDIA_RULE_VIOLATED', message: expect.stringMatching(/^rows\[0\]\.media\[0\]: Image 1 is a WebP image; LinkedIn \(.+\) takes JPEG, PNG and GIF images \(image\/webp\)$/) });
    expect(fake.posts.size).toBe(before);
  });
});
