import type { Sql } from '../../src/db/index.js';
import { NOT_FOUND_MESSAGE } from '../../src/registry/errors.js';
import type { ScheduleStatus } from '../posts/post.js';
import { waitingReason, type ApprovalStatus } from '../posts/approval.js';

/**
 * The schedule state machine: for each operation that moves a schedule, the statuses it moves from and the
 * status each becomes (null: the schedule is deleted). Any other status answers 409 INVALID_STATE. The
 * publishing engine owns the rest: SCHEDULED → PUBLISHING → PUBLISHED or FAILED. docs/api.md shows this table.
 */
export const MOVES = {
  reschedule: { DRAFT: 'DRAFT', SCHEDULED: 'SCHEDULED', FAILED: 'SCHEDULED' },
  retry: { FAILED: 'SCHEDULED' },
  cancel: { DRAFT: null, SCHEDULED: null, FAILED: null },
} as const satisfies Record<string, Partial<Record<ScheduleStatus, ScheduleStatus | null>>>;

export type Move = keyof typeof MOVES;

/**
 * The SET items by which retry and reschedule make a FAILED schedule live again as new: SCHEDULED, its failure cleared,
 * its automatic retries renewed. Any other status is kept as it is. A waiting automatic retry's time (next_attempt_at)
 * is cleared whatever the status: the publish job moves to the time given.
 */
export const liveAgain = (tx: Sql) => tx`
  status = CASE status WHEN 'FAILED' THEN 'SCHEDULED' ELSE status END,
  failure_reason = CASE status WHEN 'FAILED' THEN NULL ELSE failure_reason END,
  failure_detail = CASE status WHEN 'FAILED' THEN NULL ELSE failure_detail END,
  retry_count = CASE status WHEN 'FAILED' THEN 0 ELSE retry_count END,
  next_attempt_at = NULL`;

export interface LockedSchedule {
  id: string;
  status: ScheduleStatus;
  threadRootScheduleId: string | null;
  threadOrder: number;
  subscriptionStatus: 'active' | 'none';
  approvalStatus: ApprovalStatus | null;
}

type Refusal = { code: 'NOT_FOUND' | 'INVALID_STATE' | 'PAYMENT_REQUIRED'; message: string };

/**
 * Locks the schedule for the rest of the transaction and says where `move` takes it, or why it cannot: the
 * publishing task's claim (a compare-and-set on SCHEDULED) waits for the lock, then finds the new status.
 */
export async function lockForMove(
  tx: Sql,
  workspaceId: string,
  id: string,
  move: Move,
): Promise<{ schedule: LockedSchedule; next: ScheduleStatus | null } | Refusal> {
  const [schedule] = await tx<LockedSchedule[]>`
    SELECT s.id, s.status, s.thread_root_schedule_id, s.thread_order, o.subscription_status, s.approval_status
    FROM schedules s JOIN organizations o ON o.id = s.organization_id
    WHERE s.id = ${id} AND s.organization_id = ${workspaceId}
    FOR NO KEY UPDATE OF s`;
  if (!schedule) return { code: 'NOT_FOUND', message: NOT_FOUND_MESSAGE };
  const moves: Partial<Record<ScheduleStatus, ScheduleStatus | null>> = MOVES[move];
  const next = moves[schedule.status];
  if (next === undefined) {
    const allowed = Object.keys(moves).join(', ');
    return { code: 'INVALID_STATE', message: `The schedule is ${schedule.status}; ${move} applies only to a schedule that is ${allowed}` };
  }
  // A held post's schedules have no publish job: moving one must not give it one.
  const held = next !== null ? waitingReason(schedule.approvalStatus) : undefined;
  if (held) return { code: 'INVALID_STATE', message: `The schedule cannot be ${move === 'retry' ? 'retried' : 'rescheduled'}: ${held}` };
  if (next === 'SCHEDULED' && schedule.status !== 'SCHEDULED' && schedule.subscriptionStatus !== 'active') {
    return { code: 'PAYMENT_REQUIRED', message: `The workspace has no active subscription: a ${schedule.status} schedule cannot be made live` };
  }
  return { schedule, next };
}
