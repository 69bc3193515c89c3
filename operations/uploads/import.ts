import { createHash, randomUUID } from 'node:crypto';
import { fetchRemoteImage, RemoteFetchError } from '../../src/media/remote.js';
import type { MediaProviderName } from '../../src/media/providers.js';
import type { AppContext, HandlerContext } from '../../src/registry/context.js';
import { recordUploadCompleted } from '../events/event.js';
import { createMedia, imageOf, keyName, MAX_UPLOAD_BYTES, reserveStorage } from './upload.js';

/** How long a URL may take to answer in full. */
const FETCH_TIMEOUT_MS = 30_000;

/** Why an import was refused, with the error code the operations answer. */
export type ImportRefusal = { code: 'URL_NOT_ALLOWED' | 'VALIDATION_ERROR' | 'STORAGE_QUOTA_EXCEEDED'; message: string };

/**
 * An image fetched from `url` through the fetch guard (src/media/remote.ts: public addresses only, unless
 * MEDIA_FETCH_ALLOW_HOSTS names the host) into the store: a completed upload with its media (from a provider, when
 * `provider` says so), its variants queued. All or nothing: a refusal leaves no upload, media or stored object.
 */
export async function importImage(
  { db, storage, logger, config, auth }: AppContext & Pick<HandlerContext<never>, 'auth'>,
  { url, scenarioId, fileName, provider }: { url: string; scenarioId: string; fileName: string; provider?: { name: MediaProviderName; id: string } },
): Promise<{ uploadId: string; mediaId: string; publicUrl: string } | ImportRefusal> {
  let bytes: Buffer;
  try {
    ({ bytes } = await fetchRemoteImage(url, { maxBytes: MAX_UPLOAD_BYTES, timeoutMs: FETCH_TIMEOUT_MS, allowHosts: config.mediaFetchAllowHosts }));
  } catch (error) {
    if (!(error instanceof RemoteFetchError)) throw error;
    const guarded = ['INVALID_URL', 'SCHEME_NOT_ALLOWED', 'ADDRESS_NOT_PUBLIC', 'TOO_MANY_REDIRECTS'].includes(error.reason);
    return { code: guarded ? 'URL_NOT_ALLOWED' : 'VALIDATION_ERROR', message: error.message };
  }
  const image = await imageOf(bytes);
  if (!image) return { code: 'VALIDATION_ERROR', message: 'the answer is not a JPEG, PNG, WebP or GIF image' };

  const uploadId = randomUUID();
  const name = keyName(fileName || 'image');
  const objectKey = `uploads/${auth.workspaceId}/${uploadId}/${name}`;
  await storage.put(objectKey, bytes, image.type);
  const done = await db
    .begin(async (tx) => {
      const refusal = await reserveStorage(tx, auth.workspaceId, bytes.length);
      if (refusal) return { code: 'STORAGE_QUOTA_EXCEEDED' as const, message: refusal };
      await tx`
        INSERT INTO uploads (id, organization_id, user_id, scenario_id, file_name, declared_type, size, checksum, object_key, status, expires_at, completed_at)
        VALUES (${uploadId}, ${auth.workspaceId}, ${auth.userId}, ${scenarioId}, ${name}, ${image.type}, ${bytes.length},
          ${createHash('sha256').update(bytes).digest('base64')}, ${objectKey}, 'completed', now(), now())`;
      const mediaId = await createMedia(tx, { workspaceId: auth.workspaceId, uploadId, objectKey, size: bytes.length, image, provider });
      await recordUploadCompleted(tx, storage, auth.workspaceId, uploadId);
      return { uploadId, mediaId, publicUrl: storage.publicUrl(objectKey) };
    })
    .catch(async (error: unknown) => {
      await storage.delete([objectKey]).catch((cause: unknown) => logger.error('removing an imported file failed', { objectKey, error: cause }));
      throw error;
    });
  if ('code' in done) await storage.delete([objectKey]);
  return done;
}
