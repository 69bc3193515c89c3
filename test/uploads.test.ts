import { createHash } from 'node:crypto';
import { once } from 'node:events';
import { createServer } from 'node:net';
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import postgres from 'postgres';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { operations } from '../operations/index.js';
import { definePlan, setWorkspacePlan } from '../src/admin/plans.js';
import { openStorage } from '../src/storage/index.js';
import { createAccount } from './support/bluesky.js';
import { photo } from './support/images.js';
import { call, eventually, settledScheduleOf, startTestService, waitingOnLocks, type TestService, type Workspace } from './support/service.js';

/**
 * Uploads against the embedded S3-compatible server the service starts (src/storage/embedded.ts), with real image
 * bytes made by sharp, and the worker making the variants.
 */

let service: TestService;
let ws: Workspace;
let sql: postgres.Sql;

beforeAll(async () => {
  service = await startTestService({}, { api: true, worker: true });
  ws = await service.workspace({ plan: 'business' });
  sql = postgres(service.databaseUrl, { max: 2, onnotice: () => {}, transform: postgres.camel });
});
afterAll(async () => {
  await sql?.end();
  await service?.stop();
});

const rest = (path: string, options: { method?: string; body?: unknown; key?: string; headers?: Record<string, string> } = {}) =>
  call(`${service.api}${path}`, { key: ws.apiKey, ...options });
const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('base64');

function initiate(bytes: Buffer, overrides: Record<string, unknown> = {}, key = ws.apiKey) {
  return rest('/uploads/initiate', {
    method: 'POST',
    key,
    body: { scenarioId: 'post_attachments', fileName: 'photo.jpg', fileType: 'image/jpeg', fileSize: bytes.length, checksum: sha256(bytes), ...overrides },
  });
}

const put = (signedUrl: string, bytes: Buffer, headers: Record<string, string>) => fetch(signedUrl, { method: 'PUT', body: new Uint8Array(bytes), headers });

/** initiate, PUT, complete; answers complete's response. */
async function upload(bytes: Buffer, overrides: Record<string, unknown> = {}, key = ws.apiKey) {
  const started = await initiate(bytes, overrides, key);
  expect(started.status, started.text).toBe(200);
  const stored = await put(started.json.signedUrl, bytes, started.json.requiredHeaders);
  expect(stored.status, await stored.clone().text()).toBe(200);
  return rest('/uploads/complete', { method: 'POST', key, body: { uploadId: started.json.uploadId, checksum: overrides.checksum ?? sha256(bytes) } });
}

async function mediaOf(mediaId: string) {
  return eventually(
    async () => (await sql<{ variantsStatus: string; variantsError: string | null; mimeType: string; width: number; height: number }[]>`
      SELECT variants_status, variants_error, mime_type, width, height FROM media WHERE id = ${mediaId}`)[0],
    (media) => media?.variantsStatus !== 'pending',
    20_000,
  );
}

describe('the whole flow', () => {
  it('initiate → PUT to the signed URL → complete makes media whose variants have the right shapes', async () => {
    const bytes = await photo(1600, 1000);
    const started = await initiate(bytes);
    expect(started.status, started.text).toBe(200);
    expect(started.json).toMatchObject({ uploadType: 'single', requiredHeaders: { 'content-type': 'image/jpeg', 'x-amz-checksum-sha256': sha256(bytes) } });
    expect(Date.parse(started.json.expiresAt)).toBeGreaterThan(Date.now());
    expect((await put(started.json.signedUrl, bytes, started.json.requiredHeaders)).status).toBe(200);

    const done = await rest('/uploads/complete', { method: 'POST', body: { uploadId: started.json.uploadId, checksum: sha256(bytes) } });
    expect(done.status, done.text).toBe(200);
    expect(done.json).toMatchObject({ uploadId: started.json.uploadId, status: 'completed', idempotent: false, variantsStatus: 'pending', variants: {} });
    expect(operations.find((operation) => operation.id === 'completeUpload')!.output.safeParse(done.json).success).toBe(true);
    const served = await fetch(done.json.publicUrl);
    expect(Buffer.from(await served.arrayBuffer()).equals(bytes)).toBe(true);

    const media = await mediaOf(done.json.mediaId);
    expect(media).toMatchObject({ variantsStatus: 'ready', mimeType: 'image/jpeg', width: 1600, height: 1000 });
    const again = await rest('/uploads/complete', { method: 'POST', body: { uploadId: started.json.uploadId, checksum: sha256(bytes) } });
    expect(again.status).toBe(200);
    expect(again.json).toMatchObject({ idempotent: true, mediaId: done.json.mediaId, variantsStatus: 'ready' });
    const expected = { '1:1': [1000, 1000], '4:5': [800, 1000], '9:16': [563, 1000], '1.91:1': [1200, 628], source: [1600, 1000] };
    for (const [name, [width, height]] of Object.entries(expected)) {
      const variant = again.json.variants[name];
      expect(variant, name).toMatchObject({ width, height });
      const file = Buffer.from(await (await fetch(variant.url)).arrayBuffer());
      expect(file.length).toBe(variant.sizeBytes);
      const read = await sharp(file).metadata();
      expect([read.width, read.height, read.format], name).toEqual([width, height, 'jpeg']);
    }
    expect(again.json.variants.source.sizeBytes).toBeLessThanOrEqual(1_000_000);
  });

  it('initiate takes an Idempotency-Key: a retry answers the same upload and reserves nothing more', async () => {
    const bytes = await photo(30, 30);
    const body = { scenarioId: 'post_attachments', fileName: 'once.jpg', fileType: 'image/jpeg', fileSize: bytes.length, checksum: sha256(bytes) };
    const headers = { 'idempotency-key': `initiate-${Date.now()}` };
    const first = await rest('/uploads/initiate', { method: 'POST', body, headers });
    const again = await rest('/uploads/initiate', { method: 'POST', body, headers });
    expect(first.status, first.text).toBe(200);
    expect(again.json.uploadId).toBe(first.json.uploadId);
    expect(await sql`SELECT 1 FROM uploads WHERE file_name = 'once.jpg'`).toHaveLength(1);
  });

  it('two completes at once make one media: one answers idempotent false, the other true', async () => {
    const bytes = await photo(80, 60);
    const started = await initiate(bytes);
    await put(started.json.signedUrl, bytes, started.json.requiredHeaders);
    const body = { uploadId: started.json.uploadId, checksum: sha256(bytes) };
    const answers = await Promise.all([1, 2].map(() => rest('/uploads/complete', { method: 'POST', body })));
    expect(answers.map((answer) => answer.status)).toEqual([200, 200]);
    expect(answers.map((answer) => answer.json.idempotent).sort()).toEqual([false, true]);
    expect(answers[0]!.json.mediaId).toBe(answers[1]!.json.mediaId);
    expect(await sql`SELECT 1 FROM media WHERE upload_id = ${started.json.uploadId}`).toHaveLength(1);
  });

  it('reads the real type from the bytes, not the declared one', async () => {
    const bytes = await photo(300, 200, 'png');
    const done = await upload(bytes, { fileType: 'image/jpeg', fileName: 'not really.jpg' });
    expect(done.status, done.text).toBe(200);
    expect(await mediaOf(done.json.mediaId)).toMatchObject({ mimeType: 'image/png', width: 300, height: 200, variantsStatus: 'ready' });
  });

  it('an image whose header reads but whose pixels do not decode: its variants fail with the reason, and Bluesky refuses it', async () => {
    const full = await photo(400, 300);
    const truncated = full.subarray(0, Math.floor(full.length * 0.6));
    const done = await upload(truncated);
    expect(done.status, done.text).toBe(200);
    const media = await mediaOf(done.json.mediaId);
    expect(media).toMatchObject({ variantsStatus: 'failed', variantsError: expect.stringContaining('could not be decoded') });
    const sky = (await ws.admin('createIntegration', { platform: 'BLUESKY', name: 'Failed variants' })).id;
    const refused = await rest('/posts', { method: 'POST', body: { rows: [{ content: 'x', media: [{ id: done.json.mediaId }] }], shared: { selectedIntegrations: [sky] }, postAction: 'DRAFT' } });
    expect(refused.json).toMatchObject({ code: 'MEDIA_RULE_VIOLATED', message: expect.stringContaining('its variants failed') });
  });

  it('refuses bytes that are no image, deleting them', async () => {
    const bytes = Buffer.from('%PDF-1.4 this is not an image at all');
    const started = await initiate(bytes, { fileType: 'image/png' });
    await put(started.json.signedUrl, bytes, started.json.requiredHeaders);
    const done = await rest('/uploads/complete', { method: 'POST', body: { uploadId: started.json.uploadId, checksum: sha256(bytes) } });
    expect(done.status, done.text).toBe(400);
    expect(done.json).toMatchObject({ code: 'VALIDATION_ERROR', message: expect.stringContaining('not a JPEG, PNG, WebP or GIF') });
    // Withdrawn until its URL expires (the upload-expiry task removes it then), and gone from the API.
    expect(await sql`SELECT status FROM uploads WHERE id = ${started.json.uploadId}`).toEqual([{ status: 'withdrawn' }]);
    expect((await fetch(started.json.signedUrl.split('?')[0])).status).toBe(404);
    expect((await rest('/uploads/complete', { method: 'POST', body: { uploadId: started.json.uploadId, checksum: sha256(bytes) } })).status).toBe(404);
  });
});

describe('what the signed URL and complete refuse', () => {
  it('wrong checksum: the bytes are not the declared ones → CHECKSUM_MISMATCH, the object deleted, no media', async () => {
    const bytes = await photo(200, 200);
    const declared = sha256(Buffer.from('other bytes'));
    const started = await initiate(bytes, { checksum: declared });
    // The embedded store does not check the checksum header (AWS S3 would refuse this PUT); complete does.
    const stored = await put(started.json.signedUrl, bytes, started.json.requiredHeaders);
    expect(stored.status).toBe(200);
    const done = await rest('/uploads/complete', { method: 'POST', body: { uploadId: started.json.uploadId, checksum: declared } });
    expect(done.status, done.text).toBe(400);
    expect(done.json.code).toBe('CHECKSUM_MISMATCH');
    expect(await sql`SELECT 1 FROM media m JOIN uploads u ON u.id = m.upload_id WHERE u.id = ${started.json.uploadId}`).toHaveLength(0);
    expect(await sql`SELECT status FROM uploads WHERE id = ${started.json.uploadId}`).toEqual([{ status: 'withdrawn' }]);
    const objectUrl = started.json.signedUrl.split('?')[0];
    expect((await fetch(objectUrl)).status).toBe(404);
    const again = await rest('/uploads/complete', { method: 'POST', body: { uploadId: started.json.uploadId, checksum: declared } });
    expect(again.status).toBe(404);
  });

  it('complete with another checksum than initiate\'s → CHECKSUM_MISMATCH, nothing changed', async () => {
    const bytes = await photo(100, 100);
    const started = await initiate(bytes);
    await put(started.json.signedUrl, bytes, started.json.requiredHeaders);
    const wrong = await rest('/uploads/complete', { method: 'POST', body: { uploadId: started.json.uploadId, checksum: sha256(Buffer.from('x')) } });
    expect(wrong.json.code).toBe('CHECKSUM_MISMATCH');
    const right = await rest('/uploads/complete', { method: 'POST', body: { uploadId: started.json.uploadId, checksum: createHash('sha256').update(bytes).digest('hex') } });
    expect(right.status, right.text).toBe(200);
  });

  it('wrong size, type or checksum header: the store refuses the PUT, and complete says nothing was uploaded', async () => {
    const bytes = await photo(200, 100);
    const started = await initiate(bytes);
    const headers = started.json.requiredHeaders;
    expect((await put(started.json.signedUrl, Buffer.concat([bytes, Buffer.from([0])]), headers)).status).toBe(403);
    expect((await put(started.json.signedUrl, bytes.subarray(1), headers)).status).toBe(403);
    expect((await put(started.json.signedUrl, bytes, { ...headers, 'content-type': 'image/png' })).status).toBe(403);
    expect((await put(started.json.signedUrl, bytes, { ...headers, 'x-amz-checksum-sha256': sha256(Buffer.from('x')) })).status).toBe(403);
    const unsigned = await fetch(started.json.signedUrl.split('?')[0], { method: 'PUT', body: new Uint8Array(bytes), headers });
    expect(unsigned.status).toBe(403);
    const done = await rest('/uploads/complete', { method: 'POST', body: { uploadId: started.json.uploadId, checksum: sha256(bytes) } });
    expect(done.status, done.text).toBe(409);
    expect(done.json).toMatchObject({ code: 'INVALID_STATE', message: expect.stringContaining('PUT it to the signedUrl') });
  });

  it('refuses scenarios, types and sizes the OpenAPI document does not allow, naming the field', async () => {
    const bytes = await photo(10, 10);
    for (const [field, value] of [
      ['scenarioId', 'avatars'],
      ['fileType', 'application/pdf'],
      ['fileSize', 20 * 1024 * 1024 + 1],
      ['fileSize', 0],
      ['checksum', 'abc'],
    ] as const) {
      const refused = await initiate(bytes, { [field]: value });
      expect(refused.status, field).toBe(400);
      expect(refused.json.code).toBe('VALIDATION_ERROR');
      expect(refused.json.message).toContain(field);
    }
    const document = (await call(`${service.api}/openapi.json`)).json;
    const schema = document.paths['/uploads/initiate'].post.requestBody.content['application/json'].schema;
    const body = schema.$ref ? document.components.schemas[schema.$ref.split('/').pop()] : schema;
    expect(body.properties.fileSize.maximum).toBe(20 * 1024 * 1024);
    expect(body.properties.fileType.enum).toEqual(['image/jpeg', 'image/png', 'image/webp', 'image/gif']);
    expect(body.properties.scenarioId.enum).toEqual(['post_attachments']);
  });

  it('another workspace\'s upload is not found', async () => {
    const other = await service.workspace();
    const bytes = await photo(50, 50);
    const started = await initiate(bytes);
    const complete = await rest('/uploads/complete', { method: 'POST', key: other.apiKey, body: { uploadId: started.json.uploadId, checksum: sha256(bytes) } });
    expect(complete.status).toBe(404);
    expect((await rest(`/uploads/${started.json.uploadId}`, { method: 'DELETE', key: other.apiKey, body: {} })).status).toBe(404);
  });
});

describe('the storage allowance', () => {
  async function workspaceOnPlan(storageBytes: number) {
    const name = `storage-${storageBytes}-${Math.random().toString(36).slice(2, 8)}`;
    await definePlan(service.service.core.db, { name, rateLimitPerMinute: 1000, storageBytes });
    const workspace = await service.workspace();
    await setWorkspacePlan(service.service.core.db, workspace.workspaceId, name);
    return { workspace, plan: name };
  }

  it('an upload over the allowance is refused naming the limit, the usage and the plan; delete gives it back', async () => {
    const bytes = await photo(120, 80);
    const { workspace, plan } = await workspaceOnPlan(bytes.length * 2 + 10);
    const first = await upload(bytes, {}, workspace.apiKey);
    expect(first.status, first.text).toBe(200);
    const pending = await initiate(bytes, {}, workspace.apiKey);
    expect(pending.status).toBe(200);
    const refused = await initiate(bytes, {}, workspace.apiKey);
    expect(refused.status, refused.text).toBe(403);
    expect(refused.json.code).toBe('STORAGE_QUOTA_EXCEEDED');
    expect(refused.json.message).toContain(`The ${plan} plan allows ${bytes.length * 2 + 10} bytes`);
    expect(refused.json.message).toContain(`${bytes.length * 2} bytes are in use`);

    // Deleting the pending upload releases its reservation; deleting the completed one frees its bytes.
    expect((await rest(`/uploads/${pending.json.uploadId}`, { method: 'DELETE', key: workspace.apiKey, body: {} })).json).toEqual({ success: true });
    const variants = (await mediaOf(first.json.mediaId)) && (await rest('/uploads/complete', { method: 'POST', key: workspace.apiKey, body: { uploadId: first.json.uploadId, checksum: sha256(bytes) } })).json.variants;
    const deleted = await rest(`/uploads/${first.json.uploadId}`, { method: 'DELETE', key: workspace.apiKey, body: {} });
    expect(deleted.json).toEqual({ success: true });
    expect(await sql`SELECT 1 FROM media WHERE id = ${first.json.mediaId}`).toHaveLength(0);
    for (const url of [first.json.publicUrl, ...Object.values(variants).map((variant: any) => variant.url)]) expect((await fetch(url)).status, url).toBe(404);
    expect((await rest(`/uploads/${first.json.uploadId}`, { method: 'DELETE', key: workspace.apiKey, body: {} })).status).toBe(404);
    // Their signed URLs still accept a PUT until they expire: their bytes count until then, and what is PUT is removed.
    const late = await put(pending.json.signedUrl, bytes, pending.json.requiredHeaders);
    expect(late.status).toBe(200);
    const whole = () => initiate(bytes, { fileSize: bytes.length * 2 + 10 }, workspace.apiKey);
    const waiting = await whole();
    expect(waiting.status, waiting.text).toBe(403);
    expect(waiting.json.message).toContain('and deleted ones until their signed URL expires');
    expect((await rest('/uploads/complete', { method: 'POST', key: workspace.apiKey, body: { uploadId: pending.json.uploadId, checksum: sha256(bytes) } })).status).toBe(404);
    const [{ objectKey }] = [...(await sql<{ objectKey: string }[]>`SELECT object_key FROM uploads WHERE id = ${pending.json.uploadId}`)] as [{ objectKey: string }];
    const { storage } = service.service.core.app;
    expect(await storage.size(objectKey)).toBe(bytes.length);
    // Past the URLs' expiry (moved here rather than waited for), with the expiry job run now: the file is gone, the bytes given back.
    await sql`UPDATE uploads SET expires_at = now() - interval '1 second' WHERE id IN (${pending.json.uploadId}, ${first.json.uploadId})`;
    await sql`UPDATE graphile_worker._private_jobs SET run_at = now() WHERE key = ${`upload-expiry:${pending.json.uploadId}`}`;
    await eventually(() => storage.size(objectKey), (size) => size === null, 10_000);
    expect(await sql`SELECT 1 FROM uploads WHERE id = ${pending.json.uploadId}`).toHaveLength(0);
    expect((await whole()).status).toBe(200);
  });

  it('20 concurrent initiates cannot overrun it together', async () => {
    const { workspace } = await workspaceOnPlan(10_000);
    const bytes = Buffer.alloc(1000, 1);
    const answers = await Promise.all(Array.from({ length: 20 }, () => initiate(bytes, {}, workspace.apiKey)));
    expect(answers.filter((answer) => answer.status === 200)).toHaveLength(10);
    expect(answers.filter((answer) => answer.status === 403 && answer.json.code === 'STORAGE_QUOTA_EXCEEDED')).toHaveLength(10);
    const [reserved] = await sql<{ bytes: string }[]>`SELECT sum(size) AS bytes FROM uploads WHERE organization_id = ${workspace.workspaceId}`;
    expect(Number(reserved!.bytes)).toBe(10_000);
  });
});

describe('an expired signed URL', () => {
  let short: TestService;
  beforeAll(async () => {
    short = await startTestService({ uploadUrlTtlSeconds: 1 });
  });
  afterAll(async () => {
    await short?.stop();
  });

  it('is refused by the store, complete says so, and its reservation lapses', async () => {
    const name = `storage-expiry-${Math.random().toString(36).slice(2, 8)}`;
    await definePlan(short.service.core.db, { name, rateLimitPerMinute: 1000, storageBytes: 5000 });
    const workspace = await short.workspace();
    await setWorkspacePlan(short.service.core.db, workspace.workspaceId, name);
    const bytes = await photo(40, 40);
    const body = { scenarioId: 'post_attachments', fileName: 'a.jpg', fileType: 'image/jpeg', fileSize: 5000, checksum: sha256(bytes) };
    const started = await call(`${short.api}/uploads/initiate`, { method: 'POST', key: workspace.apiKey, body });
    expect(started.status, started.text).toBe(200);
    const full = await call(`${short.api}/uploads/initiate`, { method: 'POST', key: workspace.apiKey, body });
    expect(full.json.code).toBe('STORAGE_QUOTA_EXCEEDED');
    // Past the expiry (the store's clock counts whole seconds from the signing time).
    await eventually(async () => Date.now(), (now) => now > Date.parse(started.json.expiresAt) + 1500, 5000);
    const stored = await put(started.json.signedUrl, bytes, started.json.requiredHeaders);
    expect(stored.status).toBe(403);
    expect(await stored.text()).toContain('Request has expired');
    const done = await call(`${short.api}/uploads/complete`, { method: 'POST', key: workspace.apiKey, body: { uploadId: started.json.uploadId, checksum: sha256(bytes) } });
    expect(done.json).toMatchObject({ code: 'INVALID_STATE', message: expect.stringContaining('expired') });
    const again = await call(`${short.api}/uploads/initiate`, { method: 'POST', key: workspace.apiKey, body });
    expect(again.status, again.text).toBe(200);
  });

  it('is read by complete with the database\'s clock, as the allowance is: a service whose clock runs behind cannot overrun it', async () => {
    const minute = await startTestService({ uploadUrlTtlSeconds: 60 });
    vi.useFakeTimers({ toFake: ['Date'], shouldAdvanceTime: true });
    try {
      const name = `storage-clock-${Math.random().toString(36).slice(2, 8)}`;
      const bytes = await photo(40, 40);
      await definePlan(minute.service.core.db, { name, rateLimitPerMinute: 1000, storageBytes: Math.floor(bytes.length * 1.5) });
      const workspace = await minute.workspace();
      await setWorkspacePlan(minute.service.core.db, workspace.workspaceId, name);
      // This process (the service and its embedded store in it) 90 s behind the database: the URLs it signs work for a
      // minute by its clock, but have expired by the database's, which has stopped counting their reservations.
      vi.setSystemTime(Date.now() - 90_000);
      const body = { scenarioId: 'post_attachments', fileName: 'a.jpg', fileType: 'image/jpeg', fileSize: bytes.length, checksum: sha256(bytes) };
      const uploads = [];
      for (let i = 0; i < 2; i++) {
        const started = await call(`${minute.api}/uploads/initiate`, { method: 'POST', key: workspace.apiKey, body });
        expect(started.status, started.text).toBe(200);
        expect((await put(started.json.signedUrl, bytes, started.json.requiredHeaders)).status).toBe(200);
        uploads.push(started.json.uploadId as string);
      }
      const complete = (uploadId: string) => call(`${minute.api}/uploads/complete`, { method: 'POST', key: workspace.apiKey, body: { uploadId, checksum: sha256(bytes) } });
      // complete takes each lapsed reservation again, by the clock that let it lapse: the second no longer fits.
      expect((await complete(uploads[0]!)).status).toBe(200);
      const refused = await complete(uploads[1]!);
      expect(refused.status, refused.text).toBe(403);
      expect(refused.json.code).toBe('STORAGE_QUOTA_EXCEEDED');
    } finally {
      vi.useRealTimers();
      await minute.stop();
    }
  });
});

describe('over MCP', () => {
  it('initiate, complete and delete are tools with the same answers', async () => {
    const mcp = new Client({ name: 'test', version: '1.0.0' });
    await mcp.connect(new StreamableHTTPClientTransport(new URL(`${service.base}/mcp`), { requestInit: { headers: { 'x-api-key': ws.apiKey } } }));
    try {
      const bytes = await photo(64, 48);
      const started: any = await mcp.callTool({
        name: 'initiateUpload',
        arguments: { scenarioId: 'post_attachments', fileName: 'mcp.jpg', fileType: 'image/jpeg', fileSize: bytes.length, checksum: sha256(bytes) },
      });
      expect(started.isError, JSON.stringify(started)).toBeFalsy();
      const { signedUrl, requiredHeaders, uploadId } = started.structuredContent;
      expect((await put(signedUrl, bytes, requiredHeaders)).status).toBe(200);
      const done: any = await mcp.callTool({ name: 'completeUpload', arguments: { uploadId, checksum: sha256(bytes) } });
      expect(done.structuredContent).toMatchObject({ uploadId, status: 'completed', idempotent: false });
      const mismatch: any = await mcp.callTool({ name: 'completeUpload', arguments: { uploadId, checksum: sha256(Buffer.from('no')) } });
      expect(mismatch.isError).toBe(true);
      expect(JSON.parse(mismatch.content[0].text).code).toBe('CHECKSUM_MISMATCH');
      const deleted: any = await mcp.callTool({ name: 'deleteUpload', arguments: { uploadId } });
      expect(deleted.structuredContent).toEqual({ success: true });
    } finally {
      await mcp.close();
    }
  });
});

describe('media on posts', () => {
  let sky: string;
  let pro: string;
  const future = () => new Date(Date.now() + 3 * 86_400_000).toISOString();
  const createPost = (row: Record<string, unknown>, integrations: string[], postAction = 'DRAFT') =>
    rest('/posts', { method: 'POST', body: { rows: [{ content: 'with media', ...row }], shared: { selectedIntegrations: integrations }, postAction } });
  async function mediaIds(n: number, format: 'jpeg' | 'webp' = 'jpeg') {
    return Promise.all(
      Array.from({ length: n }, async (_, index) => {
        const bytes = format === 'webp' ? await sharp(await photo(60 + index, 40)).webp().toBuffer() : await photo(60 + index, 40);
        const done = await upload(bytes, { fileType: `image/${format}`, fileName: `image-${index}.${format}` });
        expect(done.status, done.text).toBe(200);
        return done.json.mediaId as string;
      }),
    );
  }

  beforeAll(async () => {
    sky = (await ws.admin('createIntegration', { platform: 'BLUESKY', name: 'Sky' })).id;
    pro = (await ws.admin('createIntegration', { platform: 'LINKEDIN', name: 'Pro' })).id;
  });

  it('attaches media in order with alt text; posts, schedules and the calendar show it', async () => {
    const [first, second] = await mediaIds(2);
    await mediaOf(first!);
    const created = await createPost({ scheduledAt: future(), media: [{ id: first, altText: 'A gradient' }, { id: second }] }, [sky, pro]);
    expect(created.status, created.text).toBe(201);
    const post = (await rest(`/posts/${created.json.postId}`)).json;
    expect(post.attachments.map((attachment: any) => [attachment.order, attachment.mediaId, attachment.altText])).toEqual([
      [0, first, 'A gradient'],
      [1, second, null],
    ]);
    expect(post.attachments[0].media).toMatchObject({ id: first, type: 'IMAGE', width: 60, height: 40, variantsStatus: 'ready' });
    expect(post.attachments[0].media.variants['1:1']).toMatchObject({ width: 40, height: 40 });
    expect(post.attachments[0].thumbnail.id).toBe(first);
    expect(post.schedules[0].attachmentMediaUrls).toEqual(post.attachments.map((attachment: any) => attachment.media.url));

    const calendar = await rest(`/schedules?startDate=${encodeURIComponent(new Date().toISOString())}&view=agenda`);
    const entry = calendar.json.schedules.find((schedule: any) => schedule.postId === created.json.postId);
    expect(entry.post).toMatchObject({ attachmentCount: 2, thumbnail: { url: post.attachments[0].media.variants['1:1'].url, type: 'IMAGE', width: 40, height: 40 } });
    // The single schedule shows its post as the calendar does.
    const one = await rest(`/schedules/${entry.id}?postId=${created.json.postId}`);
    expect(one.json.schedules[0].post).toEqual(entry.post);

    const [third] = await mediaIds(1);
    const patched = await rest(`/posts/${created.json.postId}`, { method: 'PATCH', body: { media: [{ id: third, altText: 'new' }, { id: first }] } });
    expect(patched.status, patched.text).toBe(200);
    const after = (await rest(`/posts/${created.json.postId}`)).json;
    expect(after.attachments.map((attachment: any) => attachment.mediaId)).toEqual([third, first]);
  });

  it('answers MEDIA_RULE_VIOLATED naming the platform and the rule, and creates nothing', async () => {
    const five = await mediaIds(5);
    const tooMany = await createPost({ media: five.map((id) => ({ id })) }, [sky]);
    expect(tooMany.status, tooMany.text).toBe(400);
    expect(tooMany.json).toMatchObject({ code: 'MEDIA_RULE_VIOLATED', message: 'rows[0].media: Too many images for Bluesky (Sky): 5, and it takes at most 4' });
    expect((await createPost({ media: five.map((id) => ({ id })) }, [pro])).status).toBe(201);

    const longAlt = await createPost({ media: [{ id: five[0], altText: 'é'.repeat(2001) }] }, [sky]);
    expect(longAlt.json).toMatchObject({ code: 'MEDIA_RULE_VIOLATED', message: 'rows[0].media[0].altText: The alt text of image 1 is too long for Bluesky (Sky): 2001 of 2000 characters (graphemes)' });

    const [webp] = await mediaIds(1, 'webp');
    const onLinkedIn = await createPost({ media: [{ id: webp }] }, [sky, pro]);
    expect(onLinkedIn.json).toMatchObject({ code: 'MEDIA_RULE_VIOLATED', message: expect.stringContaining('rows[0].media[0]: Image 1 is a WebP image; LinkedIn (Pro) takes JPEG, PNG and GIF images (image/webp)') });

    const unknown = await createPost({ media: [{ id: '00000000-0000-4000-8000-000000000000' }] }, [sky]);
    expect(unknown.status).toBe(404);
    expect(unknown.json.message).toContain('rows[0].media[0].id');
    const twice = await createPost({ media: [{ id: five[0] }, { id: five[0] }] }, [sky]);
    expect(twice.json.code).toBe('VALIDATION_ERROR');
    const [attached] = await sql<{ count: number }[]>`SELECT count(*)::int AS count FROM attachments WHERE media_id = ${five[0]!}`;
    expect(attached!.count).toBe(1);
  });

  it('media attached to a live schedule cannot be deleted; attached to a draft, it leaves the draft', async () => {
    const [live, drafted] = await mediaIds(2);
    const scheduled = await createPost({ scheduledAt: future(), media: [{ id: live }] }, [sky], 'SCHEDULED_TIME');
    expect(scheduled.status, scheduled.text).toBe(201);
    const [liveUpload] = await sql<{ uploadId: string }[]>`SELECT upload_id FROM media WHERE id = ${live!}`;
    const refused = await rest(`/uploads/${liveUpload!.uploadId}`, { method: 'DELETE', body: {} });
    expect(refused.status, refused.text).toBe(409);
    expect(refused.json).toMatchObject({ code: 'CONFLICT', message: expect.stringContaining(`post ${scheduled.json.postId}, which has a SCHEDULED schedule`) });

    const draft = await createPost({ media: [{ id: drafted }] }, [sky]);
    const [draftUpload] = await sql<{ uploadId: string }[]>`SELECT upload_id FROM media WHERE id = ${drafted!}`;
    expect((await rest(`/uploads/${draftUpload!.uploadId}`, { method: 'DELETE', body: {} })).status).toBe(200);
    expect((await rest(`/posts/${draft.json.postId}`)).json.attachments).toEqual([]);
  });

  it('a delete racing a draft going live waits for it, and then refuses: the live post keeps its image', async () => {
    const [image] = await mediaIds(1);
    const draft = await createPost({ scheduledAt: future(), media: [{ id: image }] }, [sky]);
    const [row] = await sql<{ uploadId: string }[]>`SELECT upload_id FROM media WHERE id = ${image!}`;
    let answer: Promise<Awaited<ReturnType<typeof rest>>> | undefined;
    let answered = false;
    // A transaction making the draft live, as updatePost's postAction does, still open while the delete comes.
    const answeredBeforeCommit = await sql.begin(async (tx) => {
      await tx`UPDATE schedules SET status = 'SCHEDULED' WHERE post_id = ${draft.json.postId}`;
      answer = rest(`/uploads/${row!.uploadId}`, { method: 'DELETE', body: {} });
      void answer.then(() => (answered = true));
      await waitingOnLocks(sql, { query: '%FOR SHARE OF s%', until: () => answered });
      // Read before the commit: once it is sent, the delete may answer before this test's process reads the commit's reply.
      return answered;
    });
    expect(answeredBeforeCommit).toBe(false);
    const refused = await answer!;
    expect(refused.status, refused.text).toBe(409);
    expect(refused.json.message).toContain(`post ${draft.json.postId}, which has a SCHEDULED schedule`);
    expect((await rest(`/posts/${draft.json.postId}`)).json.attachments.map((attachment: any) => attachment.mediaId)).toEqual([image]);
  });
});

describe('publishing images', () => {
  it('a post with two images reaches the test PDS with its blobs, alt text and aspect ratios', async () => {
    const account = await createAccount();
    const link = await rest('/integrations/connect', { method: 'POST', body: { platform: 'BLUESKY' } });
    const form = await fetch(link.json.redirectUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ handle: account.handle, appPassword: account.appPassword, serviceUrl: account.pdsUrl }),
    });
    const integrationId = (await form.text()).match(/<code>([0-9a-f-]{36})<\/code>/)![1]!;

    const wide = await upload(await photo(2400, 1600));
    const small = await upload(await photo(300, 500, 'png'), { fileType: 'image/png', fileName: 'small.png' });
    for (const done of [wide, small]) expect(done.status, done.text).toBe(200);
    // Published once the variants are made (a publish that finds them pending is retried 30 s later).
    for (const done of [wide, small]) expect(await mediaOf(done.json.mediaId)).toMatchObject({ variantsStatus: 'ready' });
    const created = await rest('/posts', {
      method: 'POST',
      body: {
        rows: [{ content: 'Two images', media: [{ id: wide.json.mediaId, altText: 'A wide gradient' }, { id: small.json.mediaId, altText: 'A tall one' }] }],
        shared: { selectedIntegrations: [integrationId] },
        postAction: 'PUBLISH_NOW',
      },
    });
    expect(created.status, created.text).toBe(201);
    const schedule = await settledScheduleOf(sql, created.json.postId);
    expect(schedule, schedule.failureReason ?? '').toMatchObject({ status: 'PUBLISHED' });

    const rkey = schedule.platformPostId!.split('/').pop()!;
    const { data } = await account.agent.com.atproto.repo.getRecord({ repo: account.did, collection: 'app.bsky.feed.post', rkey });
    const embed = (data.value as any).embed;
    expect(embed.$type).toBe('app.bsky.embed.images');
    expect(embed.images.map((image: any) => [image.alt, image.aspectRatio])).toEqual([
      ['A wide gradient', { width: 2000, height: 1333 }],
      ['A tall one', { width: 300, height: 500 }],
    ]);
    for (const [index, image] of embed.images.entries()) {
      const cid = image.image.ref.toString();
      const blob = await account.agent.com.atproto.sync.getBlob({ did: account.did, cid });
      const bytes = Buffer.from(blob.data);
      expect(bytes.length).toBeLessThanOrEqual(1_000_000);
      expect(bytes.length).toBe(image.image.size);
      const read = await sharp(bytes).metadata();
      expect([read.width, read.height, read.format], `image ${index}`).toEqual([image.aspectRatio.width, image.aspectRatio.height, 'jpeg']);
    }
  }, 60_000);
});

describe('POST /uploads/from-url', () => {
  it('refuses loopback and non-http URLs with 400, connecting nowhere and leaving nothing behind', async () => {
    let connections = 0;
    const listener = createServer((socket) => {
      connections++;
      socket.destroy();
    }).listen(0, '127.0.0.1');
    await once(listener, 'listening');
    const { port } = listener.address() as { port: number };
    try {
      const before = await sql`SELECT 1 FROM uploads WHERE organization_id = ${ws.workspaceId}`;
      const refusals = [
        [`http://127.0.0.1:${port}/a.png`, 'URL_NOT_ALLOWED'],
        [`http://[::1]:${port}/a.png`, 'URL_NOT_ALLOWED'],
        // Not an http(s) URL: refused by the input's schema before anything else.
        ['file:///etc/passwd', 'VALIDATION_ERROR'],
      ];
      for (const [url, code] of refusals) {
        const refused = await rest('/uploads/from-url', { method: 'POST', body: { url, scenarioId: 'post_attachments' } });
        expect(refused.status, url).toBe(400);
        expect(refused.json.code, url).toBe(code);
        expect(refused.json.message).toContain('url');
      }
      expect(connections).toBe(0);
      expect(await sql`SELECT 1 FROM uploads WHERE organization_id = ${ws.workspaceId}`).toHaveLength(before.length);
    } finally {
      listener.close();
    }
  });
});

describe('complete and delete at the same moment', () => {
  let single: TestService;
  let db: postgres.Sql;
  beforeAll(async () => {
    // One connection: queries queue for it in the order they are made, which lets the test order the two calls exactly.
    single = await startTestService({ databasePoolSize: 1 });
    db = postgres(single.databaseUrl, { max: 2, onnotice: () => {} });
  });
  afterAll(async () => {
    await db?.end();
    await single?.stop();
  });

  it('a delete that waited for complete\'s lock, and ran before its answer was read, makes complete answer 404, not 500', async () => {
    const workspace = await single.workspace({ plan: 'business' });
    const bytes = await photo(64, 48);
    const body = { scenarioId: 'post_attachments', fileName: 'a.jpg', fileType: 'image/jpeg', fileSize: bytes.length, checksum: sha256(bytes) };
    const started = await call(`${single.api}/uploads/initiate`, { method: 'POST', key: workspace.apiKey, body });
    expect((await put(started.json.signedUrl, bytes, started.json.requiredHeaders)).status).toBe(200);
    const { uploadId } = started.json;

    let completing: Promise<Awaited<ReturnType<typeof call>>> | undefined;
    let deleting: ReturnType<TestService['service']['core']['runAs']> | undefined;
    await db.begin(async (tx) => {
      // complete waits for this lock inside its transaction, on the service's one connection.
      await tx`SELECT 1 FROM uploads WHERE id = ${uploadId} FOR UPDATE`;
      completing = call(`${single.api}/uploads/complete`, { method: 'POST', key: workspace.apiKey, body: { uploadId, checksum: sha256(bytes) } });
      await waitingOnLocks(db, { query: '%FROM uploads%FOR UPDATE%' });
      // The delete queues for the connection now, before complete's answer is read after its commit.
      deleting = single.service.core.runAs(workspace, 'deleteUpload', { uploadId });
    });
    const [completed, deleted] = await Promise.all([completing!, deleting!]);
    expect(deleted.status).toBe(200);
    expect(completed.status, completed.text).toBe(404);
    expect(completed.json.code).toBe('NOT_FOUND');
  });
});

describe('where the signed URLs point (the origin the dashboard\'s CSP opens for its PUTs)', () => {
  const aws = (bucket: string, credentials?: { accessKeyId: string; secretAccessKey: string }) => ({
    bucket,
    region: 'eu-west-1',
    endpoint: undefined,
    credentials,
    publicUrl: 'https://cdn.example.com/media',
  });
  const signedOrigin = async (storage: Awaited<ReturnType<typeof openStorage>>) =>
    new URL(
      (await storage.presignPut({ key: 'a/b.png', contentType: 'image/png', size: 1, sha256Base64: sha256(Buffer.from('x')), signedAt: new Date(), expiresInSeconds: 60 })).url,
    ).origin;

  it('is the origin of the URLs the SDK signs: virtual-hosted on AWS, by path for a dotted bucket, read without credentials', async () => {
    const keys = { accessKeyId: 'AKIAEXAMPLE', secretAccessKey: 'example-secret' };
    for (const [bucket, origin] of [
      ['postwise-media', 'https://postwise-media.s3.eu-west-1.amazonaws.com'],
      ['media.example.com', 'https://s3.eu-west-1.amazonaws.com'],
    ] as const) {
      // No credentials: the AWS default chain is not asked at start (it might be an instance's metadata service).
      const anonymous = await openStorage({ s3: aws(bucket), dataDir: '/nonexistent' });
      expect(anonymous.origins).toEqual({ upload: origin, public: 'https://cdn.example.com' });
      await anonymous.close();
      const signing = await openStorage({ s3: aws(bucket, keys), dataDir: '/nonexistent' });
      expect(await signedOrigin(signing)).toBe(origin);
      await signing.close();
    }
  });

  it('is the embedded store\'s own origin when it runs', async () => {
    expect(await signedOrigin(service.service.core.app.storage)).toBe(service.service.core.app.storage.origins.upload);
  });
});
