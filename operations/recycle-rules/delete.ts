import { z } from 'zod';
import { NOT_FOUND_MESSAGE } from '../../src/registry/errors.js';
import { idOf, success } from '../../src/registry/fields.js';
import { defineOperation } from '../../src/registry/operation.js';
import { cancelRecycle } from '../../src/worker/queue.js';

export default defineOperation({
  id: 'deleteRecycleRule',
  method: 'DELETE',
  path: '/recycle-rules/{id}',
  summary: 'Delete a recycle rule',
  description: [
    'It runs no more (a queued run is removed). The schedules it made stay, as ordinary schedules, and its recycle events stay',
    'in the log without their rule. Internal (dashboard, command line with a session, admin).',
  ].join('\n'),
  input: { path: z.object({ id: idOf('recycle rule') }) },
  output: success,
  errors: ['NOT_FOUND'],
  async handler({ id }, { db, auth, fail }) {
    return db.begin(async (tx) => {
      const deleted = await tx`DELETE FROM recycle_rules WHERE id = ${id} AND organization_id = ${auth.workspaceId}`;
      if (deleted.count === 0) return fail('NOT_FOUND', NOT_FOUND_MESSAGE);
      await cancelRecycle(tx, id);
      return { success: true };
    });
  },
});
