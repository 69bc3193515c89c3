import { z } from 'zod';
import { success, idOf } from '../../src/registry/fields.js';
import { defineOperation } from '../../src/registry/operation.js';
import { enqueuePublish } from '../../src/worker/queue.js';
import { changeSchedules } from '../events/event.js';
import { liveAgain, lockForMove } from './state.js';

export default defineOperation({
  id: 'retrySchedule',
  method: 'POST',
  path: '/posts/schedules/{scheduleId}/retry',
  visibility: 'public',
  summary: 'Publish a failed schedule again, now',
  description:
    'Only a FAILED schedule, with the FAILED thread parts after it: it becomes SCHEDULED, due now, its failure cleared and its ' +
    'automatic retries renewed (retryCount 0). Any other status answers 409 INVALID_STATE naming it. Needs an active subscription ' +
    '(402); the monthly quota is not spent again.',
  input: { path: z.object({ scheduleId: idOf('schedule') }) },
  output: success,
  errors: ['NOT_FOUND', 'INVALID_STATE', 'PAYMENT_REQUIRED'],
  idempotent: true,
  async handler({ scheduleId }, { db, storage, auth, fail }) {
    return db.begin(async (tx) => {
      const locked = await lockForMove(tx, auth.workspaceId, scheduleId, 'retry');
      if ('code' in locked) return fail(locked.code, locked.message);
      const { threadRootScheduleId, threadOrder } = locked.schedule;
      const root = threadRootScheduleId ?? scheduleId;
      await changeSchedules(tx, storage, 'schedule.retrying', tx`
        UPDATE schedules SET scheduled_at = date_trunc('milliseconds', now()), ${liveAgain(tx)}, updated_at = now()
        WHERE status = 'FAILED' AND (id = ${scheduleId} OR (thread_root_schedule_id = ${root} AND thread_order > ${threadOrder}))
        RETURNING *`);
      await enqueuePublish(tx, [scheduleId]);
      return { success: true };
    });
  },
});
