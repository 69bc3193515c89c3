import { defineOperation } from '../../src/registry/operation.js';
import { Post } from '../posts/post.js';
import { review, REVIEW_ERRORS, reviewInput } from './review.js';

export default defineOperation({
  id: 'rejectPost',
  method: 'POST',
  path: '/posts/{id}/reject',
  summary: 'Reject a post waiting for review, with a note for its author',
  description:
    'Only a post in `pending_review` (else 409 INVALID_STATE), by one of its `requiredApproverIds` or a workspace owner (else 403 ' +
    'FORBIDDEN). The post becomes `rejected` with `approvalReviewerId` and `approvalNote`; nothing publishes and no quota is spent. ' +
    'A change to the post (PATCH /posts/{id}) sends it back to review. Answers the post. Internal (dashboard, command line with a ' +
    'session, admin).',
  input: reviewInput,
  output: Post,
  errors: [...REVIEW_ERRORS],
  async handler({ id, note }, context) {
    return review('reject', { id, note }, context);
  },
});
