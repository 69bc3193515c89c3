import type { Sql } from '../db/index.js';

/** The task that publishes a schedule (its file arrives with the publishing engine). */
export const PUBLISH_TASK = 'publish-schedule';

/** One job per schedule, found again by its key: rescheduling replaces it, cancelling removes it. */
export const publishJobKey = (scheduleId: string): string => `${PUBLISH_TASK}:${scheduleId}`;

/**
 * Queues (or moves, as job keys replace) the publish job of each SCHEDULED schedule among `scheduleIds`, due at
 * its `scheduled_at`. Call it in the transaction that made them due, so the job exists exactly when they do.
 */
export async function enqueuePublish(tx: Sql, scheduleIds: string[]): Promise<void> {
  if (scheduleIds.length === 0) return;
  await tx`
    SELECT graphile_worker.add_job(${PUBLISH_TASK}, json_build_object('scheduleId', id),
      run_at := scheduled_at, job_key := ${`${PUBLISH_TASK}:`} || id)
    FROM schedules WHERE id = ANY(${scheduleIds}::uuid[]) AND status = 'SCHEDULED'`;
}

/** Removes the publish jobs of `scheduleIds` (cancelled, deleted, or no longer due). Same transaction rule. */
export async function cancelPublish(tx: Sql, scheduleIds: string[]): Promise<void> {
  if (scheduleIds.length === 0) return;
  await tx`SELECT graphile_worker.remove_job(${`${PUBLISH_TASK}:`} || id) FROM unnest(${scheduleIds}::uuid[]) AS id`;
}
