import { z } from 'zod';
import { NOT_FOUND_MESSAGE } from '../../src/registry/errors.js';
import { success, idOf } from '../../src/registry/fields.js';
import { defineOperation } from '../../src/registry/operation.js';
import { storedVariants } from '../media/media.js';
import { lockUpload, withdrawUpload } from './upload.js';

export default defineOperation({
  id: 'deleteUpload',
  method: 'DELETE',
  path: '/uploads/{uploadId}',
  visibility: 'public',
  summary: 'Delete an upload: its file, its media and variants, and its share of the storage allowance',
  description: [
    'Works at any stage: a pending upload loses its file if it was PUT already; a completed one its media and variants. The bytes',
    'return to the allowance when the upload\'s signed URL expires (`expiresAt`; at once if it has): until then the URL still takes',
    'a PUT, whose file is removed at the expiry. Media on a post with a live schedule (SCHEDULED or PUBLISHING) cannot be deleted',
    '(409 CONFLICT names the post); other posts lose the attachment with it. Deleting again answers 404.',
  ].join('\n'),
  input: { path: z.object({ uploadId: idOf('upload') }) },
  output: success,
  errors: ['NOT_FOUND', 'CONFLICT'],
  async handler({ uploadId }, { db, storage, logger, auth, fail }) {
    const keys = await db.begin(async (tx) => {
      const upload = await lockUpload(tx, auth.workspaceId, uploadId);
      if (!upload) return fail('NOT_FOUND', NOT_FOUND_MESSAGE);
      // The schedules of its media's posts, share-locked first (in the order every mover locks: schedules, then media):
      // a draft made live, or a failed schedule retried, at the same moment either commits first, and is seen below, or
      // waits for this delete.
      await tx`
        SELECT 1 FROM media m JOIN attachments a ON a.media_id = m.id JOIN schedules s ON s.post_id = a.post_id
        WHERE m.upload_id = ${uploadId} ORDER BY s.id FOR SHARE OF s`;
      const [media] = await tx<{ id: string; variantsText: string }[]>`
        SELECT id, variants::text AS variants_text FROM media WHERE upload_id = ${uploadId} FOR UPDATE`;
      if (media) {
        const [live] = await tx<{ postId: string; status: string }[]>`
          SELECT a.post_id, s.status FROM attachments a JOIN schedules s ON s.post_id = a.post_id
          WHERE a.media_id = ${media.id} AND s.status IN ('SCHEDULED', 'PUBLISHING') LIMIT 1`;
        if (live) {
          fail('CONFLICT', `The media is attached to post ${live.postId}, which has a ${live.status} schedule; remove it from the post (PATCH /posts/{id} with media) or delete that schedule first`);
        }
      }
      await withdrawUpload(tx, uploadId);
      return [upload.objectKey, ...Object.values(media ? storedVariants(media) : {}).map((variant) => variant.objectKey)];
    });
    // After the commit: a failure here leaves unreachable objects (logged), never media whose file is gone.
    await storage.delete(keys).catch((error: unknown) => logger.error('deleting an upload\'s objects failed', { uploadId, error }));
    return { success: true };
  },
});
