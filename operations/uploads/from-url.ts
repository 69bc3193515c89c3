import { createHash, randomUUID } from 'node:crypto';
import { z } from 'zod';
import { fetchRemoteImage, RemoteFetchError } from '../../src/media/remote.js';
import { uuid } from '../../src/registry/fields.js';
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
    'Fetches `url` on the server: only `http` and `https`, only to public addresses (every address a name resolves to, checked when',
    'connecting, so DNS rebinding fails; again on every redirect, at most 3), within 30 s. A URL refused for that answers 400',
    `URL_NOT_ALLOWED; an answer over ${MAX_UPLOAD_BYTES} bytes, not an image, not a 2xx, or not arriving in time answers 400`,
    'VALIDATION_ERROR; both with the reason, and nothing is stored. The bytes must be a JPEG, PNG, WebP or GIF image (their real',
    'type, not the Content-Type answered). The file',
    'spends the storage allowance as an upload does (403 STORAGE_QUOTA_EXCEEDED), becomes a completed upload with its media, and',
    'its variants are queued. `uploadId` is what DELETE /uploads/{uploadId} takes; the media appears on completeUpload\'s answer.',
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
    const fileName = keyName(decodeURIComponent(new URL(url).pathname.split('/').pop() ?? '') || 'image');
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
