import { z } from 'zod';
import { cursor, encodeCursor, itemList, limit, uuid } from '../../src/registry/fields.js';
import { defineOperation } from '../../src/registry/operation.js';
import { readPosts, Post } from '../posts/post.js';

export default defineOperation({
  id: 'listApprovals',
  method: 'GET',
  path: '/approvals',
  summary: 'The posts waiting for approval, oldest request first (or the rejected ones)',
  description:
    'Each post whole, as GET /posts/{id} answers it: its schedules per channel, what each would publish, who may approve ' +
    '(`requiredApproverIds`) and since when it waits (`approvalRequestedAt`). `status=rejected` lists the rejected posts instead, ' +
    'each with its reviewer and note. Internal (dashboard, command line with a session, admin): an API key cannot review posts.',
  input: {
    query: z.object({
      status: z.enum(['pending_review', 'rejected']).default('pending_review').meta({ description: 'pending_review (the queue) unless given.' }),
      limit: limit(20),
      cursor: cursor(z.tuple([z.string(), uuid])),
    }),
  },
  output: itemList(Post),
  errors: ['VALIDATION_ERROR'],
  async handler({ status, limit, cursor }, { db, storage, renders, auth }) {
    const after = cursor ? db`AND (approval_requested_at, id) > (${cursor[0]}::timestamptz, ${cursor[1]}::uuid)` : db``;
    const rows = await db<{ id: string; requestedAtKey: string }[]>`
      SELECT id, approval_requested_at::text AS requested_at_key FROM posts
      WHERE organization_id = ${auth.workspaceId} AND approval_status = ${status} ${after}
      ORDER BY approval_requested_at, id LIMIT ${limit + 1}`;
    const page = rows.slice(0, limit);
    const last = page.at(-1);
    return {
      items: await readPosts({ db, storage, renders }, auth.workspaceId, page.map((row) => row.id)),
      nextCursor: rows.length > limit && last ? encodeCursor([last.requestedAtKey, last.id]) : null,
    };
  },
});
