import { randomBytes } from 'node:crypto';
import { mkdir } from 'node:fs/promises';
import http from 'node:http';
import { join } from 'node:path';
import S3rver from '@20minutes/s3rver';
import AWSAccount from '@20minutes/s3rver/lib/models/account.js';
import type { S3Config } from '../config.js';
import { StartupError, describeFsError } from '../startup.js';

export const EMBEDDED_BUCKET = 'postwise';

/**
 * The bucket's CORS rule: the dashboard PUTs files to signed URLs from the browser (docs/media.md), so the store must
 * answer its preflight. The embedded store listens on loopback only, so the pages that can reach it are on this machine:
 * any loopback origin (the service's port is often chosen at start, after the store), and PUBLIC_URL's origin when set.
 * The signature, not CORS, is what guards a write: a page of another origin still needs a signed URL.
 */
export function corsRule(publicUrl?: string): string {
  const origins = ['http://127.0.0.1:*', 'http://localhost:*', 'http://[::1]:*', ...(publicUrl ? [new URL(publicUrl).origin] : [])];
  return [
    '<CORSConfiguration><CORSRule>',
    ...origins.map((origin) => `<AllowedOrigin>${origin}</AllowedOrigin>`),
    '<AllowedMethod>PUT</AllowedMethod><AllowedMethod>GET</AllowedMethod><AllowedMethod>HEAD</AllowedMethod>',
    '<AllowedHeader>content-type</AllowedHeader><AllowedHeader>x-amz-checksum-sha256</AllowedHeader>',
    '<ExposeHeader>ETag</ExposeHeader><MaxAgeSeconds>600</MaxAgeSeconds>',
    '</CORSRule></CORSConfiguration>',
  ].join('');
}

/**
 * An S3-compatible server for `npm start` and the tests, on loopback, its objects under DATA_DIR/s3: the same
 * client code talks to it as to AWS S3 or MinIO. It is @20minutes/s3rver, the maintained fork of s3rver (see
 * docs/media.md), which checks SigV4 signatures and the expiry of presigned URLs. Each process runs its own on
 * the same directory (a file-system store), so an API and a worker started apart see the same objects.
 *
 * Two things are ours, because the server is more permissive than S3:
 * - it lets anonymous requests do anything; here only reads may be anonymous (the public URLs), and a write must
 *   be signed, with a key pair made for this process (its built-in well-known pair is revoked);
 * - its bucket is made at start (configureBuckets): the fork does not route the `/bucket/` path the AWS SDK uses for
 *   bucket-level calls, so the service makes none (objects are deleted one by one, too).
 */
export async function startEmbeddedS3(dataDir: string, publicUrl?: string): Promise<{ config: S3Config; stop(): Promise<void> }> {
  const directory = join(dataDir, 's3');
  try {
    await mkdir(directory, { recursive: true });
  } catch (error) {
    throw new StartupError(`DATA_DIR ${dataDir} is not writable for the embedded S3 store (${describeFsError(error)}); set DATA_DIR or the S3_* variables`);
  }
  const accessKeyId = `POSTWISE${randomBytes(6).toString('hex').toUpperCase()}`;
  const secretAccessKey = randomBytes(24).toString('base64url');
  AWSAccount.DUMMY_ACCOUNT.revokeAccessKey('S3RVER');
  AWSAccount.DUMMY_ACCOUNT.createKeyPair(accessKeyId, secretAccessKey);

  const s3rver = new S3rver({ directory, silent: true, vhostBuckets: false, configureBuckets: [{ name: EMBEDDED_BUCKET, configs: [corsRule(publicUrl)] }] });
  await s3rver.configureBuckets();
  const handle = s3rver.callback();
  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://embedded');
    const signed = req.headers.authorization !== undefined || url.searchParams.has('X-Amz-Algorithm');
    // A CORS preflight carries no signature (a browser never sends credentials with one); s3rver answers it by the rule.
    if (!signed && req.method !== 'GET' && req.method !== 'HEAD' && req.method !== 'OPTIONS') {
      res.writeHead(403, { 'content-type': 'application/xml' }).end('<Error><Code>AccessDenied</Code><Message>Writes must be signed</Message></Error>');
      return;
    }
    handle(req, res);
  });
  await new Promise<void>((resolve, reject) => server.once('error', reject).listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  const endpoint = `http://127.0.0.1:${port}`;
  return {
    config: {
      endpoint,
      bucket: EMBEDDED_BUCKET,
      region: 'us-east-1',
      credentials: { accessKeyId, secretAccessKey },
      publicUrl: `${endpoint}/${EMBEDDED_BUCKET}`,
    },
    async stop() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      AWSAccount.DUMMY_ACCOUNT.revokeAccessKey(accessKeyId);
      s3rver.logger.close();
    },
  };
}
