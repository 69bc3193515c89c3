import { once } from 'node:events';
import { readdir } from 'node:fs/promises';
import { createServer as createHttpServer, type ServerResponse } from 'node:http';
import { connect, createServer as createTcpServer, type AddressInfo } from 'node:net';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { operations } from '../operations/index.js';
import { MAX_UPLOAD_BYTES } from '../operations/uploads/upload.js';
import { loadConfig } from '../src/process/config.js';
import { definePlan, setWorkspacePlan } from '../src/admin/plans.js';
import { photo } from './support/images.js';
import { call, eventually, startTestService, type TestService, type Workspace } from './support/service.js';

/**
 * POST /uploads/from-url end to end: the service (API and worker) with MEDIA_FETCH_ALLOW_HOSTS naming one image
 * server on loopback, the embedded S3 store, and a "trap" listener on another loopback port that counts every
 * connection it gets (the guard must send none there, even by a redirect from the allowed server).
 */

let service: TestService;
let ws: Workspace;
let sql: postgres.Sql;
let images: ReturnType<typeof createHttpServer>;
let trap: ReturnType<typeof createTcpServer>;
let origin: string;
let trapPort: number;
/**
 * A port nothing listens on, allowed too, for an unreachable host: port 1 (tcpmux), which no test binds. A port taken
 * and let go was taken again, once, by a server of a test file running beside this one.
 */
const closedPort = 1;
let trapConnections = 0;
/** The image server's requests, by path. */
const requests = new Map<string, number>();

let jpeg: Buffer;
let png: Buffer;
/** Small enough for the small storage allowance. */
let tiny: Buffer;
/** The endless body's bytes written, and a promise settled when its connection closes (it never ends by itself). */
const endless = { written: 0, closed: undefined as Promise<unknown> | undefined };
/** Whether the client closed the answer that declared a gigabyte before it was all sent. */
let hugeDeclaredClosed: Promise<unknown> | undefined;

/** An endless body that starts as a PNG, written only as fast as the client reads it. */
function serveEndless(response: ServerResponse) {
  response.writeHead(200, { 'content-type': 'image/png' });
  const chunk = Buffer.alloc(64 * 1024, 7);
  png.copy(chunk, 0, 0, 64);
  endless.closed = pipeline(
    Readable.from(
      (function* () {
        for (;;) {
          endless.written += chunk.length;
          yield chunk;
        }
      })(),
    ),
    response,
  ).catch((error: unknown) => error);
}

beforeAll(async () => {
  [jpeg, png, tiny] = await Promise.all([photo(640, 480), photo(320, 400, 'png'), photo(16, 16)]);
  trap = createTcpServer((socket) => {
    trapConnections++;
    socket.destroy();
  }).listen(0, '127.0.0.1');
  images = createHttpServer((request, response) => {
    const path = new URL(request.url!, 'http://x').pathname;
    requests.set(path, (requests.get(path) ?? 0) + 1);
    if (path === '/photo.jpg' || path === '/b%E0d%zzname.jpg') return void response.writeHead(200, { 'content-type': 'image/jpeg' }).end(jpeg);
    if (path === '/photo.png') return void response.writeHead(200, { 'content-type': 'application/octet-stream' }).end(png);
    if (path === '/tiny.jpg') return void response.writeHead(200, { 'content-type': 'image/jpeg' }).end(tiny);
    if (path === '/page.html') return void response.writeHead(200, { 'content-type': 'image/png' }).end('<!doctype html><title>Not an image</title>');
    if (path === '/to-trap.png') return void response.writeHead(302, { location: `http://127.0.0.1:${trapPort}/a.png` }).end();
    if (path === '/to-file.png') return void response.writeHead(302, { location: 'file:///etc/passwd' }).end();
    if (path === '/round.png') return void response.writeHead(302, { location: '/round.png' }).end();
    if (path === '/endless.png') return serveEndless(response);
    if (path === '/huge-declared.png') {
      response.writeHead(200, { 'content-type': 'image/png', 'content-length': String(1_000_000_000) });
      response.write(png.subarray(0, 10));
      hugeDeclaredClosed = once(response, 'close');
      return;
    }
    response.writeHead(404, { 'content-type': 'text/plain' }).end('no such image');
  }).listen(0, '127.0.0.1');
  await Promise.all([once(trap, 'listening'), once(images, 'listening')]);
  trapPort = (trap.address() as AddressInfo).port;
  origin = `http://127.0.0.1:${(images.address() as AddressInfo).port}`;
  // Through the variable's own parsing: the image server's host and port and the closed port, nothing else on loopback.
  const { mediaFetchAllowHosts } = loadConfig({ MEDIA_FETCH_ALLOW_HOSTS: `${new URL(origin).host}, 127.0.0.1:${closedPort}` });
  service = await startTestService({ mediaFetchAllowHosts }, { api: true, worker: true });
  ws = await service.workspace({ plan: 'business' });
  sql = postgres(service.databaseUrl, { max: 2, onnotice: () => {}, transform: postgres.camel });
});
afterAll(async () => {
  await sql?.end();
  await service?.stop();
  images?.closeAllConnections();
  images?.close();
  trap?.close();
});

const importUrl = (url: string, options: { key?: string; headers?: Record<string, string>; body?: Record<string, unknown> } = {}) =>
  call(`${service.api}/uploads/from-url`, {
    method: 'POST',
    key: options.key ?? ws.apiKey,
    headers: options.headers,
    body: { url, scenarioId: 'post_attachments', ...options.body },
  });

/** The files the embedded store holds under the workspace's uploads (uploads and their variants). */
async function storedFiles(workspaceId: string): Promise<string[]> {
  const directory = join(service.service.core.app.config.dataDir, 's3');
  const files = await readdir(directory, { recursive: true, withFileTypes: true });
  // s3rver keeps each object as `NAME._S3rver_object` beside its metadata.
  return files
    .filter((file) => file.name.endsWith('._S3rver_object') && join(file.parentPath, file.name).includes(`/uploads/${workspaceId}/`))
    .map((file) => file.name);
}

/** What the workspace has: upload rows, media rows and stored files. */
async function holdings(workspaceId: string) {
  const [rows] = await sql<{ uploads: number; media: number }[]>`
    SELECT (SELECT count(*)::int FROM uploads WHERE organization_id = ${workspaceId}) AS uploads,
           (SELECT count(*)::int FROM media WHERE organization_id = ${workspaceId}) AS media`;
  return { ...rows!, files: (await storedFiles(workspaceId)).length };
}

async function mediaOfUpload(uploadId: string) {
  return eventually(
    async () => (await sql<{ id: string; variantsStatus: string; mimeType: string; size: string; width: number; height: number }[]>`
      SELECT id, variants_status, mime_type, size, width, height FROM media WHERE upload_id = ${uploadId}`)[0],
    (media) => media?.variantsStatus !== 'pending',
    20_000,
  );
}

describe('an image from an allowed server', () => {
  it('is stored as fetched, becomes media with its real type and size and ready variants, attaches to a post and deletes', async () => {
    const done = await importUrl(`${origin}/photo.jpg`);
    expect(done.status, done.text).toBe(200);
    expect(Object.keys(done.json).sort()).toEqual(['publicUrl', 'uploadId']);
    expect(operations.find((operation) => operation.id === 'importUploadFromUrl')!.output.safeParse(done.json).success).toBe(true);
    const { uploadId, publicUrl } = done.json;

    const served = await fetch(publicUrl);
    expect(served.headers.get('content-type')).toBe('image/jpeg');
    expect(Buffer.from(await served.arrayBuffer()).equals(jpeg)).toBe(true);
    const [upload] = await sql<{ status: string; size: string; fileName: string }[]>`SELECT status, size, file_name FROM uploads WHERE id = ${uploadId}`;
    expect(upload).toEqual({ status: 'completed', size: String(jpeg.length), fileName: 'photo.jpg' });
    const media = await mediaOfUpload(uploadId);
    expect(media).toMatchObject({ mimeType: 'image/jpeg', size: String(jpeg.length), width: 640, height: 480, variantsStatus: 'ready' });

    const sky = (await ws.admin('createIntegration', { platform: 'BLUESKY', name: 'Imported' })).id;
    const post = await call(`${service.api}/posts`, {
      method: 'POST',
      key: ws.apiKey,
      body: { rows: [{ content: 'imported', media: [{ id: media!.id, altText: 'From a URL' }] }], shared: { selectedIntegrations: [sky] }, postAction: 'DRAFT' },
    });
    expect(post.status, post.text).toBe(201);
    const attachments = (await call(`${service.api}/posts/${post.json.postId}`, { key: ws.apiKey })).json.attachments;
    expect(attachments).toMatchObject([{ mediaId: media!.id, altText: 'From a URL', media: { width: 640, height: 480, variantsStatus: 'ready' } }]);

    const files = await storedFiles(ws.workspaceId);
    expect(files.length).toBe(6); // the upload and its five variants
    const deleted = await call(`${service.api}/uploads/${uploadId}`, { method: 'DELETE', key: ws.apiKey, body: {} });
    expect(deleted.status, deleted.text).toBe(200);
    expect(deleted.json).toEqual({ success: true });
    expect((await fetch(publicUrl)).status).toBe(404);
    expect(await holdings(ws.workspaceId)).toEqual({ uploads: 0, media: 0, files: 0 });
    expect((await call(`${service.api}/posts/${post.json.postId}`, { key: ws.apiKey })).json.attachments).toEqual([]);
  });

  it('a file name that is not valid percent-encoding still imports (named from what can be read)', async () => {
    const done = await importUrl(`${origin}/b%E0d%zzname.jpg`);
    expect(done.status, done.text).toBe(200);
    const [upload] = await sql<{ fileName: string }[]>`SELECT file_name FROM uploads WHERE id = ${done.json.uploadId}`;
    expect(upload!.fileName).toBe('b-E0d-zzname.jpg');
    expect(Buffer.from(await (await fetch(done.json.publicUrl)).arrayBuffer()).equals(jpeg)).toBe(true);
  });
});

describe('what it refuses, leaving no upload, no media and no object', () => {
  let empty: Workspace;
  beforeAll(async () => {
    empty = await service.workspace({ plan: 'business' });
  });

  /** For an oversized body: the server saw its connection closed, after about the cap (the body never ends by itself). */
  async function cutOffEarly() {
    expect(await endless.closed).toMatchObject({ code: 'ERR_STREAM_PREMATURE_CLOSE' });
    // Read to just past the cap (plus what the sockets' buffers held), not on and on.
    expect(endless.written).toBeGreaterThan(MAX_UPLOAD_BYTES);
    expect(endless.written).toBeLessThan(2 * MAX_UPLOAD_BYTES);
  }
  async function refusedBeforeTheBody() {
    await hugeDeclaredClosed; // the gigabyte declared is never sent; this settles only when the client closes
  }

  const refusals: [name: string, path: () => string, code: string, reason: string, after?: () => Promise<void>][] = [
    ['a loopback address not on the allow-list', () => `http://127.0.0.1:${trapPort}/a.png`, 'URL_NOT_ALLOWED', 'is not a public internet address'],
    ['a redirect from the allowed server to a loopback port not allowed', () => `${origin}/to-trap.png`, 'URL_NOT_ALLOWED', 'is not a public internet address'],
    ['a redirect from the allowed server to file:', () => `${origin}/to-file.png`, 'URL_NOT_ALLOWED', 'Only http and https URLs can be fetched, not file'],
    ['more than 3 redirects (the allowed server redirecting to itself)', () => `${origin}/round.png`, 'URL_NOT_ALLOWED', 'redirects more than 3 times'],
    ['a URL with a user name and password (on the allowed server)', () => origin.replace('//', '//user:secret@') + '/photo.jpg', 'URL_NOT_ALLOWED', 'must not carry a user name or password'],
    ['a body that is not an image (HTML served as image/png)', () => `${origin}/page.html`, 'VALIDATION_ERROR', 'did not send a JPEG, PNG, WebP or GIF image'],
    ['a 404 upstream', () => `${origin}/missing.png`, 'VALIDATION_ERROR', 'answered HTTP 404'],
    ['an allowed host where nothing listens', () => `http://127.0.0.1:${closedPort}/a.png`, 'VALIDATION_ERROR', 'could not be fetched (ECONNREFUSED)'],
    ['a Content-Length over the maximum', () => `${origin}/huge-declared.png`, 'VALIDATION_ERROR', `larger than ${MAX_UPLOAD_BYTES} bytes`, refusedBeforeTheBody],
    ['an endless body, cut off at the maximum', () => `${origin}/endless.png`, 'VALIDATION_ERROR', `larger than ${MAX_UPLOAD_BYTES} bytes`, cutOffEarly],
  ];
  for (const [name, path, code, reason, after] of refusals) {
    it(`${name} → 400 ${code}`, async () => {
      const url = path();
      const refused = await importUrl(url, { key: empty.apiKey });
      expect(refused.status, refused.text).toBe(400);
      expect(refused.json).toEqual({ code, message: expect.stringMatching(/^url: /) });
      expect(refused.json.message).toContain(reason);
      // The host is named, never the whole URL (its path or query may carry a token).
      expect(refused.json.message).not.toContain(url);
      expect(refused.json.message).not.toContain('secret');
      await after?.();
      expect(trapConnections).toBe(0);
      expect(await holdings(empty.workspaceId)).toEqual({ uploads: 0, media: 0, files: 0 });
    });
  }

  it('a url that is not http(s), or too long, is refused by the input schema → 400 VALIDATION_ERROR', async () => {
    for (const url of ['file:///etc/passwd', `ftp://${new URL(origin).host}/photo.jpg`, `${origin}/${'a'.repeat(2048)}.jpg`]) {
      const refused = await importUrl(url, { key: empty.apiKey });
      expect(refused.status, url).toBe(400);
      expect(refused.json).toMatchObject({ code: 'VALIDATION_ERROR', message: expect.stringContaining('url') });
    }
    expect(requests.get(`/${'a'.repeat(2048)}.jpg`)).toBeUndefined();
    expect(await holdings(empty.workspaceId)).toEqual({ uploads: 0, media: 0, files: 0 });
  });

  it('(the trap does count connections)', async () => {
    const before = trapConnections;
    const socket = connect(trapPort, '127.0.0.1');
    await once(socket, 'close');
    await eventually(async () => trapConnections, (count) => count > before);
    expect(trapConnections).toBe(before + 1);
  });

  it('over the storage allowance → 403 STORAGE_QUOTA_EXCEEDED naming the plan, nothing stored', async () => {
    const plan = `from-url-${Math.random().toString(36).slice(2, 8)}`;
    await definePlan(service.service.core.db, { name: plan, rateLimitPerMinute: 1000, storageBytes: jpeg.length - 1 });
    const small = await service.workspace();
    await setWorkspacePlan(service.service.core.db, small.workspaceId, plan);
    const refused = await importUrl(`${origin}/photo.jpg`, { key: small.apiKey });
    expect(refused.status, refused.text).toBe(403);
    expect(refused.json.code).toBe('STORAGE_QUOTA_EXCEEDED');
    expect(refused.json.message).toContain(`The ${plan} plan allows ${jpeg.length - 1} bytes`);
    expect(await holdings(small.workspaceId)).toEqual({ uploads: 0, media: 0, files: 0 });
    // An image that fits is taken.
    const fits = await importUrl(`${origin}/tiny.jpg`, { key: small.apiKey });
    expect(tiny.length).toBeLessThan(jpeg.length - 1);
    expect(fits.status, fits.text).toBe(200);
    expect(await holdings(small.workspaceId)).toMatchObject({ uploads: 1, media: 1 });
  });
});

describe('imports at once against a small allowance', () => {
  it('take only what fits; the refused ones leave no object behind', async () => {
    const plan = `from-url-race-${Math.random().toString(36).slice(2, 8)}`;
    await definePlan(service.service.core.db, { name: plan, rateLimitPerMinute: 1000, storageBytes: 2 * jpeg.length });
    const small = await service.workspace();
    await setWorkspacePlan(service.service.core.db, small.workspaceId, plan);
    const answers = await Promise.all(Array.from({ length: 6 }, () => importUrl(`${origin}/photo.jpg`, { key: small.apiKey })));
    expect(answers.map((answer) => answer.status).sort()).toEqual([200, 200, 403, 403, 403, 403]);
    const held = await holdings(small.workspaceId);
    expect(held.uploads).toBe(2);
    expect(held.media).toBe(2);
    // The two uploads (and whatever variants the worker has made of them so far), nothing of the refused four.
    const files = await storedFiles(small.workspaceId);
    expect(files.filter((name) => name === 'photo.jpg._S3rver_object')).toHaveLength(2);
  });
});

describe('Idempotency-Key', () => {
  it('the same key and body replay the first answer; another body with the key is refused', async () => {
    const keyed = await service.workspace({ plan: 'business' });
    const headers = { 'idempotency-key': 'import-once' };
    const first = await importUrl(`${origin}/photo.jpg`, { key: keyed.apiKey, headers });
    const fetched = requests.get('/photo.jpg');
    const again = await importUrl(`${origin}/photo.jpg`, { key: keyed.apiKey, headers });
    expect(first.status, first.text).toBe(200);
    expect(again.status).toBe(200);
    expect(again.json).toEqual(first.json);
    expect(requests.get('/photo.jpg')).toBe(fetched); // the replay fetched nothing
    const reused = await importUrl(`${origin}/photo.png`, { key: keyed.apiKey, headers });
    expect(reused.status, reused.text).toBe(422);
    expect(reused.json.code).toBe('IDEMPOTENCY_KEY_REUSED');
    expect(await holdings(keyed.workspaceId)).toMatchObject({ uploads: 1, media: 1 });
  });

  it('a refused import keeps no answer under its key: the same key may try again', async () => {
    const keyed = await service.workspace({ plan: 'business' });
    const headers = { 'idempotency-key': 'import-retry' };
    expect((await importUrl(`${origin}/missing.png`, { key: keyed.apiKey, headers })).json.code).toBe('VALIDATION_ERROR');
    expect((await importUrl(`${origin}/missing.png`, { key: keyed.apiKey, headers })).json.code).toBe('VALIDATION_ERROR');
    expect(await holdings(keyed.workspaceId)).toEqual({ uploads: 0, media: 0, files: 0 });
  });
});

describe('over MCP', () => {
  it('importUploadFromUrl answers the same, and its refusals are errors with the code', async () => {
    const mcp = new Client({ name: 'test', version: '1.0.0' });
    await mcp.connect(new StreamableHTTPClientTransport(new URL(`${service.base}/mcp`), { requestInit: { headers: { 'x-api-key': ws.apiKey } } }));
    try {
      const done: any = await mcp.callTool({ name: 'importUploadFromUrl', arguments: { url: `${origin}/photo.png`, scenarioId: 'post_attachments' } });
      expect(done.isError, JSON.stringify(done)).toBeFalsy();
      expect(Object.keys(done.structuredContent).sort()).toEqual(['publicUrl', 'uploadId']);
      expect(Buffer.from(await (await fetch(done.structuredContent.publicUrl)).arrayBuffer()).equals(png)).toBe(true);
      expect(await mediaOfUpload(done.structuredContent.uploadId)).toMatchObject({ mimeType: 'image/png', width: 320, height: 400, variantsStatus: 'ready' });

      const keyed = { url: `${origin}/photo.jpg`, scenarioId: 'post_attachments', idempotencyKey: 'mcp-import' };
      const first: any = await mcp.callTool({ name: 'importUploadFromUrl', arguments: keyed });
      const again: any = await mcp.callTool({ name: 'importUploadFromUrl', arguments: keyed });
      expect(again.structuredContent).toEqual(first.structuredContent);

      const before = trapConnections;
      for (const [url, code] of [
        [`${origin}/to-trap.png`, 'URL_NOT_ALLOWED'],
        [`${origin}/page.html`, 'VALIDATION_ERROR'],
      ]) {
        const refused: any = await mcp.callTool({ name: 'importUploadFromUrl', arguments: { url, scenarioId: 'post_attachments' } });
        expect(refused.isError, url).toBe(true);
        expect(JSON.parse(refused.content[0].text).code, url).toBe(code);
      }
      expect(trapConnections).toBe(before);
    } finally {
      await mcp.close();
    }
  });
});
