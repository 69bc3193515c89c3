import type { JobHelpers, Task } from 'graphile-worker';
import { z } from 'zod';
import type { Database, Sql } from '../db/index.js';
import { openAccount, type StoredIntegration } from '../channels/open-account.js';
import { noDetail, PlatformError, TEXT_TOO_LONG, type FailureDetail, type OutgoingImage, type OutgoingPost, type PostKey, type PublishedPost, type PublishingAccount } from '../platforms/index.js';
import type { AppContext } from '../registry/context.js';
import { commentRefused, fail, permanent, storedDetail, type FailingSchedule } from './publish-failures.js';
import { enqueueInstanceRead, TASK } from './queue.js';
import { channelLimits, type InstanceLimits } from '../platforms/rules.js';
import { threadTextOf } from '../platforms/detected-languages.js';
import { scheduleNotHeld } from '../../operations/posts/approval.js';
import { scheduleEvents } from '../../operations/events/event.js';
import { defineTask } from './task.js';

/**
 * The publish-schedule task: publishes one due schedule and then the parts of its thread after it, each exactly
 * once. The policy, in docs/publishing.md:
 * - A schedule is claimed by a compare-and-set (SCHEDULED → PUBLISHING); a job that finds it in any other state does
 *   nothing, so two workers or a stale job never both publish.
 * - Every record's key on the platform is derived from its schedule (recordKey in src/platforms/bluesky.ts): the
 *   platform refuses a second record under it, and an unknown outcome is settled by looking it up.
 * - Transient failures put the schedule back to SCHEDULED with a later job, MAX_RETRIES times at most; permanent
 *   ones (content refused, credentials revoked) fail it at once, and the thread parts after it with it.
 * - A schedule left PUBLISHING by a crashed worker is put back to SCHEDULED by recoverAbandoned, and its next attempt
 *   looks the record up before publishing anything.
 * - Where the platform cannot be asked (an account without `lookUp`, LinkedIn), every send is marked first
 *   (post_sent_at, first_comment_sent_at; cleared when the platform refused it, so nothing was written). A post sent
 *   with no answer is retried once only: the retry is sent with `mayExist`, and the platform's refusal of a duplicate
 *   fails the schedule saying the post is probably live. A post the platform confirmed earlier (its id stored) is never
 *   sent again. A first comment is sent at most once: when its answer is lost, or the worker stopped after sending it,
 *   the schedule is PUBLISHED (the post is live) with a failureReason saying the comment may or may not be there.
 * - An account without `lookUp` that can find what it sent (`findSent`, Mastodon) is asked before a marked post or
 *   first comment is sent again, and sends it again under the same mark when it has none: its unknown outcomes are
 *   retried as Bluesky's are. Thread parts retried on their own reply under the ids stored at confirmation.
 */

const Payload = z.strictObject({ scheduleId: z.uuid() });

interface Claimed extends FailingSchedule {
  postId: string;
  scheduledContent: string;
  firstComment: string | null;
  settings: Record<string, unknown>;
  createdAt: Date;
  /** Set when an earlier attempt began: the record may exist already, so it is looked up before anything is sent. */
  previousAttempt: Date | null;
  /** Stored the moment the platform confirmed the post, by an earlier attempt when set at claim time. */
  platformPostId: string | null;
  releaseUrl: string | null;
  /** Whether a thread part follows this schedule (saves a claim that would find none). */
  hasNextPart: boolean;
  /** Whether its post has images (saves their query for the many posts without). */
  hasImages: boolean;
  /** Its channel's platform and credentials, read with the claim (saves a query per job). */
  platform: StoredIntegration['platform'];
  tokenStatus: string;
  connectStatus: string;
  credentials: Buffer | null;
  /** What its language tags come from when its settings name none (Bluesky): read with the claim. */
  threadSettings: Record<string, unknown> | null;
  workspaceLanguages: string[];
  threadText: string;
  /** The language detected from threadText when it was written, and whether it was (detected_languages). */
  detectedLanguage: string | null;
  languageKnown: boolean;
  /** Set when an attempt sent the first comment to a platform that cannot be asked, and no answer settled it (see sendMarked). */
  firstCommentSentAt: Date | null;
  /** What those sends were known by on the platform before their answers (a Threads container), when kept. */
  postSentRef: string | null;
  firstCommentSentRef: string | null;
  /** Its Mastodon instance's limits as last read (null elsewhere, or not read yet). */
  instanceLimits: Partial<InstanceLimits> | null;
}

function publishScheduleTask(app: AppContext): Task {
  return async (payload, helpers: JobHelpers) => {
    const { scheduleId } = Payload.parse(payload);
    await publishFrom(app, scheduleId, helpers.abortSignal ?? new AbortController().signal);
  };
}

/**
 * SCHEDULED → PUBLISHING for the one due schedule `where` selects, with its schedule.publishing event, or nothing when
 * another worker or a user moved it.
 */
async function claim(app: AppContext, where: ReturnType<Sql>): Promise<Claimed | undefined> {
  const { db, storage } = app;
  const [claimed] = await db<Claimed[]>`
    WITH claimed AS (
      -- An attempt that begins is the next attempt a retry waited for: next_attempt_at is set again only by a retry
      -- (publish-failures.ts), so it is null once the schedule publishes or fails for good.
      UPDATE schedules s SET status = 'PUBLISHING', last_attempt = now(), next_attempt_at = NULL, updated_at = now()
      FROM (SELECT id, last_attempt FROM schedules WHERE ${where}) before
      -- Due, too: a job taken just before a reschedule moved its schedule later must leave it to the new job.
      WHERE s.id = before.id AND s.status = 'SCHEDULED' AND s.scheduled_at <= now()
        -- Never a post held for review, whatever job asks (approval queues the jobs: operations/posts/approval.ts).
        AND ${scheduleNotHeld(db, 's')}
      RETURNING s.*, before.last_attempt AS previous_attempt),
    recorded AS (${scheduleEvents(db, storage, 'schedule.publishing', db`claimed`)})
    SELECT s.id, s.post_id, s.integration_id, s.scheduled_content, s.first_comment, s.settings, s.thread_root_schedule_id, s.thread_order,
      s.created_at, s.retry_count, s.previous_attempt, s.platform_post_id, s.release_url, s.post_sent_at, s.first_comment_sent_at,
      s.post_sent_ref, s.first_comment_sent_ref,
      EXISTS (SELECT 1 FROM schedules n WHERE n.thread_root_schedule_id = coalesce(s.thread_root_schedule_id, s.id)
        AND n.thread_order > s.thread_order) AS has_next_part,
      EXISTS (SELECT 1 FROM attachments a WHERE a.post_id = s.post_id) AS has_images,
      (SELECT r.settings FROM schedules r WHERE r.id = s.thread_root_schedule_id) AS thread_settings,
      (SELECT o.languages FROM organizations o WHERE o.id = s.organization_id) AS workspace_languages,
      thread.text AS thread_text, d.language AS detected_language, d.text_md5 IS NOT NULL AS language_known,
      i.platform, i.token_status, i.connect_status, i.credentials, mi.limits AS instance_limits
    FROM claimed s JOIN integrations i ON i.id = s.integration_id
    LEFT JOIN mastodon_instances mi ON mi.host = i.instance_host
    CROSS JOIN LATERAL (SELECT ${threadTextOf(db, db`coalesce(s.thread_root_schedule_id, s.id)`)} AS text) thread
    LEFT JOIN detected_languages d ON d.text_md5 = md5(thread.text)::uuid`;
  return claimed;
}

async function publishFrom(app: AppContext, scheduleId: string, signal: AbortSignal): Promise<void> {
  const { db } = app;
  const schedule = await claim(app, db`id = ${scheduleId}`);
  if (!schedule) return;
  // A live attempt says so (last_attempt of the thread's part being published) well within PUBLISH_STALE_MS, however
  // many slow calls it makes (images, a thread): recoverAbandoned takes only a schedule whose worker stopped saying it.
  const thread = schedule.threadRootScheduleId ?? schedule.id;
  const heartbeat = setInterval(() => {
    db`UPDATE schedules SET last_attempt = now() WHERE (id = ${thread} OR thread_root_schedule_id = ${thread}) AND status = 'PUBLISHING'`.catch(
      (error: unknown) => app.logger.warn('a publishing heartbeat was not written', { scheduleId, error }),
    );
  }, Math.max(250, app.config.publishStaleMs / 3));
  try {
    await publishClaimed(app, schedule, signal);
  } finally {
    clearInterval(heartbeat);
  }
}

/** Publishes a claimed schedule, then the thread parts after it. */
async function publishClaimed(app: AppContext, first: Claimed, signal: AbortSignal): Promise<void> {
  const { db } = app;
  let schedule = first;
  let opened: Awaited<ReturnType<typeof openAccount>>;
  try {
    opened = await openAccount(app, schedule.integrationId, signal, schedule);
  } catch (error) {
    if (error instanceof PlatformError) return fail(app, schedule, error, signal, true);
    throw error;
  }
  const { account, label } = opened;

  const threadRoot = schedule.threadRootScheduleId ?? schedule.id;
  let root: PublishedPost | undefined;
  let parent: PublishedPost | undefined;
  try {
    if (schedule.threadRootScheduleId) {
      // A part retried on its own replies under the records of the thread's first post and the part before it (a part
      // deleted in between is skipped: the thread goes on without it): looked up where the platform can be asked, else
      // as stored when the platform confirmed them.
      const find = async (id: string) => (account.lookUp ? account.lookUp(await keyOf(db, id)) : confirmedPost(db, id));
      root = (await find(threadRoot)) ?? undefined;
      const before = await db<{ id: string }[]>`
        SELECT id FROM schedules WHERE thread_root_schedule_id = ${threadRoot} AND thread_order < ${schedule.threadOrder}
        ORDER BY thread_order DESC LIMIT 1`;
      parent = before[0] ? ((await find(before[0].id)) ?? undefined) : root;
      if (!root || !parent) throw permanent(`The ${before[0] ? 'part' : 'post'} this part replies to is not on ${label}: publish it first`);
    }
    for (;;) {
      const replyTo = root && parent ? { root, parent } : undefined;
      const published = await publishOne(app, account, label, schedule, replyTo, signal);
      root ??= published;
      parent = published;
      if (!schedule.hasNextPart) return;
      const next = await claim(app, db`thread_root_schedule_id = ${threadRoot} AND thread_order = (
        SELECT min(thread_order) FROM schedules WHERE thread_root_schedule_id = ${threadRoot} AND thread_order > ${schedule.threadOrder})`);
      if (!next) return;
      schedule = next;
    }
  } catch (error) {
    if (!(error instanceof PlatformError)) throw error; // left PUBLISHING: recoverAbandoned settles it
    // "Too long" by limits this service thought it met: the instance changed them; read them again now, not tomorrow.
    if (error.detail.platformCode === TEXT_TOO_LONG) await enqueueInstanceRead(db, schedule.integrationId);
    await fail(app, schedule, error, signal, account.lookUp !== undefined || account.findSent !== undefined);
  }
}

/** Publishes the schedule's post (and first comment), or finds them published by an earlier attempt. */
async function publishOne(
  app: AppContext,
  account: PublishingAccount,
  label: string,
  schedule: Claimed,
  replyTo: { root: PublishedPost; parent: PublishedPost } | undefined,
  signal: AbortSignal,
) {
  const { db } = app;
  const key: PostKey = { scheduleId: schedule.id, createdAt: schedule.createdAt, kind: 'post' };
  // Without lookUp, a retry after a send whose answer was lost may meet its own earlier post: the adapter reads a
  // duplicate refusal as such.
  const mayExist = !account.lookUp && schedule.postSentAt !== null;
  const confirmed = !account.lookUp && schedule.platformPostId ? { id: schedule.platformPostId, url: schedule.releaseUrl ?? '', ref: schedule.platformPostId } : null;
  // The post's images (the thread's first post carries them), unless the platform confirmed it already.
  const images = schedule.threadOrder === 0 && !confirmed && schedule.hasImages ? await imagesOf(app, schedule.postId) : undefined;
  const { threadSettings, workspaceLanguages, threadText, detectedLanguage, languageKnown } = schedule;
  const languageSources = { threadSettings, workspaceLanguages, threadText, ...(languageKnown && { detected: detectedLanguage }) };
  const limits = channelLimits(schedule.platform, schedule.instanceLimits);
  const outgoing: OutgoingPost = { key, text: schedule.scheduledContent, settings: schedule.settings, languageSources, replyTo, mayExist, images, limits };
  const post =
    confirmed ||
    (account.lookUp
      ? (schedule.previousAttempt && (await account.lookUp(key))) || (await account.publish(outgoing))
      : await sendMarked(app, account, schedule.id, 'post', { at: schedule.postSentAt, ref: schedule.postSentRef }, outgoing));
  // Stored the moment the platform confirms, before anything else can fail: what the first comment needs, and where the
  // platform cannot be asked, what keeps a later attempt from sending the post again.
  if (schedule.firstComment || !account.lookUp) {
    await db`UPDATE schedules SET platform_post_id = ${post.id}, release_url = ${post.url}, updated_at = now() WHERE id = ${schedule.id}`;
  }
  let note: { reason: string; detail: FailureDetail } | null = null;
  if (schedule.firstComment) {
    const comment: OutgoingPost = {
      key: { ...key, kind: 'firstComment' },
      text: schedule.firstComment,
      // The same settings and sources as its post: it carries the post's language tags.
      settings: schedule.settings,
      languageSources,
      replyTo: { root: replyTo?.root ?? post, parent: post },
      mayExist,
    };
    try {
      if (account.lookUp) {
        if (!(schedule.previousAttempt && (await account.lookUp(comment.key)))) await account.publish(comment);
      } else if (account.findSent) {
        // Kept to be deleted with the post: a reply outlives its parent there (Mastodon).
        const published = await sendMarked(app, account, schedule.id, 'first_comment', { at: schedule.firstCommentSentAt, ref: schedule.firstCommentSentRef }, comment);
        await db`UPDATE schedules SET first_comment_post_id = ${published.id}, updated_at = now() WHERE id = ${schedule.id}`;
      } else {
        note = await publishCommentOnce(app, account, label, schedule, comment);
      }
    } catch (error) {
      note = await commentRefused(app, schedule, error, signal);
    }
  }
  // One statement: the post's id and PUBLISHED, its event, and the channel's last good check (written at most once a
  // minute, so that a burst of publishes on one channel does not queue on its row).
  await db`
    WITH published AS (
      UPDATE schedules SET status = 'PUBLISHED', published_at = now(), platform_post_id = ${post.id}, release_url = ${post.url},
        failure_reason = ${note?.reason ?? null}, failure_detail = ${note ? db.json(storedDetail(note.detail) as never) : null}, updated_at = now()
      WHERE id = ${schedule.id} AND status = 'PUBLISHING'
      RETURNING *),
    recorded AS (${scheduleEvents(db, app.storage, 'schedule.published', db`published`)})
    UPDATE integrations SET last_validated_at = now()
    WHERE id IN (SELECT integration_id FROM published) AND (last_validated_at IS NULL OR last_validated_at < now() - interval '1 minute')`;
  return post;
}

/**
 * The first comment on a platform that cannot be asked whether it exists: sent once at most. Answers null when it was
 * published, or the note a PUBLISHED schedule carries when it may or may not be there (its answer lost now, or by an
 * earlier attempt); throws the platform's refusal, after clearing the mark (nothing was written), for the usual retry.
 */
async function publishCommentOnce(
  app: AppContext,
  account: PublishingAccount,
  label: string,
  schedule: Claimed,
  comment: OutgoingPost,
): Promise<{ reason: string; detail: FailureDetail } | null> {
  const maybe = (why: string, detail: FailureDetail) => ({
    reason:
      `Published; its first comment may or may not be there: ${why}, and ${label} cannot be asked whether it exists, so it was not ` +
      'sent again. Check the post and add the comment by hand if it is missing',
    detail,
  });
  if (schedule.firstCommentSentAt) {
    return maybe('an earlier attempt sent it and its answer was lost (or the worker stopped)', noDetail);
  }
  try {
    await sendMarked(app, account, schedule.id, 'first_comment', { at: null, ref: null }, comment);
    return null;
  } catch (error) {
    if (!(error instanceof PlatformError && error.kind === 'unknown')) throw error;
    app.logger.warn('first comment outcome unknown; not sent again', { scheduleId: schedule.id, reason: error.message, status: error.detail.status });
    return maybe(`it was sent and no answer settled it (${error.message})`, error.detail);
  }
}

/**
 * A send to a platform that cannot be asked by key, marked first (`post_sent_at`, `first_comment_sent_at`): the mark
 * stays when the outcome is unknown (or the worker stops), so a later attempt knows this may be there already; a
 * refusal (nothing written) clears it, unless an earlier send had left it (`earlier`): that one may still be there.
 * What the platform knows the send by before its answer (a Threads container) is kept beside the mark (`*_sent_ref`).
 * Given an earlier mark, an account that can find what it sent (findSent) is asked first, and when it has nothing, the
 * post is sent again under the same mark (on Mastodon, the same Idempotency-Key; on Threads, the same container).
 */
async function sendMarked(
  app: AppContext,
  account: PublishingAccount,
  scheduleId: string,
  which: 'post' | 'first_comment',
  earlier: { at: Date | null; ref: string | null },
  post: OutgoingPost,
): Promise<PublishedPost> {
  const [at, ref] = [app.db(`${which}_sent_at`), app.db(`${which}_sent_ref`)];
  if (earlier.at && account.findSent) {
    const found = await account.findSent({ ...post, sentAt: earlier.at, sentRef: earlier.ref });
    if (found) return found;
  }
  const sentAt = earlier.at ?? (await app.db<{ sentAt: Date }[]>`UPDATE schedules SET ${at} = now(), ${ref} = NULL WHERE id = ${scheduleId} RETURNING ${at} AS sent_at`)[0]!.sentAt;
  const remember = async (known: string) => void (await app.db`UPDATE schedules SET ${ref} = ${known} WHERE id = ${scheduleId}`);
  try {
    return await account.publish({ ...post, sentAt, sentRef: earlier.ref, remember });
  } catch (error) {
    if (!earlier.at && !(error instanceof PlatformError && error.kind === 'unknown')) {
      await app.db`UPDATE schedules SET ${at} = NULL, ${ref} = NULL WHERE id = ${scheduleId}`;
    }
    throw error;
  }
}

/** A post as stored when the platform confirmed it (accounts without `lookUp`), or null while it has not. */
async function confirmedPost(db: Database | Sql, scheduleId: string): Promise<PublishedPost | null> {
  const [row] = await db<{ platformPostId: string; releaseUrl: string | null }[]>`
    SELECT platform_post_id, release_url FROM schedules WHERE id = ${scheduleId} AND platform_post_id IS NOT NULL`;
  return row ? { id: row.platformPostId, url: row.releaseUrl ?? '', ref: row.platformPostId } : null;
}

/**
 * The post's images for the adapter, each with its `source` variant first and the upload itself after it. An image whose
 * variants are still being made is waited for (a transient failure: retried shortly).
 */
async function imagesOf(app: AppContext, postId: string): Promise<OutgoingImage[]> {
  const rows = await app.db<{ altText: string | null; mimeType: string; objectKey: string; size: string; width: number; height: number; variantsStatus: string; sourceText: string | null }[]>`
    SELECT a.alt_text, m.mime_type, m.object_key, m.size, m.width, m.height, m.variants_status, (m.variants->'source')::text AS source_text
    FROM attachments a JOIN media m ON m.id = a.media_id WHERE a.post_id = ${postId} ORDER BY a."order"`;
  if (rows.some((row) => row.variantsStatus === 'pending')) {
    throw new PlatformError('transient', 'The post\'s images are still being processed', noDetail);
  }
  const stored = (key: string) => ({ read: () => app.storage.read(key), url: app.storage.publicUrl(key) });
  return rows.map((row) => {
    const source = row.sourceText ? (JSON.parse(row.sourceText) as { objectKey: string; width: number; height: number; sizeBytes: number }) : undefined;
    const original = { width: row.width, height: row.height, sizeBytes: Number(row.size), mimeType: row.mimeType, ...stored(row.objectKey) };
    const variant = source && { ...source, mimeType: source.objectKey.endsWith('.webp') ? 'image/webp' : 'image/jpeg', ...stored(source.objectKey) };
    return { altText: row.altText ?? '', versions: variant ? [variant, original] : [original] };
  });
}

async function keyOf(db: Database | Sql, scheduleId: string): Promise<PostKey> {
  const [row] = await db<{ createdAt: Date }[]>`SELECT created_at FROM schedules WHERE id = ${scheduleId}`;
  return { scheduleId, createdAt: row!.createdAt, kind: 'post' };
}

export default defineTask(TASK.publishSchedule, publishScheduleTask);
