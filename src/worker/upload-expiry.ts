import type { Task } from 'graphile-worker';
import { z } from 'zod';
import type { AppContext } from '../registry/context.js';
import { TASK } from './queue.js';
import { defineTask } from './task.js';

const Payload = z.strictObject({ uploadId: z.uuid() });

/**
 * The upload-expiry task: an upload still pending, or withdrawn (deleted, or refused at complete), after its URL
 * expired is removed, with any file PUT to it. Its storage reservation lapsed at the expiry already (see
 * reserveStorage); this keeps the store free of files no media will ever own. A completed upload is left alone.
 */
function uploadExpiryTask(app: AppContext): Task {
  return async (payload) => {
    const { uploadId } = Payload.parse(payload);
    const [removed] = await app.db<{ objectKey: string }[]>`
      DELETE FROM uploads WHERE id = ${uploadId} AND status IN ('pending', 'withdrawn') AND expires_at < now() RETURNING object_key`;
    if (removed) await app.storage.delete([removed.objectKey]);
  };
}

export default defineTask(TASK.uploadExpiry, uploadExpiryTask);
