import type { PendingQuery, Row } from 'postgres';
import { z } from 'zod';
import type { Sql } from '../db/index.js';

/**
 * Every job is queued here: the tasks' ids (each task's file is named by its id), the one way a job's key is made, and
 * every `graphile_worker.add_job` of ours. A job is queued in the transaction of the rows it concerns, so it exists
 * exactly when they do; its key (`<task id>:<id>`) makes it one job per thing, which queueing again moves and a
 * removal by key cancels. (The events trigger queues deliveries too, in SQL: migrations/017_webhooks.sql.)
 */
export const TASK = {
  publishSchedule: 'publish-schedule',
  refreshCredentials: 'refresh-credentials',
  mediaVariants: 'media-variants',
  uploadExpiry: 'upload-expiry',
  expirePendingSelections: 'expire-pending-selections',
  // Its id predates the second counter it folds (post_day_counts).
  compactPostFacetCounts: 'compact-post-facet-counts',
  deliverWebhook: 'deliver-webhook',
  warnExpiringTokens: 'warn-expiring-tokens',
  pruneEvents: 'prune-events',
  pruneOAuth: 'prune-oauth',
  refreshInstanceLimits: 'refresh-instance-limits',
  recycleEvergreen: 'recycle-evergreen',
  recycleRule: 'recycle-rule',
} as const;

export type TaskId = (typeof TASK)[keyof typeof TASK];

/** The key of `task`'s job for `id` (a uuid, as a value or a column): `<task id>:<id>`. */
export const jobKey = (sql: Sql, task: TaskId, id: PendingQuery<Row[]>) => sql`(${`${task}:`} || ${id})`;

/** The id a job of `task` was queued for, read back from its key (`j.key`), or null for a job of another task. */
export const idOfJob = (sql: Sql, task: TaskId, job: string) =>
  sql`CASE WHEN ${sql(job)}.task_identifier = ${task} AND ${sql(job)}.key LIKE ${`${task}:%`} THEN substr(${sql(job)}.key, ${task.length + 2})::uuid END`;

/**
 * `graphile_worker.add_job(...)` of `task` for `id`, with `payload` (a JSON expression), at `runAt` (a timestamp
 * expression; now when absent). A fragment, so that one statement may queue a job per row it selects.
 */
function addJob(sql: Sql, task: TaskId, id: PendingQuery<Row[]>, payload: PendingQuery<Row[]>, options: { runAt?: PendingQuery<Row[]>; maxAttempts?: number } = {}) {
  const runAt = options.runAt ? sql`, run_at := ${options.runAt}` : sql``;
  const maxAttempts = options.maxAttempts ? sql`, max_attempts := ${options.maxAttempts}::int` : sql``;
  return sql`graphile_worker.add_job(${task}, ${payload}${runAt}, job_key := ${jobKey(sql, task, id)}${maxAttempts})`;
}

/** A single id, as addJob and jobKey take one. */
const value = (sql: Sql, id: string) => sql`${id}::uuid`;

/** Removes the jobs of `task` for `ids`. */
async function removeJobs(tx: Sql, task: TaskId, ids: string[]): Promise<void> {
  if (ids.length === 0) return;
  await tx`SELECT graphile_worker.remove_job(${jobKey(tx, task, tx`id`)}) FROM unnest(${ids}::uuid[]) AS id`;
}

/**
 * Queues (or moves) the publish job of each SCHEDULED schedule among `scheduleIds`, due at its `scheduled_at`, in the
 * transaction that made them due.
 */
export async function enqueuePublish(tx: Sql, scheduleIds: string[]): Promise<void> {
  if (scheduleIds.length === 0) return;
  await tx`
    SELECT ${addJob(tx, TASK.publishSchedule, tx`id`, tx`json_build_object('scheduleId', id)`, { runAt: tx`scheduled_at` })}
    FROM schedules WHERE id = ANY(${scheduleIds}::uuid[]) AND status = 'SCHEDULED'`;
}

/**
 * Queues the publish job of each of `scheduleIds` again, whatever their status (the publish task and the recovery
 * sweep, which have just put them back): at once, or after `delayMs`. The running job's key is taken over by the new
 * job (graphile-worker frees the key of a locked job).
 */
export async function requeuePublish(tx: Sql, scheduleIds: string[], delayMs = 0): Promise<void> {
  if (scheduleIds.length === 0) return;
  const runAt = delayMs > 0 ? { runAt: tx`now() + ${delayMs} * interval '1 millisecond'` } : {};
  await tx`SELECT ${addJob(tx, TASK.publishSchedule, tx`id`, tx`json_build_object('scheduleId', id)`, runAt)} FROM unnest(${scheduleIds}::uuid[]) AS id`;
}

/**
 * Removes the publish jobs of `scheduleIds` (cancelled, deleted, or no longer due), in the same transaction: a retry
 * whose job is gone has no next attempt (next_attempt_at cleared).
 */
export async function cancelPublish(tx: Sql, scheduleIds: string[]): Promise<void> {
  if (scheduleIds.length === 0) return;
  await tx`UPDATE schedules SET next_attempt_at = NULL WHERE id = ANY(${scheduleIds}::uuid[]) AND next_attempt_at IS NOT NULL`;
  await removeJobs(tx, TASK.publishSchedule, scheduleIds);
}

/** How long before expiry a token is refreshed: a week, or half its remaining life when that is shorter. */
const refreshAt = (expiresAt: Date, now = Date.now()): Date =>
  new Date(Math.max(now, expiresAt.getTime() - Math.min(7 * 86_400_000, (expiresAt.getTime() - now) / 2)));

/** Queues (or moves) the refresh of `integrationId`'s token, in the transaction that stored the token. */
export async function enqueueRefresh(tx: Sql, integrationId: string, expiresAt: Date): Promise<void> {
  const id = value(tx, integrationId);
  await tx`SELECT ${addJob(tx, TASK.refreshCredentials, id, tx`json_build_object('integrationId', ${id})`, { runAt: tx`${refreshAt(expiresAt)}::timestamptz` })}`;
}

/** Removes the refresh of `integrationId`'s token (its credentials forgotten), in the same transaction. */
export const cancelRefresh = (tx: Sql, integrationId: string): Promise<void> => removeJobs(tx, TASK.refreshCredentials, [integrationId]);

/** Queues a reading of the limits of `integrationId`'s Mastodon instance now (nothing for a channel on no instance). */
export async function enqueueInstanceRead(tx: Sql, integrationId: string): Promise<void> {
  await tx`
    SELECT ${addJob(tx, TASK.refreshInstanceLimits, tx`i.instance_host`, tx`json_build_object('host', i.instance_host)`)}
    FROM integrations i WHERE i.id = ${integrationId} AND i.instance_host IS NOT NULL`;
}

/** Queues the variants of `mediaId`, in the transaction that creates it. */
export async function enqueueVariants(tx: Sql, mediaId: string): Promise<void> {
  const id = value(tx, mediaId);
  await tx`SELECT ${addJob(tx, TASK.mediaVariants, id, tx`json_build_object('mediaId', ${id})`, { maxAttempts: 5 })}`;
}

/**
 * Queues the clean-up of an upload a minute after its URL expires (a PUT that began before the expiry has ended by
 * then), in the transaction that creates it. Its reservation lapses at the expiry by itself; this removes the object.
 */
export async function enqueueUploadExpiry(tx: Sql, uploadId: string, expiresAt: Date): Promise<void> {
  const id = value(tx, uploadId);
  await tx`SELECT ${addJob(tx, TASK.uploadExpiry, id, tx`json_build_object('uploadId', ${id})`, { runAt: tx`${expiresAt}::timestamptz + interval '1 minute'` })}`;
}

/** Queues (or moves) the attempt of delivery `deliveryId`, at `runAt` or now. */
export async function enqueueDelivery(tx: Sql, deliveryId: string, runAt?: Date): Promise<void> {
  const id = value(tx, deliveryId);
  await tx`SELECT ${addJob(tx, TASK.deliverWebhook, id, tx`json_build_object('deliveryId', ${id})`, { runAt: tx`coalesce(${runAt ?? null}::timestamptz, now())` })}`;
}

/** The deliveries' attempts of `rows` (a relation of `id`, `run_at`), as an aggregate: how many were queued. */
export const deliveriesQueued = (sql: Sql) =>
  sql`count(${addJob(sql, TASK.deliverWebhook, sql`id`, sql`json_build_object('deliveryId', id)`, { runAt: sql`run_at` })})`;

/**
 * Queues the run of `ruleId` for its current period (when it has not run in it), in the caller's transaction; without
 * `ruleId`, of every enabled rule whose job is not there already. One job a rule (its job key): queueing again only
 * moves it, and the run itself happens once a period (recycle_runs).
 */
export async function enqueueRecycle(tx: Sql, ruleId?: string): Promise<void> {
  // The sweep (no ruleId) leaves a rule whose job is still there alone: queueing it again would reset its attempts.
  await tx`
    SELECT ${addJob(tx, TASK.recycleRule, tx`r.id`, tx`json_build_object('ruleId', r.id, 'period', p.period)`)}
    FROM recycle_rules r JOIN organizations o ON o.id = r.organization_id
    CROSS JOIN LATERAL (SELECT recycle_period(r.frequency, o.time_zone, now()) AS period) p
    WHERE r.enabled ${ruleId ? tx`AND r.id = ${ruleId}` : tx`AND NOT EXISTS (SELECT 1 FROM graphile_worker.jobs j WHERE j.key = ${jobKey(tx, TASK.recycleRule, tx`r.id`)})`}
      AND NOT EXISTS (SELECT 1 FROM recycle_runs WHERE rule_id = r.id AND period = p.period)`;
}

/** Removes the queued run of `ruleId` (deleted or disabled), in the caller's transaction. */
export const cancelRecycle = (tx: Sql, ruleId: string): Promise<void> => removeJobs(tx, TASK.recycleRule, [ruleId]);

/**
 * The worker's periodic tasks, in graphile-worker's crontab format: each tick queues one job, whichever workers run.
 * A tick missed while no worker ran is not made up for: the next one covers it.
 */
export const CRONTAB = [
  `*/10 * * * * ${TASK.expirePendingSelections}`,
  `* * * * * ${TASK.compactPostFacetCounts}`,
  `17 * * * * ${TASK.pruneEvents}`,
  `37 * * * * ${TASK.pruneOAuth}`,
  `23 4 * * * ${TASK.refreshInstanceLimits}`,
  `7 * * * * ${TASK.warnExpiringTokens}`,
  `*/10 * * * * ${TASK.recycleEvergreen}`,
].join('\n');

/** The payload of a job the crontab queued (graphile-worker adds `_cron`); nothing when queued by hand. */
export const CronPayload = z.strictObject({ _cron: z.object({ ts: z.string(), backfilled: z.boolean().optional() }).optional() });
