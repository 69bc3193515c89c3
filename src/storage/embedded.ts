import { randomBytes } from 'node:crypto';
import { mkdir } from 'node:fs/promises';
import http from 'node:http';
import { join } from 'node:path';
import S3rver from '@20minutes/s3rver';
import AWSAccount from '@20minutes/s3rver/lib/models/account.js';
import type { S3Config } from '../process/config.js';
import { multipartUploads } from './embedded-multipart.js';
import { StartupError, describeFsError } from '../process/startup.js';

export const EMBEDDED_BUCKET = 'postwise';

/**
 * Whether a page of `origin` may call the store from a browser: the dashboard PUTs files to signed URLs
 * (docs/media.md), so the store must answer its CORS preflight. The embedded store listens on loopback only, so the
 * pages that can reach it are on this machine: any loopback origin (the service's port is often chosen at start, after
 * the store), and PUBLIC_URL's origin when set. The signature, not CORS, is what guards a write. Answered here rather
 * than by an s3rver bucket rule: that rule is a file each process rewrites at start, which a process starting beside
 * another (npm start and the admin command) could read half-written.
 */
export function corsAllows(origin: string, publicUrl?: string): boolean {
  let url: URL;
  try {
    url = new URL(origin);
  } catch {
    return false;
  }
  if (publicUrl && url.origin === new URL(publicUrl).origin) return true;
  return url.protocol === 'http:' && ['127.0.0.1', 'localhost', '[::1]'].includes(url.hostname);
}

/**
 * An S3-compatible server for `npm start` and the tests, on loopback, its objects under DATA_DIR/s3: the same
 * client code talks to it as to AWS S3 or MinIO. It is @20minutes/s3rver, the maintained fork of s3rver (see
 * docs/media.md), which checks SigV4 signatures and the expiry of presigned URLs. Each process runs its own on
 * the same directory (a file-system store), so an API and a worker started apart see the same objects.
 *
 * Three things are ours, because the server is more permissive than S3:
 * - it lets anonymous requests do anything; here only reads may be anonymous (the public URLs), and a write must
 *   be signed, with a key pair made for this process (its built-in well-known pair is revoked);
 * - its bucket is made at start (configureBuckets): the fork does not route the `/bucket/` path the AWS SDK uses for
 *   bucket-level calls, so the service makes none (objects are deleted one by one, too);
 * - multipart uploads, which it takes without checking anything and cannot list or abort (./embedded-multipart.ts).
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

  const s3rver = new S3rver({ directory, silent: true, vhostBuckets: false, configureBuckets: [{ name: EMBEDDED_BUCKET }] });
  // Multipart as S3 does it (checked parts, ListParts, Abort): before the router, which is last.
  s3rver.middleware.splice(s3rver.middleware.length - 1, 0, multipartUploads());
  await s3rver.configureBuckets();
  const handle = s3rver.callback();
  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://embedded');
    const signed = req.headers.authorization !== undefined || url.searchParams.has('X-Amz-Algorithm');
    const origin = req.headers.origin;
    if (origin !== undefined && corsAllows(origin, publicUrl)) {
      res.setHeader('access-control-allow-origin', origin);
      res.setHeader('access-control-expose-headers', 'ETag');
      res.setHeader('vary', 'Origin');
      // A preflight carries no signature (a browser never sends credentials with one): answered here, as S3 answers it.
      if (req.method === 'OPTIONS') {
        res.writeHead(204, {
          'access-control-allow-methods': 'PUT, GET, HEAD',
          'access-control-allow-headers': 'content-type, x-amz-checksum-sha256',
          'access-control-max-age': '600',
        });
        res.end();
        return;
      }
    }
    if (!signed && req.method !== 'GET' && req.method !== 'HEAD') {
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
