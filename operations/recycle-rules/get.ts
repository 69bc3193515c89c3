import { z } from 'zod';
import { NOT_FOUND_MESSAGE } from '../../src/registry/errors.js';
import { idOf } from '../../src/registry/fields.js';
import { defineOperation } from '../../src/registry/operation.js';
import { RecycleRule, selectRules } from './recycle-rule.js';

export default defineOperation({
  id: 'getRecycleRule',
  method: 'GET',
  path: '/recycle-rules/{id}',
  summary: 'One recycle rule',
  description: 'Internal (dashboard, command line with a session, admin).',
  input: { path: z.object({ id: idOf('recycle rule') }) },
  output: RecycleRule,
  errors: ['NOT_FOUND'],
  async handler({ id }, { db, auth, fail }) {
    const [rule] = await selectRules(db, auth.workspaceId, id);
    return rule ?? fail('NOT_FOUND', NOT_FOUND_MESSAGE);
  },
});
