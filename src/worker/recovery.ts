import type { Database } from '../db/index.js';
import type { Storage } from '../storage/index.js';
import { scheduleNotHeld } from '../../operations/posts/approval.js';
import { changeSchedules } from '../../operations/events/event.js';
import { idOfJob, jobKey, requeuePublish, TASK } from './queue.js';

/**
 * Puts back to SCHEDULED every schedule PUBLISHING for longer than `staleMs` (its worker died mid-job: graphile-worker
 * would only retry the job hours later, and that job would find it PUBLISHING and do nothing), and queues the
 * first of each thread again. Their next attempt looks the record up before publishing: nothing is published twice.
 * Also queues a due thread part without a job that waits behind a part published more than `staleMs` ago: its worker
 * stopped between the two (a thread's parts have no job of their own; the job of its first schedule goes on from part
 * to part). And gives back to the queue the jobs a dead process had fetched into its local queue and never ran.
 */
export async function recoverAbandoned(db: Database, storage: Storage, staleMs: number): Promise<{ requeued: string[]; released: string[] }> {
  return db.begin(async (tx) => {
    // A live process hands out or gives back every job of its local queue within staleMs (src/worker/index.ts), and a
    // publish job it runs claims its schedule at once. So a due schedule still SCHEDULED whose job has been locked for
    // twice that was fetched by a process that died: every job that process locked goes back to the queue. So was a
    // webhook delivery's job locked that long: an attempt lasts WEBHOOK_TIMEOUT_MS at most (far less than staleMs).
    const [{ released }] = await tx<[{ released: string[] }]>`
      WITH dead AS (
        SELECT DISTINCT j.locked_by FROM graphile_worker.jobs j
        -- A key is read as a schedule's id only for a publish job: other keys are no uuid there.
        LEFT JOIN schedules s ON s.id = ${idOfJob(tx, TASK.publishSchedule, 'j')}
        WHERE j.locked_at < now() - ${2 * staleMs} * interval '1 millisecond'
          AND ((s.status = 'SCHEDULED' AND s.scheduled_at <= now())
            OR j.task_identifier = ${TASK.deliverWebhook}))
      SELECT coalesce(array_agg(locked_by), '{}') AS released, graphile_worker.force_unlock_workers(array_agg(locked_by)) FROM dead`;
    const reset = await changeSchedules<{ id: string }>(tx, storage, 'schedule.retrying', tx`
      UPDATE schedules SET status = 'SCHEDULED', updated_at = now()
      WHERE status = 'PUBLISHING' AND last_attempt < now() - ${staleMs} * interval '1 millisecond'
      RETURNING *`);
    const stranded = await tx<{ id: string }[]>`
      SELECT s.id FROM schedules s
      CROSS JOIN LATERAL (
        SELECT b.status, b.published_at FROM schedules b
        WHERE (b.id = s.thread_root_schedule_id OR b.thread_root_schedule_id = s.thread_root_schedule_id) AND b.thread_order < s.thread_order
        ORDER BY b.thread_order DESC LIMIT 1) before
      WHERE s.status = 'SCHEDULED' AND s.thread_root_schedule_id IS NOT NULL AND s.scheduled_at <= now()
        AND before.status = 'PUBLISHED' AND before.published_at < now() - ${staleMs} * interval '1 millisecond'
        -- A part with a job of its own (retried by a user, or waiting for its next retry) is left to it, and so is a
        -- part of a post sent back to review (its approval queues it again).
        AND NOT EXISTS (SELECT 1 FROM graphile_worker.jobs j WHERE j.key = ${jobKey(tx, TASK.publishSchedule, tx`s.id`)}) AND ${scheduleNotHeld(tx, 's')}`;
    const ids = [...reset, ...stranded].map((row) => row.id);
    const firsts = await tx<{ id: string }[]>`
      SELECT s.id FROM schedules s
      WHERE s.id = ANY(${ids}::uuid[]) AND NOT EXISTS (
        SELECT 1 FROM schedules e WHERE e.status = 'SCHEDULED' AND e.thread_order < s.thread_order
          AND (e.id = s.thread_root_schedule_id OR e.thread_root_schedule_id = s.thread_root_schedule_id))`;
    // Due now: they were due when they were claimed.
    await requeuePublish(tx, firsts.map((row) => row.id));
    return { requeued: ids, released };
  });
}
