import { createHash } from 'node:crypto';
import { z } from 'zod';
import { NOT_FOUND_MESSAGE } from '../../src/registry/errors.js';
import { uuid } from '../../src/registry/fields.js';
import { defineOperation } from '../../src/registry/operation.js';
import { recordUploadCompleted } from '../events/event.js';
import { checksum, createMedia, imageOf, lockUpload, reserveStorage, withdrawUpload, uploadResult, UploadResult } from './upload.js';

type Refusal = { code: 'CHECKSUM_MISMATCH' | 'VALIDATION_ERROR' | 'STORAGE_QUOTA_EXCEEDED'; message: string };

export default defineOperation({
  id: 'completeUpload',
  method: 'POST',
  path: '/uploads/complete',
  visibility: 'public',
  summary: 'Finish an upload: verify the stored file and create its media',
  description: [
    'Checks that the file was PUT to the signed URL (409 INVALID_STATE while it is not), with the declared size, and that the SHA-256',
    'of its stored bytes is `checksum`, the one given at initiate. A file that differs answers 400 CHECKSUM_MISMATCH and is deleted',
    'with its upload (its reservation released): initiate again (a `checksum` other than initiate\'s answers CHECKSUM_MISMATCH and',
    'changes nothing). The real type and size in pixels are read from the bytes: a JPEG, PNG, WebP or GIF, whatever was declared;',
    'anything else answers 400 VALIDATION_ERROR and is deleted likewise.',
    '',
    'Creates the media (`mediaId`, for rows[].media on posts) and queues its variants (`variantsStatus`). Completing again answers',
    'the same result with `idempotent: true`. An upload completed after its URL expired needs the storage allowance again (403',
    'STORAGE_QUOTA_EXCEEDED).',
  ].join('\n'),
  input: { body: z.strictObject({ uploadId: uuid.meta({ description: 'The `uploadId` that POST /uploads/initiate answered.' }), checksum }) },
  output: UploadResult,
  errors: ['NOT_FOUND', 'INVALID_STATE', 'CHECKSUM_MISMATCH', 'VALIDATION_ERROR', 'STORAGE_QUOTA_EXCEEDED'],
  async handler({ uploadId, checksum }, { db, storage, auth, fail }) {
    // The upload stays locked while its bytes are checked: a second complete waits, then finds it completed.
    const outcome = await db.begin(async (tx): Promise<Refusal | { idempotent: boolean }> => {
      const upload = await lockUpload(tx, auth.workspaceId, uploadId);
      if (!upload) return fail('NOT_FOUND', NOT_FOUND_MESSAGE);
      if (checksum !== upload.checksum) {
        return { code: 'CHECKSUM_MISMATCH', message: `checksum: ${checksum} is not the checksum given at initiate (${upload.checksum})` };
      }
      if (upload.status === 'completed') return { idempotent: true };

      const size = await storage.size(upload.objectKey);
      if (size === null) {
        return fail('INVALID_STATE', upload.expired
          ? 'No file was uploaded before the signed URL expired; initiate a new upload'
          : 'No file has been uploaded yet: PUT it to the signedUrl (with requiredHeaders) first');
      }
      const refuse = async (refusal: Refusal) => {
        await withdrawUpload(tx, uploadId);
        await storage.delete([upload.objectKey]);
        return refusal;
      };
      if (size !== Number(upload.size)) {
        return refuse({ code: 'CHECKSUM_MISMATCH', message: `The stored file has ${size} bytes; ${upload.size} were declared. It was deleted` });
      }
      const bytes = await storage.read(upload.objectKey);
      const actual = createHash('sha256').update(bytes).digest('base64');
      if (actual !== upload.checksum) {
        return refuse({ code: 'CHECKSUM_MISMATCH', message: `The stored file's SHA-256 is ${actual}, not ${upload.checksum}. It was deleted` });
      }
      const image = await imageOf(bytes);
      if (!image) return refuse({ code: 'VALIDATION_ERROR', message: 'The file is not a JPEG, PNG, WebP or GIF image. It was deleted' });
      if (upload.expired) {
        const refusal = await reserveStorage(tx, auth.workspaceId, Number(upload.size), uploadId);
        if (refusal) return refuse({ code: 'STORAGE_QUOTA_EXCEEDED', message: `${refusal}. The file was deleted` });
      }

      await tx`UPDATE uploads SET status = 'completed', completed_at = now(), updated_at = now() WHERE id = ${uploadId}`;
      await createMedia(tx, { workspaceId: auth.workspaceId, uploadId, objectKey: upload.objectKey, size, image });
      await recordUploadCompleted(tx, storage, auth.workspaceId, uploadId);
      return { idempotent: false };
    });
    if ('code' in outcome) return fail(outcome.code, outcome.message);
    // Read after the commit: a delete that waited for this upload's lock may have removed it meanwhile.
    return (await uploadResult(db, storage, uploadId, outcome.idempotent)) ?? fail('NOT_FOUND', NOT_FOUND_MESSAGE);
  },
});
