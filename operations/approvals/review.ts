import { z } from 'zod';
import { NOT_FOUND_MESSAGE } from '../../src/registry/errors.js';
import { idOf, text } from '../../src/registry/fields.js';
import type { HandlerContext } from '../../src/registry/context.js';
import { approve, lockApproval, mayReview, reject } from '../posts/approval.js';
import { loadPosts, type PostOutput } from '../posts/post.js';

/** What approvePost and rejectPost take: the post, and a note kept on it. */
export const reviewInput = {
  path: z.object({ id: idOf('post') }),
  body: z.strictObject({ note: text.trim().max(2000).optional().meta({ description: 'Kept on the post as `approvalNote`: why, for its author.' }) }),
};

export const REVIEW_ERRORS = ['NOT_FOUND', 'INVALID_STATE', 'FORBIDDEN', 'PAYMENT_REQUIRED', 'POST_QUOTA_EXCEEDED', 'VALIDATION_ERROR'] as const;

type ReviewError = (typeof REVIEW_ERRORS)[number];

/**
 * Approves or rejects the post `id` for the caller: the post locked, waiting for review, the caller one who may review
 * it; answers the post as it now is. Two reviewers at once take turns on the lock: the second finds it reviewed.
 */
export async function review(
  verdict: 'approve' | 'reject',
  { id, note }: { id: string; note?: string },
  { db, storage, auth, fail }: HandlerContext<ReviewError>,
): Promise<PostOutput> {
  return db.begin(async (tx) => {
    const post = await lockApproval(tx, auth.workspaceId, id);
    if (!post) return fail('NOT_FOUND', NOT_FOUND_MESSAGE);
    if (post.approvalStatus !== 'pending_review') {
      const by = post.reviewerName ? ` by ${post.reviewerName}` : '';
      const when = post.approvalCompletedAt ? ` at ${post.approvalCompletedAt.toISOString()}` : '';
      return fail(
        'INVALID_STATE',
        post.approvalStatus === null
          ? 'The post is not waiting for approval (approvalStatus null): no rule held it'
          : `The post is not waiting for approval: it was ${post.approvalStatus}${by}${when}`,
      );
    }
    if (!(await mayReview(tx, auth.principal, post.requiredApproverIds))) {
      return fail('FORBIDDEN', 'You are not among the post\'s approvers (requiredApproverIds) nor a workspace owner');
    }
    const decision = { reviewerId: auth.userId, note: note || null };
    if (verdict === 'approve') {
      const refusal = await approve(tx, storage, auth.workspaceId, id, decision);
      if (refusal) return fail(refusal.code, refusal.message);
    } else {
      await reject(tx, storage, auth.workspaceId, id, decision);
    }
    const [reviewed] = await loadPosts(tx, storage, auth.workspaceId, [id]);
    return reviewed!;
  });
}
