import { isOwner } from '../../src/auth/api-keys.js';
import type { z } from 'zod';
import type { Sql } from '../../src/db/index.js';
import type { Platform } from '../../src/platforms/index.js';
import type { Principal } from '../../src/auth/principal.js';
import { enqueuePublish } from '../../src/worker/queue.js';
import { recordPostEvents, recordScheduleEvents } from '../events/event.js';
import type { Storage } from '../../src/storage/index.js';
import type { approvalStatus } from './post.js';
import { spendQuotas } from './refusals.js';

/*
 * Approval before publishing. A rule, on the workspace (every live post) or on the API key or connected app a post is written with,
 * makes a post that goes live wait for a person: `pending_review`, its schedules SCHEDULED with no publish job and no
 * quota spent. An approver approves it (its quota spent then, its jobs queued in the same transaction) or rejects it
 * (with a note); a change by its author puts a rejected post back to review, and a change to what an approved post
 * publishes sends it back while the rule still applies. docs/publishing.md "Approval" draws the states.
 */

export type ApprovalStatus = NonNullable<z.output<typeof approvalStatus>>;

/** Who may approve the posts a rule holds: the people it names, else the workspace's owners at the time of asking. */
export interface ApprovalRule {
  approverIds: string[];
}

/** The rule that holds the live posts `principal` writes, or null when none does. */
export async function approvalRule(tx: Sql, principal: Principal): Promise<ApprovalRule | null> {
  const keyId = principal.kind === 'apiKey' ? principal.keyId : null;
  const connectionId = principal.kind === 'connection' ? principal.connectionId : null;
  const [rule] = await tx<{ applies: boolean; approverIds: string[] }[]>`
    SELECT o.posts_need_approval
        OR coalesce((SELECT k.posts_need_approval FROM api_keys k WHERE k.id = ${keyId}), false)
        OR coalesce((SELECT c.posts_need_approval FROM oauth_connections c WHERE c.id = ${connectionId}), false) AS applies,
      CASE WHEN cardinality(o.approver_ids) > 0 THEN o.approver_ids
        ELSE ARRAY(SELECT m.user_id FROM memberships m WHERE m.organization_id = o.id AND m.role = 'owner' ORDER BY m.created_at) END AS approver_ids
    FROM organizations o WHERE o.id = ${principal.workspaceId}`;
  return rule?.applies ? { approverIds: rule.approverIds } : null;
}

/**
 * Puts the posts `postIds` (locked or just made by the caller) in review: pending_review, asked now, `rule`'s
 * approvers, no reviewer yet, and their schedules with them. The caller removes the publish jobs of schedules that had
 * them, and writes post.approval_requested after its own event (which then shows the post waiting).
 */
export async function requestApproval(tx: Sql, postIds: string[], rule: ApprovalRule): Promise<void> {
  await tx`UPDATE schedules SET approval_status = 'pending_review', approval_requested_at = now(), approval_completed_at = NULL
    WHERE post_id = ANY(${postIds}::uuid[])`;
  await tx`UPDATE posts SET approval_status = 'pending_review', approval_requested_at = now(), approval_completed_at = NULL,
    required_approver_ids = ${rule.approverIds}::uuid[], approval_reviewer_id = NULL, approval_note = NULL WHERE id = ANY(${postIds}::uuid[])`;
}

/** A post's approval state, read under its lock (`FOR UPDATE`), or undefined when the workspace has no such post. */
interface LockedApproval {
  approvalStatus: ApprovalStatus | null;
  requiredApproverIds: string[];
  approvalCompletedAt: Date | null;
  reviewerName: string | null;
}

export async function lockApproval(tx: Sql, workspaceId: string, postId: string): Promise<LockedApproval | undefined> {
  const [post] = await tx<LockedApproval[]>`
    SELECT approval_status, required_approver_ids, approval_completed_at,
      -- In the select list, not a join: read after a wait for the lock, it names the reviewer who just took it.
      (SELECT u.name FROM users u WHERE u.id = approval_reviewer_id) AS reviewer_name
    FROM posts WHERE id = ${postId} AND organization_id = ${workspaceId} FOR UPDATE`;
  return post;
}

/**
 * SQL: the schedule row `alias` is not held for review. The schedule's own copy of its post's state, not the post's:
 * written in the same transaction as the post's, it is what a statement that waited for the schedule's lock sees anew.
 */
export const scheduleNotHeld = (db: Sql, alias: string) =>
  db`(${db(alias)}.approval_status IS NULL OR ${db(alias)}.approval_status = 'approved')`;

/** Why a post in `status` cannot be published yet, for an INVALID_STATE message; undefined when it can. */
export function waitingReason(status: ApprovalStatus | null): string | undefined {
  if (status === 'pending_review') return 'its post is waiting for approval (approvalStatus pending_review): an approver must approve it first';
  if (status === 'rejected') return 'its post was rejected by an approver (approvalStatus rejected): change the post to send it back to review';
  return undefined;
}

type Refusal = { code: 'PAYMENT_REQUIRED' | 'POST_QUOTA_EXCEEDED'; message: string };

/**
 * Approves the post `postId` (locked, pending_review): spends the quota its live first schedules have not spent,
 * moves those whose time passed while waiting to now (they publish at once), queues their publish jobs, and writes
 * post.approved and schedule.scheduled, all in `tx`. Answers why not when the plan refuses.
 */
export async function approve(
  tx: Sql,
  storage: Storage,
  workspaceId: string,
  postId: string,
  review: { reviewerId: string; note: string | null },
): Promise<Refusal | undefined> {
  const [workspace] = await tx<{ plan: string; subscriptionStatus: string }[]>`SELECT plan, subscription_status FROM organizations WHERE id = ${workspaceId}`;
  if (workspace!.subscriptionStatus !== 'active') {
    return { code: 'PAYMENT_REQUIRED', message: 'The workspace has no active subscription: the post cannot be made live until it has one' };
  }
  const unspent = await tx<{ platform: Platform }[]>`
    UPDATE schedules s SET quota_spent = true FROM integrations i
    WHERE s.post_id = ${postId} AND s.thread_order = 0 AND s.status = 'SCHEDULED' AND NOT s.quota_spent AND i.id = s.integration_id
    RETURNING i.platform`;
  const posts: Partial<Record<Platform, number>> = {};
  for (const { platform } of unspent) posts[platform] = (posts[platform] ?? 0) + 1;
  const refusal = await spendQuotas(tx, { id: workspaceId, plan: workspace!.plan }, posts);
  if (refusal) return { code: 'POST_QUOTA_EXCEEDED', message: refusal };
  const schedules = await tx<{ id: string; thread: string; threadOrder: number; status: string }[]>`
    UPDATE schedules SET approval_status = 'approved', approval_completed_at = now(),
      scheduled_at = CASE WHEN status = 'SCHEDULED' AND scheduled_at < now() THEN date_trunc('milliseconds', now()) ELSE scheduled_at END
    WHERE post_id = ${postId} RETURNING id, coalesce(thread_root_schedule_id, id) AS thread, thread_order, status`;
  const live = schedules.filter((schedule) => schedule.status === 'SCHEDULED');
  // Each thread's job: its first schedule not yet published, when that one is due to go (a thread sent back to review
  // mid-way resumes at its next part; one whose earlier part FAILED waits for that part's retry).
  const firsts = new Map<string, { id: string; threadOrder: number; status: string }>();
  for (const schedule of schedules) {
    const first = firsts.get(schedule.thread);
    if (schedule.status !== 'PUBLISHED' && (!first || schedule.threadOrder < first.threadOrder)) firsts.set(schedule.thread, schedule);
  }
  await tx`UPDATE posts SET approval_status = 'approved', approval_completed_at = now(), approval_reviewer_id = ${review.reviewerId},
    approval_note = ${review.note}, updated_at = now() WHERE id = ${postId}`;
  await enqueuePublish(tx, [...firsts.values()].filter((schedule) => schedule.status === 'SCHEDULED').map((schedule) => schedule.id));
  await recordPostEvents(tx, storage, workspaceId, 'post.approved', [postId]);
  await recordScheduleEvents(tx, storage, 'schedule.scheduled', live.map((schedule) => schedule.id));
  return undefined;
}

/** Rejects the post `postId` (locked, pending_review), keeping who and why; writes post.rejected. */
export async function reject(tx: Sql, storage: Storage, workspaceId: string, postId: string, review: { reviewerId: string; note: string | null }): Promise<void> {
  await tx`UPDATE schedules SET approval_status = 'rejected', approval_completed_at = now() WHERE post_id = ${postId}`;
  await tx`UPDATE posts SET approval_status = 'rejected', approval_completed_at = now(), approval_reviewer_id = ${review.reviewerId},
    approval_note = ${review.note}, updated_at = now() WHERE id = ${postId}`;
  await recordPostEvents(tx, storage, workspaceId, 'post.rejected', [postId]);
}

/** Whether `principal` may review a post that names `approverIds`: one of them, a workspace owner, or the admin command. */
export async function mayReview(tx: Sql, principal: Principal, approverIds: string[]): Promise<boolean> {
  return principal.kind === 'admin' || approverIds.includes(principal.userId) || isOwner(tx, principal);
}
