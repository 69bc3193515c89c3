import { DeleteObjectCommand, GetObjectCommand, HeadObjectCommand, PutObjectCommand, S3Client, S3ServiceException } from '@aws-sdk/client-s3';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import type { Config, S3Config } from '../process/config.js';
import { startEmbeddedS3 } from './embedded.js';

/** The object store, one code path for AWS S3, MinIO and the embedded server. */
export interface Storage {
  /**
   * The origins a browser talks to: `upload`, where the signed URLs point (the dashboard PUTs files there, so its
   * CSP's connect-src names it and the bucket's CORS rule must allow the dashboard's origin: docs/media.md), and
   * `public`, where media is read (its img-src).
   */
  origins: { upload: string; public: string };
  /** Where anyone reads `key` (S3_PUBLIC_URL, or the bucket's own URL). */
  publicUrl(key: string): string;
  /**
   * A URL that accepts one PUT of exactly this key, content type, length and SHA-256 until `expiresInSeconds` have
   * passed, and the headers the PUT must carry besides Content-Length (which any HTTP client sets from the body).
   */
  presignPut(object: { key: string; contentType: string; size: number; sha256Base64: string; signedAt: Date; expiresInSeconds: number }): Promise<{
    url: string;
    requiredHeaders: Record<string, string>;
  }>;
  /** The object's size, or null when there is none. */
  size(key: string): Promise<number | null>;
  read(key: string): Promise<Buffer>;
  put(key: string, body: Buffer, contentType: string): Promise<void>;
  delete(keys: string[]): Promise<void>;
  close(): Promise<void>;
}

/** The store of S3_* (config.s3), or the embedded one under DATA_DIR when none is set. */
export async function openStorage(config: Pick<Config, 's3' | 'dataDir'> & Partial<Pick<Config, 'publicUrl'>>): Promise<Storage> {
  if (config.s3) return s3Storage(config.s3, async () => {});
  const embedded = await startEmbeddedS3(config.dataDir, config.publicUrl);
  return s3Storage(embedded.config, embedded.stop);
}

/**
 * The origin of the URLs the SDK signs for this store: virtual-hosted on AWS (bucket.s3.region.amazonaws.com), but
 * path-style for a bucket whose name has dots (TLS would not match), and path-style on any endpoint. Asked of the SDK
 * itself rather than guessed, with made-up credentials, because signing is local and the real ones may come from a
 * provider chain that would have to be reached at start.
 */
async function uploadOrigin(s3: S3Config, settings: ConstructorParameters<typeof S3Client>[0]): Promise<string> {
  const probe = new S3Client({ ...settings, credentials: { accessKeyId: 'origin-probe', secretAccessKey: 'origin-probe' } });
  try {
    return new URL(await getSignedUrl(probe, new PutObjectCommand({ Bucket: s3.bucket, Key: 'origin-probe' }))).origin;
  } finally {
    probe.destroy();
  }
}

async function s3Storage(s3: S3Config, stop: () => Promise<void>): Promise<Storage> {
  // The SDK warns on Node 20 that its releases from 2027 on need Node 22. package.json pins a release that runs on
  // 20, so the warning says nothing to an operator, and it would be the one stray line of every command's output.
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
  const settings = {
    region: s3.region,
    endpoint: s3.endpoint,
    // MinIO and the embedded server address buckets by path; AWS itself takes virtual hosts.
    forcePathStyle: s3.endpoint !== undefined,
    // Checksums only where we ask for them (the presigned SHA-256); the SDK's default CRC32 trailers are not
    // understood by every S3-compatible store.
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
  } as const;
  const client = new S3Client({ ...settings, credentials: s3.credentials });
  const Bucket = s3.bucket;
  return {
    origins: { upload: await uploadOrigin(s3, settings), public: new URL(s3.publicUrl).origin },
    publicUrl: (key) => `${s3.publicUrl}/${key.split('/').map(encodeURIComponent).join('/')}`,
    async presignPut({ key, contentType, size, sha256Base64, signedAt, expiresInSeconds }) {
      const command = new PutObjectCommand({ Bucket, Key: key, ContentType: contentType, ContentLength: size, ChecksumSHA256: sha256Base64 });
      const url = await getSignedUrl(client, command, {
        signingDate: signedAt,
        expiresIn: expiresInSeconds,
        // Signed, so the URL takes no other type; the checksum stays a header (not a query parameter), so S3
        // verifies the body against it.
        signableHeaders: new Set(['content-type', 'content-length']),
        unhoistableHeaders: new Set(['x-amz-checksum-sha256']),
      });
      return { url, requiredHeaders: { 'content-type': contentType, 'x-amz-checksum-sha256': sha256Base64 } };
    },
    async size(key) {
      try {
        const head = await client.send(new HeadObjectCommand({ Bucket, Key: key }));
        return head.ContentLength ?? 0;
      } catch (error) {
        if (error instanceof S3ServiceException && (error.$metadata.httpStatusCode === 404 || error.name === 'NotFound')) return null;
        throw error;
      }
    },
    async read(key) {
      const object = await client.send(new GetObjectCommand({ Bucket, Key: key }));
      return Buffer.from(await object.Body!.transformToByteArray());
    },
    async put(key, body, contentType) {
      await client.send(new PutObjectCommand({ Bucket, Key: key, Body: body, ContentType: contentType }));
    },
    async delete(keys) {
      // One request per key: a media has a handful of objects, and DeleteObjects needs a Content-MD5 some stores lack.
      await Promise.all(keys.map((Key) => client.send(new DeleteObjectCommand({ Bucket, Key }))));
    },
    async close() {
      client.destroy();
      await stop();
    },
  };
}
