import { z } from 'zod';
import { NOT_FOUND_MESSAGE } from '../../src/registry/errors.js';
import { idOf, uuid } from '../../src/registry/fields.js';
import { defineOperation } from '../../src/registry/operation.js';
import { readPosts, Post, PostSchedule } from '../posts/post.js';
import { CalendarPost, mediaSummary } from './calendar.js';

export default defineOperation({
  id: 'getSchedule',
  method: 'GET',
  path: '/schedules/{id}',
  visibility: 'public',
  summary: 'One schedule, inside its post',
  description:
    'The post the schedule belongs to (every Post field, `organizationId` included), whose `schedules` holds the one schedule asked for, ' +
    'with its `integration` and the calendar\'s view of its `post`. `postId` must be that schedule\'s post: a schedule and post that do ' +
    'not belong together, or to this workspace, answer 404.',
  input: { path: z.object({ id: idOf('schedule') }), query: z.object({ postId: uuid.meta({ description: 'The post the schedule belongs to.' }) }) },
  output: Post.extend({ schedules: z.array(PostSchedule.extend({ post: CalendarPost })).length(1) }).meta({ id: 'PostWithSchedule' }),
  errors: ['NOT_FOUND'],
  async handler({ id, postId }, { db, storage, renders, auth, fail }) {
    const [post] = await readPosts({ db, storage, renders }, auth.workspaceId, [postId]);
    const schedule = post?.schedules.find((candidate) => candidate.id === id);
    if (!post || !schedule) return fail('NOT_FOUND', NOT_FOUND_MESSAGE);
    const summary = { id: post.id, content: post.content, createdAt: post.createdAt, ...mediaSummary(post.attachments) };
    return { ...post, schedules: [{ ...schedule, post: summary }] };
  },
});
