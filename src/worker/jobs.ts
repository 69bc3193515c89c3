import { z } from 'zod';
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

/** The task that refreshes a channel's access token before it expires (src/worker/refresh.ts). */
export const REFRESH_TASK = 'refresh-credentials';

/** How long before expiry a token is refreshed: a week, or half its remaining life when that is shorter. */
export const refreshAt = (expiresAt: Date, now = Date.now()): Date =>
  new Date(Math.max(now, expiresAt.getTime() - Math.min(7 * 86_400_000, (expiresAt.getTime() - now) / 2)));

/** Queues (or moves) the refresh of `integrationId`'s token, in the transaction that stored the token. */
export async function enqueueRefresh(tx: Sql, integrationId: string, expiresAt: Date): Promise<void> {
  await tx`SELECT graphile_worker.add_job(${REFRESH_TASK}, json_build_object('integrationId', ${integrationId}::uuid),
    run_at := ${refreshAt(expiresAt)}, job_key := ${`${REFRESH_TASK}:${integrationId}`})`;
}

/** The task that erases and revokes the tokens of channels left PENDING_SELECTION too long (src/worker/pending-selection.ts). */
export const PENDING_SELECTION_EXPIRY_TASK = 'expire-pending-selections';

/** The task that folds the posts list's counters (post_facet_counts, post_day_counts: src/worker/post-counts.ts); its id predates the second. */
export const COMPACT_POST_COUNTS_TASK = 'compact-post-facet-counts';

/** The task that deletes events past their retention (src/worker/prune-events.ts). */
export const PRUNE_EVENTS_TASK = 'prune-events';
/** The task that runs one recycle rule for one period (src/worker/recycle.ts), and the one that queues every rule's due run. */
export const RECYCLE_TASK = 'recycle-rule';
export const RECYCLE_SWEEP_TASK = 'recycle-evergreen';
/** The task that warns of tokens about to expire that cannot be refreshed (src/worker/expiring-tokens.ts). */
export const EXPIRING_TOKENS_TASK = 'warn-expiring-tokens';

/**
 * The worker's periodic tasks, in graphile-worker's crontab format: each tick queues one job, whichever workers run.
 * A tick missed while no worker ran is not made up for: the next one covers it.
 */
export const CRONTAB = [
  `*/10 * * * * ${PENDING_SELECTION_EXPIRY_TASK}`,
  `* * * * * ${COMPACT_POST_COUNTS_TASK}`,
  `17 * * * * ${PRUNE_EVENTS_TASK}`,
  `7 * * * * ${EXPIRING_TOKENS_TASK}`,
  `*/10 * * * * ${RECYCLE_SWEEP_TASK}`,
].join('\n');

/** The payload of a job the crontab queued (graphile-worker adds `_cron`); nothing when queued by hand. */
export const CronPayload = z.strictObject({ _cron: z.object({ ts: z.string(), backfilled: z.boolean().optional() }).optional() });

/** The task that makes a media's variants (src/worker/variants.ts). */
export const VARIANTS_TASK = 'media-variants';
/** The task that removes an upload never completed, once its URL has expired (src/worker/upload-expiry.ts). */
export const UPLOAD_EXPIRY_TASK = 'upload-expiry';

/** Queues the variants of `mediaId`, in the transaction that creates it. */
export async function enqueueVariants(tx: Sql, mediaId: string): Promise<void> {
  await tx`SELECT graphile_worker.add_job(${VARIANTS_TASK}, json_build_object('mediaId', ${mediaId}::uuid),
    job_key := ${`${VARIANTS_TASK}:${mediaId}`}, max_attempts := 5)`;
}

/**
 * Queues the clean-up of an upload a minute after its URL expires (a PUT that began before the expiry has ended by
 * then), in the transaction that creates it. Its reservation lapses at the expiry by itself; this removes the object.
 */
export async function enqueueUploadExpiry(tx: Sql, uploadId: string, expiresAt: Date): Promise<void> {
  await tx`SELECT graphile_worker.add_job(${UPLOAD_EXPIRY_TASK}, json_build_object('uploadId', ${uploadId}::uuid),
    run_at := ${expiresAt}::timestamptz + interval '1 minute', job_key := ${`${UPLOAD_EXPIRY_TASK}:${uploadId}`})`;
}

/** The task that sends one webhook delivery (src/worker/deliver-webhook.ts); the events trigger queues it too (migrations/017_webhooks.sql). */
export const DELIVER_TASK = 'deliver-webhook';

/** Queues (or moves) the attempt of delivery `deliveryId`, at `runAt` or now. */
export async function enqueueDelivery(tx: Sql, deliveryId: string, runAt?: Date): Promise<void> {
  await tx`SELECT graphile_worker.add_job(${DELIVER_TASK}, json_build_object('deliveryId', ${deliveryId}::uuid),
    run_at := coalesce(${runAt ?? null}::timestamptz, now()), job_key := ${`${DELIVER_TASK}:${deliveryId}`})`;
}
