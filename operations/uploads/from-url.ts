import { createHash, randomUUID } from 'node:crypto';
import { z } from 'zod';
import { fetchRemoteImage, RemoteFetchError } from '../../src/media/remote.js';
import { uuid } from '../../src/registry/fields.js';
import { recordUploadCompleted } from '../events/event.js';
import { defineOperation } from '../../src/registry/operation.js';
import { createMedia, imageOf, keyName, MAX_UPLOAD_BYTES, reserveStorage, scenarioId } from './upload.js';

/** How long a URL may take to answer in full. */
const FETCH_TIMEOUT_MS = 30_000;

export default defineOperation({
  id: 'importUploadFromUrl',
  method: 'POST',
  path: '/uploads/from-url',
  visibility: 'public',
  summary: 'Import an image from a URL: fetch it, store it and create its media',
  description: [
    'Fetches `url` on the server and answers `{ uploadId, publicUrl }`: a completed upload (named after the URL\'s last path segment)',
    'with its media, whose variants are queued (the media appears on completeUpload\'s answer; DELETE /uploads/{uploadId} deletes it).',
    'Only public addresses are fetched (unless the server\'s MEDIA_FETCH_ALLOW_HOSTS names the host), checked when connecting and',
    'again on every redirect (at most 3), so DNS rebinding fails: any other address, a user name or password in the URL, or a',
    `redirect to another scheme answers 400 URL_NOT_ALLOWED. An answer over ${MAX_UPLOAD_BYTES} bytes, not a JPEG, PNG, WebP or GIF by`,
    'its bytes (whatever its Content-Type), not a 2xx, unreachable, or not complete within 30 s answers 400 VALIDATION_ERROR. Both',
    'name the reason. The file spends the storage allowance as an upload does (403 STORAGE_QUOTA_EXCEEDED). A refusal leaves no',
    'upload, media or stored object behind.',
  ].join('\n'),
  input: { body: z.strictObject({ url: z.url({ protocol: /^https?$/ }).max(2048).meta({ description: 'An http(s) URL of an image.' }), scenarioId }) },
  output: z.object({ uploadId: uuid, publicUrl: z.string() }).meta({ id: 'ImportedUpload' }),
  errors: ['VALIDATION_ERROR', 'URL_NOT_ALLOWED', 'STORAGE_QUOTA_EXCEEDED'],
  idempotent: true,
  async handler({ url, scenarioId }, { db, storage, logger, config, auth, fail }) {
    let bytes: Buffer;
    try {
      ({ bytes } = await fetchRemoteImage(url, { maxBytes: MAX_UPLOAD_BYTES, timeoutMs: FETCH_TIMEOUT_MS, allowHosts: config.mediaFetchAllowHosts }));
    } catch (error) {
      if (!(error instanceof RemoteFetchError)) throw error;
      const guarded = ['INVALID_URL', 'SCHEME_NOT_ALLOWED', 'ADDRESS_NOT_PUBLIC', 'TOO_MANY_REDIRECTS'].includes(error.reason);
      return fail(guarded ? 'URL_NOT_ALLOWED' : 'VALIDATION_ERROR', `url: ${error.message}`);
    }
    const image = await imageOf(bytes);
    if (!image) return fail('VALIDATION_ERROR', 'url: the answer is not a JPEG, PNG, WebP or GIF image');

    const uploadId = randomUUID();
    const fileName = keyName(lastPathSegment(url) || 'image');
    const objectKey = `uploads/${auth.workspaceId}/${uploadId}/${fileName}`;
    await storage.put(objectKey, bytes, image.type);
    const refusal = await db
      .begin(async (tx) => {
        const refusal = await reserveStorage(tx, auth.workspaceId, bytes.length);
        if (refusal) return refusal;
        await tx`
          INSERT INTO uploads (id, organization_id, user_id, scenario_id, file_name, declared_type, size, checksum, object_key, status, expires_at, completed_at)
          VALUES (${uploadId}, ${auth.workspaceId}, ${auth.userId}, ${scenarioId}, ${fileName}, ${image.type}, ${bytes.length},
            ${createHash('sha256').update(bytes).digest('base64')}, ${objectKey}, 'completed', now(), now())`;
        await createMedia(tx, { workspaceId: auth.workspaceId, uploadId, objectKey, size: bytes.length, image });
        await recordUploadCompleted(tx, storage, auth.workspaceId, uploadId);
        return undefined;
      })
      .catch(async (error: unknown) => {
        await storage.delete([objectKey]).catch((cause: unknown) => logger.error('removing an imported file failed', { objectKey, error: cause }));
        throw error;
      });
    if (refusal) {
      await storage.delete([objectKey]);
      return fail('STORAGE_QUOTA_EXCEEDED', refusal);
    }
    return { uploadId, publicUrl: storage.publicUrl(objectKey) };
  },
});

/** The URL's last path segment, percent-decoded where that is valid UTF-8 (`%zz` or `%E0` alone stay as sent). */
function lastPathSegment(url: string): string {
  const segment = new URL(url).pathname.split('/').pop() ?? '';
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}
