import { z } from 'zod';
import { openAccount } from '../../src/channels/open-account.js';
import { PlatformError } from '../../src/platforms/index.js';
import { success, idOf } from '../../src/registry/fields.js';
import { defineOperation } from '../../src/registry/operation.js';
import { cancelPublish } from '../../src/worker/queue.js';
import { changeSchedules } from '../events/event.js';
import { lockForMove } from './state.js';

export default defineOperation({
  id: 'deleteSchedule',
  method: 'DELETE',
  path: '/schedules/{id}',
  visibility: 'public',
  summary: 'Cancel one schedule, or delete what it published',
  description:
    'Removes a DRAFT, SCHEDULED or FAILED schedule (a thread\'s first schedule with its thread parts) and its queued publish job: ' +
    'nothing is published for it afterwards. The post and its other schedules stay; a thread goes on without a deleted part. The ' +
    'monthly quota a live schedule spent is not given back. A PUBLISHED schedule is deleted on the platform instead (a thread\'s ' +
    'first schedule with its published parts and first comment, its other parts cancelled) and keeps its row, with ' +
    '`platformDeletedAt` set; deleting it again changes nothing. When the platform refuses or does not answer: 502 PLATFORM_ERROR, ' +
    'nothing changed here. A PUBLISHING schedule, or thread part, answers 409 INVALID_STATE.',
  input: { path: z.object({ id: idOf('schedule') }) },
  output: success,
  errors: ['NOT_FOUND', 'INVALID_STATE', 'PLATFORM_ERROR'],
  async handler({ id }, context) {
    const { db, auth, fail } = context;
    const [published] = await db<{ integrationId: string; threadRootScheduleId: string | null }[]>`
      SELECT integration_id, thread_root_schedule_id FROM schedules WHERE id = ${id} AND organization_id = ${auth.workspaceId} AND status = 'PUBLISHED'`;
    if (published) {
      if (published.threadRootScheduleId === null) {
        // A thread's first post going away takes the parts not yet published with it (a worker still on the thread
        // finds nothing more to claim); a part being published now would reply to a deleted post: wait for it.
        const busy = await db.begin(async (tx) => {
          const parts = await tx<{ id: string; status: string; threadOrder: number }[]>`
            SELECT id, status, thread_order FROM schedules WHERE thread_root_schedule_id = ${id} ORDER BY id FOR UPDATE`;
          const running = parts.find((part) => part.status === 'PUBLISHING');
          if (running) return running;
          const cancelled = await changeSchedules<{ id: string }>(tx, context.storage, 'schedule.deleted', tx`
            DELETE FROM schedules WHERE thread_root_schedule_id = ${id} AND status IN ('DRAFT', 'SCHEDULED', 'FAILED') RETURNING *`);
          await cancelPublish(tx, cancelled.map((row) => row.id));
          return undefined;
        });
        if (busy) return fail('INVALID_STATE', `Part ${busy.threadOrder} of this thread is PUBLISHING; try again once it is published`);
      }
      // The platform call is made outside any transaction: no row stays locked while the platform answers.
      const targets = await db<{ id: string; platformPostId: string; createdAt: Date; firstComment: string | null; firstCommentPostId: string | null }[]>`
        SELECT id, platform_post_id, created_at, first_comment, first_comment_post_id FROM schedules
        WHERE (id = ${id} OR (${published.threadRootScheduleId === null} AND thread_root_schedule_id = ${id}))
          AND status = 'PUBLISHED' AND platform_post_id IS NOT NULL AND platform_deleted_at IS NULL
        ORDER BY thread_order DESC`;
      if (targets.length === 0) return { success: true };
      try {
        // Each platform request is bounded by PLATFORM_TIMEOUT_MS (src/channels/open-account.ts).
        const { account } = await openAccount(context, published.integrationId, new AbortController().signal);
        for (const target of targets) {
          // A first comment kept by its id (Mastodon, where a reply outlives its parent), or looked up (Bluesky); a
          // platform that has neither (LinkedIn) deletes it with the post.
          if (target.firstCommentPostId) {
            await account.delete(target.firstCommentPostId);
          } else if (target.firstComment && account.lookUp) {
            const comment = await account.lookUp({ scheduleId: target.id, createdAt: target.createdAt, kind: 'firstComment' });
            if (comment) await account.delete(comment.id);
          }
          await account.delete(target.platformPostId);
          await changeSchedules(db, context.storage, 'schedule.deleted', db`
            UPDATE schedules SET platform_deleted_at = now(), updated_at = now() WHERE id = ${target.id} RETURNING *`);
        }
      } catch (error) {
        if (error instanceof PlatformError) return fail('PLATFORM_ERROR', `The post could not be deleted on the platform: ${error.message}`);
        throw error;
      }
      return { success: true };
    }
    return db.begin(async (tx) => {
      const locked = await lockForMove(tx, auth.workspaceId, id, 'cancel');
      if ('code' in locked) return fail(locked.code as 'NOT_FOUND' | 'INVALID_STATE', locked.message);
      const removed = await changeSchedules<{ id: string }>(tx, context.storage, 'schedule.deleted', tx`
        DELETE FROM schedules WHERE id = ${id} OR thread_root_schedule_id = ${id} RETURNING *`);
      await cancelPublish(tx, removed.map((row) => row.id));
      return { success: true };
    });
  },
});
