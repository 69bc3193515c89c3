import { z } from 'zod';
import { NOT_FOUND_MESSAGE } from '../../src/registry/errors.js';
import { idOf } from '../../src/registry/fields.js';
import { defineOperation } from '../../src/registry/operation.js';
import { readPosts, Post } from './post.js';

export default defineOperation({
  id: 'getPost',
  method: 'GET',
  path: '/posts/{id}',
  visibility: 'public',
  summary: 'One post of the workspace, with its schedules, tags, attachments and author',
  description:
    'Schedules come one per channel, each followed by its thread parts, with the channel as `integration`. A post held for ' +
    'approval says so in `approvalStatus` and `canSchedule`; a recycled one in `lastRecycledAt` and its schedules\' ' +
    '`originRecycleEventId`. Collaboration fields (not built yet) are null or empty.',
  input: { path: z.object({ id: idOf('post') }) },
  output: Post,
  errors: ['NOT_FOUND'],
  async handler({ id }, { db, storage, renders, auth, fail }) {
    const [post] = await readPosts({ db, storage, renders }, auth.workspaceId, [id]);
    return post ?? fail('NOT_FOUND', NOT_FOUND_MESSAGE);
  },
});
