import { z } from 'zod';
import { success, timestamp, idOf } from '../../src/registry/fields.js';
import { defineOperation } from '../../src/registry/operation.js';
import { enqueuePublish } from '../../src/worker/queue.js';
import { changeSchedules } from '../events/event.js';
import { liveAgain, lockForMove } from './state.js';

export default defineOperation({
  id: 'rescheduleSchedule',
  method: 'POST',
  path: '/posts/schedules/{scheduleId}/reschedule',
  visibility: 'public',
  summary: 'Move a schedule to a new time',
  description:
    'Moves a DRAFT (it stays a draft, held at the new time), a SCHEDULED schedule (its publish job moves with it) or a FAILED one ' +
    '(it becomes SCHEDULED at the new time, as a retry does; needs an active subscription, 402). A thread moves whole: pass its ' +
    'first schedule; a thread part alone answers 400. PUBLISHING and PUBLISHED answer 409 INVALID_STATE. `scheduledAt` must be in ' +
    'the future. The monthly quota is not spent again.',
  input: {
    path: z.object({ scheduleId: idOf('schedule') }),
    body: z.strictObject({ scheduledAt: timestamp.meta({ description: 'The new time; in the future.' }) }),
  },
  output: success,
  errors: ['NOT_FOUND', 'INVALID_STATE', 'PAYMENT_REQUIRED', 'VALIDATION_ERROR'],
  idempotent: true,
  async handler({ scheduleId, scheduledAt }, { db, storage, auth, fail }) {
    if (Date.parse(scheduledAt) <= Date.now()) return fail('VALIDATION_ERROR', `body.scheduledAt: ${scheduledAt} is in the past`);
    return db.begin(async (tx) => {
      const locked = await lockForMove(tx, auth.workspaceId, scheduleId, 'reschedule');
      if ('code' in locked) return fail(locked.code, locked.message);
      if (locked.schedule.threadRootScheduleId) {
        return fail('VALIDATION_ERROR', `This schedule is part ${locked.schedule.threadOrder} of a thread; reschedule its first schedule, ${locked.schedule.threadRootScheduleId}`);
      }
      // The thread's parts that have not been published move with it, as their first schedule does.
      await changeSchedules(tx, storage, 'schedule.rescheduled', tx`
        UPDATE schedules SET scheduled_at = ${scheduledAt}::timestamptz, ${liveAgain(tx)}, updated_at = now()
        WHERE (id = ${scheduleId} OR thread_root_schedule_id = ${scheduleId}) AND status IN ('DRAFT', 'SCHEDULED', 'FAILED')
        RETURNING *`);
      await enqueuePublish(tx, [scheduleId]);
      return { success: true };
    });
  },
});
