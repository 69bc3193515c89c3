import { z } from 'zod';
import { defineOperation } from '../../src/registry/operation.js';
import { RecycleRule, selectRules } from './recycle-rule.js';

export default defineOperation({
  id: 'listRecycleRules',
  method: 'GET',
  path: '/recycle-rules',
  summary: 'The workspace\'s recycle rules, oldest first',
  description: 'Each with when it last ran. Internal (dashboard, command line with a session, admin).',
  input: {},
  output: z.array(RecycleRule),
  async handler(_input, { db, auth }) {
    return selectRules(db, auth.workspaceId);
  },
});
