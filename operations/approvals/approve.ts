import { defineOperation } from '../../src/registry/operation.js';
import { Post } from '../posts/post.js';
import { review, REVIEW_ERRORS, reviewInput } from './review.js';

export default defineOperation({
  id: 'approvePost',
  method: 'POST',
  path: '/posts/{id}/approve',
  summary: 'Approve a post waiting for review: its schedules are queued for publishing',
  description:
    'Only a post in `pending_review` (else 409 INVALID_STATE saying who reviewed it and when), by one of its `requiredApproverIds` ' +
    'or a workspace owner (else 403 FORBIDDEN). In one transaction: the monthly quota is spent for each of its channels (the usual ' +
    '403 POST_QUOTA_EXCEEDED, and 402 PAYMENT_REQUIRED without an active subscription, leave it waiting), a schedule whose time ' +
    'passed while it waited is moved to now and publishes at once, the others keep their time, and their publish jobs are queued. ' +
    'Answers the post. Internal (dashboard, command line with a session, admin).',
  input: reviewInput,
  output: Post,
  errors: [...REVIEW_ERRORS],
  async handler({ id, note }, context) {
    return review('approve', { id, note }, context);
  },
});
