import { z } from 'zod';
import { NOT_FOUND_MESSAGE } from '../../src/registry/errors.js';
import { success, idOf } from '../../src/registry/fields.js';
import { defineOperation } from '../../src/registry/operation.js';
import { cancelPublish } from '../../src/worker/queue.js';
import { recordPostEvents, recordScheduleEvents } from '../events/event.js';

export default defineOperation({
  id: 'deletePost',
  method: 'DELETE',
  path: '/posts/{id}',
  visibility: 'public',
  summary: 'Delete a post, cancelling its pending schedules',
  description:
    'Removes the post with its tags, attachments and schedules, and the publish jobs of those still pending: nothing is published ' +
    'for it afterwards. While one of its schedules is PUBLISHING the answer is 409 INVALID_STATE (try again once it has finished). ' +
    'What was already PUBLISHED stays on the platform. The monthly quota spent is not given back.',
  input: { path: z.object({ id: idOf('post') }) },
  output: success,
  errors: ['NOT_FOUND', 'INVALID_STATE'],
  async handler({ id }, { db, storage, auth, fail }) {
    return db.begin(async (tx) => {
      const [post] = await tx`SELECT id FROM posts WHERE id = ${id} AND organization_id = ${auth.workspaceId} FOR UPDATE`;
      if (!post) return fail('NOT_FOUND', NOT_FOUND_MESSAGE);
      // Locks the schedules: the publishing task's claim waits, then finds them gone.
      const schedules = await tx<{ id: string; status: string }[]>`SELECT id, status FROM schedules WHERE post_id = ${id} FOR UPDATE`;
      const publishing = schedules.filter((schedule) => schedule.status === 'PUBLISHING').length;
      if (publishing) return fail('INVALID_STATE', `${publishing} schedule${publishing === 1 ? ' of this post is' : 's of this post are'} PUBLISHING; try again once publishing has finished`);
      // Their events carry them as they were.
      await recordPostEvents(tx, storage, auth.workspaceId, 'post.deleted', [id]);
      await recordScheduleEvents(tx, storage, 'schedule.deleted', schedules.map((schedule) => schedule.id));
      await tx`DELETE FROM posts WHERE id = ${id}`;
      await cancelPublish(tx, schedules.map((schedule) => schedule.id));
      return { success: true };
    });
  },
});
