import { createHash, randomBytes } from 'node:crypto';
import { mkdtemp, readdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  AbortMultipartUploadCommand,
  CompleteMultipartUploadCommand,
  CreateMultipartUploadCommand,
  GetObjectCommand,
  ListPartsCommand,
  S3Client,
  S3ServiceException,
  UploadPartCommand,
} from '@aws-sdk/client-s3';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmbeddedS3 } from '../src/storage/embedded.js';
import { removeDataDir } from './support/processes.js';

/**
 * The embedded store's multipart uploads (src/storage/embedded-multipart.ts), through the AWS SDK and presigned part
 * URLs as a browser sends them: each part checked against its signed SHA-256 and kept whole or not at all, the parts
 * listed (resuming), the upload aborted, and completion checked as S3 checks it, with S3's ETag and composite checksum.
 */
let dataDir: string;
let store: Awaited<ReturnType<typeof startEmbeddedS3>>;
let s3: S3Client;
const Bucket = 'postwise';
const MiB = 1024 * 1024;

beforeAll(async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'postwise-multipart-'));
  store = await startEmbeddedS3(dataDir);
  s3 = new S3Client({
    region: store.config.region,
    endpoint: store.config.endpoint,
    forcePathStyle: true,
    credentials: store.config.credentials,
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
  });
});

afterAll(async () => {
  s3?.destroy();
  await store?.stop();
  if (dataDir) await removeDataDir(dataDir);
});

const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('base64');
const begin = async (Key: string) => (await s3.send(new CreateMultipartUploadCommand({ Bucket, Key, ChecksumAlgorithm: 'SHA256', ContentType: 'video/mp4' }))).UploadId!;

/** A part PUT to its presigned URL, as a browser sends it: its SHA-256 a signed header. */
async function putPart(Key: string, UploadId: string, PartNumber: number, bytes: Buffer, claimed = sha256(bytes)) {
  const url = await getSignedUrl(s3, new UploadPartCommand({ Bucket, Key, UploadId, PartNumber, ContentLength: bytes.length, ChecksumSHA256: claimed }), {
    expiresIn: 600,
    signableHeaders: new Set(['content-length']),
    unhoistableHeaders: new Set(['x-amz-checksum-sha256']),
  });
  return fetch(url, { method: 'PUT', body: new Uint8Array(bytes), headers: { 'x-amz-checksum-sha256': claimed } });
}

const codeOf = async (promise: Promise<unknown>) => promise.then(() => 'ok', (error: unknown) => (error instanceof S3ServiceException ? error.name : String(error)));

describe('a multipart upload on the embedded store', () => {
  it('takes parts checked against their SHA-256, lists them to resume, and completes as S3 does', async () => {
    const Key = 'uploads/video.mp4';
    const UploadId = await begin(Key);
    const parts = [randomBytes(5 * MiB), randomBytes(5 * MiB), randomBytes(MiB)];
    const first = await putPart(Key, UploadId, 1, parts[0]!);
    expect(first.status).toBe(200);
    // A part whose bytes are not what its checksum says is refused, and nothing of it kept.
    const wrong = await putPart(Key, UploadId, 2, parts[1]!, sha256(parts[0]!));
    expect(wrong.status).toBe(400);
    expect(await wrong.text()).toContain('<Code>BadDigest</Code>');
    // Resuming: the store says which parts arrived.
    const listed = await s3.send(new ListPartsCommand({ Bucket, Key, UploadId }));
    expect(listed.Parts?.map((part) => [part.PartNumber, part.Size, part.ChecksumSHA256])).toEqual([[1, 5 * MiB, sha256(parts[0]!)]]);
    expect((await putPart(Key, UploadId, 2, parts[1]!)).status).toBe(200);
    expect((await putPart(Key, UploadId, 3, parts[2]!)).status).toBe(200);
    const all = (await s3.send(new ListPartsCommand({ Bucket, Key, UploadId }))).Parts!;
    expect(all).toHaveLength(3);

    const done = await s3.send(
      new CompleteMultipartUploadCommand({
        Bucket,
        Key,
        UploadId,
        MultipartUpload: { Parts: all.map(({ PartNumber, ETag, ChecksumSHA256 }) => ({ PartNumber, ETag, ChecksumSHA256 })) },
      }),
    );
    const md5s = Buffer.concat(parts.map((part) => createHash('md5').update(part).digest()));
    expect(done.ETag).toBe(`"${createHash('md5').update(md5s).digest('hex')}-3"`);
    const shas = Buffer.concat(parts.map((part) => createHash('sha256').update(part).digest()));
    expect(done.ChecksumSHA256).toBe(`${createHash('sha256').update(shas).digest('base64')}-3`);
    const object = await s3.send(new GetObjectCommand({ Bucket, Key }));
    const body = Buffer.from(await object.Body!.transformToByteArray());
    expect(sha256(body)).toBe(sha256(Buffer.concat(parts)));
    // Completed: the upload is gone.
    expect(await codeOf(s3.send(new ListPartsCommand({ Bucket, Key, UploadId })))).toBe('NoSuchUpload');
  });

  it('completes only what S3 would: parts in order, each as sent, none but the last under 5 MiB, none missing (no crash)', async () => {
    const Key = 'uploads/checked.mp4';
    const UploadId = await begin(Key);
    const small = randomBytes(MiB);
    const big = randomBytes(5 * MiB);
    expect((await putPart(Key, UploadId, 1, small)).status).toBe(200);
    expect((await putPart(Key, UploadId, 2, big)).status).toBe(200);
    const parts = (await s3.send(new ListPartsCommand({ Bucket, Key, UploadId }))).Parts!.map(({ PartNumber, ETag, ChecksumSHA256 }) => ({ PartNumber, ETag, ChecksumSHA256 }));
    const complete = (Parts: typeof parts) => codeOf(s3.send(new CompleteMultipartUploadCommand({ Bucket, Key, UploadId, MultipartUpload: { Parts } })));
    expect(await complete([parts[1]!, parts[0]!])).toBe('InvalidPartOrder');
    expect(await complete([parts[0]!, parts[1]!])).toBe('EntityTooSmall');
    expect(await complete([{ ...parts[0]!, ETag: '"0000"' }])).toBe('InvalidPart');
    expect(await complete([{ ...parts[0]!, ChecksumSHA256: sha256(big) }])).toBe('InvalidPart');
    expect(await complete([parts[0]!, { PartNumber: 7, ETag: '"abc"', ChecksumSHA256: sha256(big) }])).toBe('InvalidPart');
    // A bad part number, an unknown upload.
    expect((await putPart(Key, UploadId, 10_001, small)).status).toBe(400);
    expect((await putPart(Key, 'deadbeefdeadbeefdeadbeefdeadbeef', 1, small)).status).toBe(404);
    // Still whole after all that: the small part alone completes (the last part may be small).
    expect(await complete([parts[0]!])).toBe('ok');
  });

  it('is aborted with its parts removed from the disk; a part dropped mid-way leaves the one before it', async () => {
    const Key = 'uploads/abandoned.mp4';
    const UploadId = await begin(Key);
    const kept = randomBytes(5 * MiB);
    expect((await putPart(Key, UploadId, 1, kept)).status).toBe(200);
    // The same part again, cut off by the client half-way: the first one stays, whole.
    const url = await getSignedUrl(s3, new UploadPartCommand({ Bucket, Key, UploadId, PartNumber: 1, ContentLength: 5 * MiB, ChecksumSHA256: sha256(kept) }), {
      expiresIn: 600,
      signableHeaders: new Set(['content-length']),
      unhoistableHeaders: new Set(['x-amz-checksum-sha256']),
    });
    const controller = new AbortController();
    const half = new ReadableStream<Uint8Array>({
      start(stream) {
        stream.enqueue(new Uint8Array(kept.subarray(0, 2 * MiB)));
        setTimeout(() => controller.abort(), 50);
      },
    });
    await fetch(url, { method: 'PUT', body: half, duplex: 'half', headers: { 'x-amz-checksum-sha256': sha256(kept), 'content-length': String(5 * MiB) }, signal: controller.signal } as RequestInit).catch(() => null);
    const after = await s3.send(new ListPartsCommand({ Bucket, Key, UploadId }));
    expect(after.Parts?.map((part) => [part.Size, part.ChecksumSHA256])).toEqual([[5 * MiB, sha256(kept)]]);

    await s3.send(new AbortMultipartUploadCommand({ Bucket, Key, UploadId }));
    expect(await codeOf(s3.send(new ListPartsCommand({ Bucket, Key, UploadId })))).toBe('NoSuchUpload');
    const uploads = join(dataDir, 's3', Bucket);
    const left = (await readdir(uploads, { recursive: true })).filter((name) => String(name).includes(UploadId));
    expect(left).toEqual([]);
  });
});
