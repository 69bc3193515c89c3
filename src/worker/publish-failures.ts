import { markConnectionFailed } from '../channels/open-account.js';
import { noDetail, PlatformError, type FailureDetail } from '../platforms/index.js';
import type { AppContext } from '../registry/context.js';
import { changeSchedules } from '../../operations/events/event.js';
import { requeuePublish } from './queue.js';

/**
 * The publish task's failure policy (docs/publishing.md): which failures are retried, when, and how often; what a
 * schedule and the thread parts after it become when one is not; and what a first comment's failure leaves.
 */

export const MAX_RETRIES = 3;
/** 30 s, 2 min, 8 min: long enough for a platform's bad minute, short enough that a post is not hours late. */
export const retryDelayMs = (retriesDone: number) => 30_000 * 4 ** retriesDone;

/** What the policy reads of the schedule whose attempt failed. */
export interface FailingSchedule {
  id: string;
  integrationId: string;
  threadRootScheduleId: string | null;
  threadOrder: number;
  retryCount: number;
  /** Set when an attempt sent the post to a platform that cannot be asked, and no answer settled it (sendMarked, src/worker/publish-schedule.ts). */
  postSentAt: Date | null;
}

/**
 * What a failed attempt leaves: a later retry (transient, within bounds) or FAILED, with the parts after it. Where the
 * platform cannot be asked (`canLookUp` false), an unknown outcome is retried only when it was the first attempt. An
 * attempt cut short by the worker stopping (its abort signal, src/worker/index.ts) is no failure of the platform's:
 * the schedule goes back to SCHEDULED, due now for another worker (or this one once restarted), its retries unspent;
 * its next attempt looks the record up first (or, without a lookup, sends it as one that may exist already).
 */
export async function fail(app: AppContext, schedule: FailingSchedule, error: PlatformError, signal: AbortSignal, canLookUp: boolean): Promise<void> {
  if (signal.aborted && passing(error)) {
    app.logger.info('publish interrupted by the worker stopping; queued again', { scheduleId: schedule.id });
    await app.db.begin(async (tx) => {
      await changeSchedules(tx, app.storage, 'schedule.retrying', tx`
        UPDATE schedules SET status = 'SCHEDULED', updated_at = now() WHERE id = ${schedule.id} AND status = 'PUBLISHING' RETURNING *`);
      await requeuePublish(tx, [schedule.id]);
    });
    return;
  }
  const detail = app.db.json(storedDetail(error.detail) as never);
  // Sent before with no answer (post_sent_at at claim time), and no answer again: not sent a third time.
  const unknownAgain = error.kind === 'unknown' && !canLookUp && schedule.postSentAt !== null;
  const retry = passing(error) && schedule.retryCount < MAX_RETRIES && !unknownAgain;
  app.logger.warn(retry ? 'publish will be retried' : 'publish failed', {
    scheduleId: schedule.id,
    kind: error.kind,
    reason: error.message,
    status: error.detail.status,
    platformCode: error.detail.platformCode,
  });
  await app.db.begin(async (tx) => {
    if (retry) {
      const delayMs = Math.max(retryDelayMs(schedule.retryCount), error.retryAfterMs ?? 0);
      // Said at once, wherever the schedule shows, while it waits for its next attempt (cleared when one publishes it).
      const retrying = `${error.message}: attempt ${schedule.retryCount + 1} of ${MAX_RETRIES + 1} failed, and it is tried again automatically`;
      await changeSchedules(tx, app.storage, 'schedule.retrying', tx`
        UPDATE schedules SET status = 'SCHEDULED', retry_count = retry_count + 1, failure_reason = ${retrying}, failure_detail = ${detail},
          next_attempt_at = now() + ${delayMs} * interval '1 millisecond', updated_at = now()
        WHERE id = ${schedule.id} AND status = 'PUBLISHING' RETURNING *`);
      // Its job runs at next_attempt_at: the same now() of the same transaction.
      await requeuePublish(tx, [schedule.id], delayMs);
      return;
    }
    const reason = unknownAgain
      ? `${error.message}, again; the post may be live, and this platform cannot be asked: check it before retrying`
      : error.kind === 'unknown' || error.kind === 'transient'
        ? `${error.message} (gave up after ${MAX_RETRIES} retries)`
        : error.message;
    await changeSchedules(tx, app.storage, 'schedule.failed', tx`
      UPDATE schedules SET status = 'FAILED', failure_reason = ${reason}, failure_detail = ${detail}, updated_at = now()
      WHERE id = ${schedule.id} AND status = 'PUBLISHING' RETURNING *`);
    const root = schedule.threadRootScheduleId ?? schedule.id;
    await changeSchedules(tx, app.storage, 'schedule.failed', tx`
      UPDATE schedules SET status = 'FAILED', failure_reason = ${`Not published: part ${schedule.threadOrder} of the thread failed`}, updated_at = now()
      WHERE thread_root_schedule_id = ${root} AND thread_order > ${schedule.threadOrder} AND status = 'SCHEDULED' RETURNING *`);
    if (error.kind === 'credentials') await markConnectionFailed(tx, schedule.integrationId, error);
  });
}

/**
 * A first comment that failed after its post went out: what a retry can settle is left to it (the post is found, or
 * known, and only the comment is sent); otherwise the post is live, so the schedule is PUBLISHED with a note saying the
 * comment is not there, and the thread goes on.
 */
export async function commentRefused(app: AppContext, schedule: FailingSchedule, error: unknown, signal: AbortSignal): Promise<{ reason: string; detail: FailureDetail }> {
  if (!(error instanceof PlatformError)) throw error;
  const mayPass = passing(error);
  if (mayPass && (signal.aborted || schedule.retryCount < MAX_RETRIES)) throw error;
  app.logger.warn('first comment not published; the post is', { scheduleId: schedule.id, kind: error.kind, reason: error.message, status: error.detail.status });
  if (error.kind === 'credentials') await app.db.begin((tx) => markConnectionFailed(tx, schedule.integrationId, error));
  return {
    reason: `Published; its first comment was not: ${error.message}${mayPass ? ` (gave up after ${MAX_RETRIES} retries)` : ''}. Add it by hand if it is still wanted`,
    detail: error.detail,
  };
}


/** failureDetail as the Schedule declares it: `raw` (the platform's answer, often an object) as a JSON string. */
export const storedDetail = (detail: FailureDetail): FailureDetail => ({
  ...detail,
  raw: detail.raw === null || detail.raw === undefined || typeof detail.raw === 'string' ? (detail.raw ?? null) : JSON.stringify(detail.raw),
});
export const permanent = (message: string) => new PlatformError('permanent', message, noDetail);
/** A failure a later attempt may get past: nothing was written, or what was is found by then. */
export const passing = (error: PlatformError) => error.kind === 'transient' || error.kind === 'unknown';
