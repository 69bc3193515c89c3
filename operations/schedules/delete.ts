import { z } from 'zod';
import { success, uuid } from '../../src/registry/fields.js';
import { defineOperation } from '../../src/registry/operation.js';
import { cancelPublish } from '../../src/worker/jobs.js';
import { lockForMove } from './state.js';

export default defineOperation({
  id: 'deleteSchedule',
  method: 'DELETE',
  path: '/schedules/{id}',
  visibility: 'public',
  summary: 'Cancel one schedule',
  description:
    'Removes a DRAFT, SCHEDULED or FAILED schedule (and, for a thread\'s first schedule, its thread parts) with its queued publish job, ' +
    'in one transaction: nothing is published for it afterwards. The post and its other schedules stay. A schedule that is PUBLISHING or ' +
    'PUBLISHED answers 409 INVALID_STATE. The monthly quota a live schedule spent is not given back.',
  input: { path: z.object({ id: uuid }) },
  output: success,
  errors: ['NOT_FOUND', 'INVALID_STATE'],
  async handler({ id }, { db, auth, fail }) {
    return db.begin(async (tx) => {
      const locked = await lockForMove(tx, auth.workspaceId, id, 'cancel');
      if ('code' in locked) return fail(locked.code as 'NOT_FOUND' | 'INVALID_STATE', locked.message);
      const removed = await tx<{ id: string }[]>`
        DELETE FROM schedules WHERE id = ${id} OR thread_root_schedule_id = ${id} RETURNING id`;
      await cancelPublish(tx, removed.map((row) => row.id));
      return { success: true };
    });
  },
});
