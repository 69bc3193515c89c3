import { createHash, randomBytes } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import authentication from '@20minutes/s3rver/lib/middleware/authentication.js';
import S3Error from '@20minutes/s3rver/lib/models/error.js';
import S3Object from '@20minutes/s3rver/lib/models/object.js';
import { aws4SignatureBodyParser } from '@20minutes/s3rver/lib/signature/v4.js';
import { xmlBodyParser } from '@20minutes/s3rver/lib/utils.js';
import type { S3rverContext } from '@20minutes/s3rver';

/**
 * The multipart operations as S3 does them, for the embedded store: @20minutes/s3rver creates an upload and takes its
 * parts and completion, but checks nothing (no checksum, part number, ETag or minimum size; a completion naming a part
 * never sent crashes the process), and has no ListParts and no AbortMultipartUpload (bench/.tmp/multipart-research.md,
 * docs/media.md). This Koa middleware, placed before s3rver's router, answers every request that names an `uploadId`:
 * UploadPart (verified against its signed `x-amz-checksum-sha256`, written whole or not at all), ListParts, Abort and
 * Complete (S3's checks, its `md5-N` ETag and composite checksum). It reuses s3rver's signature check, errors and store.
 */

/** S3's smallest part, but the last. */
export const MIN_PART_BYTES = 5 * 1024 * 1024;
const NO_SUCH_UPLOAD = 'The specified upload does not exist. The upload ID may be invalid, or the upload may have been aborted or completed.';

interface StoredPart {
  number: number;
  size: number;
  /** MD5 of the part, hex: its ETag. */
  etag: string;
  /** SHA-256 of the part, base64. */
  sha256: string;
  lastModified: string;
}

/** The upload's folder in s3rver's store (where it keeps its `key` and `metadata`), when it exists for that key. */
async function openUpload(ctx: S3rverContext, bucket: string, key: string, uploadId: string) {
  if (!/^[0-9a-f]{32}$/.test(uploadId)) throw new S3Error('NoSuchUpload', NO_SUCH_UPLOAD, { UploadId: uploadId });
  const dir = join(ctx.store.getResourcePath(bucket, undefined, 'uploads'), uploadId);
  const storedKey = await readFile(join(dir, 'key'), 'utf8').catch(() => null);
  if (storedKey !== key) throw new S3Error('NoSuchUpload', NO_SUCH_UPLOAD, { UploadId: uploadId });
  const headers = JSON.parse(await readFile(join(dir, 'metadata'), 'utf8')) as Record<string, string>;
  return { dir, sha256: headers['x-amz-checksum-algorithm']?.toUpperCase() === 'SHA256', headers };
}

async function partsOf(dir: string): Promise<StoredPart[]> {
  const names = (await readdir(dir)).filter((name) => /^\d+\.json$/.test(name));
  const parts = await Promise.all(names.map(async (name) => JSON.parse(await readFile(join(dir, name), 'utf8')) as StoredPart));
  return parts.sort((a, b) => a.number - b.number);
}

const digestOf = (values: Buffer[], algorithm: 'md5' | 'sha256') => createHash(algorithm).update(Buffer.concat(values)).digest();

export function multipartUploads() {
  return async function multipart(ctx: S3rverContext, next: () => Promise<void>): Promise<void> {
    const path = /^\/([^/]+)\/(.+)$/.exec(ctx.path);
    const uploadId = ctx.query.uploadId;
    if (!path || typeof uploadId !== 'string' || 'x-amz-copy-source' in ctx.headers || !['GET', 'PUT', 'POST', 'DELETE'].includes(ctx.method)) return next();
    const bucket = decodeURIComponent(path[1]!);
    const key = decodeURIComponent(path[2]!);
    ctx.params = { ...ctx.params, bucket, key };
    // The request's signature (header or presigned), as s3rver's router would check it.
    await authentication()(ctx, async () => {});
    if (!ctx.state.account) throw new S3Error('AccessDenied', 'Access Denied');
    const upload = await openUpload(ctx, bucket, key, uploadId);

    if (ctx.method === 'PUT') {
      const number = Number(ctx.query.partNumber);
      if (!Number.isInteger(number) || number < 1 || number > 10_000) {
        throw new S3Error('InvalidArgument', 'Part number must be an integer between 1 and 10000, inclusive', { ArgumentName: 'partNumber', ArgumentValue: String(ctx.query.partNumber) });
      }
      const claimed = ctx.get('x-amz-checksum-sha256');
      if (upload.sha256 && !claimed) throw new S3Error('InvalidRequest', 'Checksum Type mismatch occurred, expected checksum Type: sha256, actual checksum Type: null');
      aws4SignatureBodyParser(ctx);
      // Written aside, then moved into place once whole and verified: a part cut off, or refused, leaves the old one.
      const aside = join(upload.dir, `.${number}.${randomBytes(6).toString('hex')}`);
      const sha256 = createHash('sha256');
      const md5 = createHash('md5');
      let size = 0;
      try {
        const counting = new Transform({
          transform(chunk: Buffer, _encoding, done) {
            sha256.update(chunk);
            md5.update(chunk);
            size += chunk.length;
            done(null, chunk);
          },
        });
        await pipeline(ctx.request.body as Readable, counting, createWriteStream(aside));
        const declared = Number(ctx.get('x-amz-decoded-content-length') || ctx.get('content-length'));
        if (Number.isFinite(declared) && declared !== size) throw new S3Error('IncompleteBody', 'You did not provide the number of bytes specified by the Content-Length HTTP header');
        const part: StoredPart = { number, size, etag: md5.digest('hex'), sha256: sha256.digest('base64'), lastModified: new Date().toISOString() };
        if (claimed && claimed !== part.sha256) throw new S3Error('BadDigest', 'The SHA256 you specified did not match the calculated checksum.');
        await rename(aside, join(upload.dir, String(number)));
        await writeFile(join(upload.dir, `${number}.json`), JSON.stringify(part));
        ctx.set('ETag', JSON.stringify(part.etag));
        if (upload.sha256) ctx.set('x-amz-checksum-sha256', part.sha256);
        ctx.body = '';
      } finally {
        await rm(aside, { force: true });
      }
      return;
    }

    if (ctx.method === 'DELETE') {
      await rm(upload.dir, { recursive: true, force: true });
      ctx.status = 204;
      return;
    }

    if (ctx.method === 'GET') {
      // At most 10,000 parts, answered at once (S3 pages by 1,000; the SDK follows IsTruncated, false here).
      ctx.body = {
        ListPartsResult: {
          '@': { xmlns: 'http://s3.amazonaws.com/doc/2006-03-01/' },
          Bucket: bucket,
          Key: key,
          UploadId: uploadId,
          IsTruncated: false,
          ...(upload.sha256 && { ChecksumAlgorithm: 'SHA256' }),
          Part: (await partsOf(upload.dir)).map((part) => ({
            PartNumber: part.number,
            LastModified: part.lastModified,
            ETag: JSON.stringify(part.etag),
            Size: part.size,
            ...(upload.sha256 && { ChecksumSHA256: part.sha256 }),
          })),
        },
      };
      return;
    }

    // POST: CompleteMultipartUpload, with S3's checks.
    await xmlBodyParser(ctx);
    const body = ctx.request.body as { CompleteMultipartUpload?: { Part?: unknown } } | undefined;
    const listed = ([] as { PartNumber?: unknown; ETag?: unknown; ChecksumSHA256?: unknown }[]).concat((body?.CompleteMultipartUpload?.Part as never) ?? []);
    if (listed.length === 0) throw new S3Error('MalformedXML', 'The XML you provided was not well-formed or did not validate against our published schema.');
    const stored = new Map((await partsOf(upload.dir)).map((part) => [part.number, part]));
    const chosen: StoredPart[] = [];
    for (const [index, entry] of listed.entries()) {
      const number = Number(entry.PartNumber);
      if (index > 0 && number <= chosen[index - 1]!.number) {
        throw new S3Error('InvalidPartOrder', 'The list of parts was not in ascending order. The parts list must be specified in order by part number.');
      }
      const part = stored.get(number);
      const invalid = 'One or more of the specified parts could not be found. The part might not have been uploaded, or the specified entity tag might not have matched the part\'s entity tag.';
      if (!part || String(entry.ETag).replace(/"/g, '') !== part.etag) throw new S3Error('InvalidPart', invalid, { PartNumber: String(number) });
      if (upload.sha256 && entry.ChecksumSHA256 !== part.sha256) throw new S3Error('InvalidPart', `The checksum of part ${number} did not match.`, { PartNumber: String(number) });
      chosen.push(part);
    }
    const small = chosen.slice(0, -1).find((part) => part.size < MIN_PART_BYTES);
    if (small) {
      throw new S3Error('EntityTooSmall', 'Your proposed upload is smaller than the minimum allowed object size.', {
        ProposedSize: String(small.size),
        MinSizeAllowed: String(MIN_PART_BYTES),
        PartNumber: String(small.number),
      });
    }
    const etag = `${digestOf(chosen.map((part) => Buffer.from(part.etag, 'hex')), 'md5').toString('hex')}-${chosen.length}`;
    const composite = upload.sha256 && `${digestOf(chosen.map((part) => Buffer.from(part.sha256, 'base64')), 'sha256').toString('base64')}-${chosen.length}`;
    async function* content() {
      for (const part of chosen) yield* createReadStream(join(upload.dir, String(part.number)));
    }
    await ctx.store.putObject(new S3Object(bucket, key, Readable.from(content()), upload.headers));
    // Read back as the object's ETag, as S3 answers a multipart object's.
    await writeFile(ctx.store.getResourcePath(bucket, key, 'object.md5'), etag);
    await rm(upload.dir, { recursive: true, force: true });
    ctx.body = {
      CompleteMultipartUploadResult: {
        Location: ctx.href.split('?')[0],
        Bucket: bucket,
        Key: key,
        ETag: JSON.stringify(etag),
        ...(composite && { ChecksumSHA256: composite }),
      },
    };
  };
}
