import { randomUUID } from 'node:crypto';
import type { Task } from 'graphile-worker';
import { z } from 'zod';
import { recordPostEvents, recordScheduleEvents } from '../../operations/events/event.js';
import { spendQuotas } from '../../operations/posts/refusals.js';
import { nextFreeSlots, type PostingWindow } from '../../operations/posts/slots.js';
import { storageInUse } from '../../operations/uploads/upload.js';
import type { Database, Sql } from '../db/index.js';
import { rememberThreadLanguages } from '../platforms/detected-languages.js';
import type { Platform } from '../platforms/index.js';
import { contentTooLong, type InstanceLimits } from '../platforms/rules.js';
import type { AppContext } from '../registry/context.js';
import type { Storage } from '../storage/index.js';
import { enqueuePublish, TASK } from './queue.js';
import { defineTask } from './task.js';

/** How far ahead a run looks for free slots: a run fills the coming days, never a queue without end. */
const HORIZON_DAYS = { DAILY: 7, WEEKLY: 14 } as const;

const Payload = z.strictObject({ ruleId: z.uuid(), period: z.string().min(1).max(20) });

/** Runs one rule for one period (queued by enqueueRecycle, src/worker/queue.ts). A second job for the same period does nothing. */
function recycleRuleTask(app: AppContext): Task {
  return async (payload) => {
    const { ruleId, period } = Payload.parse(payload);
    const ran = await runRecycle(app.db, app.storage, ruleId, period);
    if (ran) app.logger.info('recycle rule ran', { ruleId, period, ...ran });
  };
}

interface Rule {
  organizationId: string;
  integrationIds: string[];
  tagIds: string[];
  frequency: keyof typeof HORIZON_DAYS;
  postsPerRun: number;
  minIntervalDays: number;
  maxRuns: number | null;
  postingWindowsText: string | null;
  linkedinVariations: string[];
  enabled: boolean;
  plan: string;
  subscriptionStatus: string;
}

interface Channel {
  id: string;
  platform: Platform;
  name: string;
  connectStatus: string;
  tokenStatus: string;
  /** Its instance's limits (Mastodon), which a text it is given is checked against. */
  limits: InstanceLimits | null;
}

type SkipCode = 'PAYMENT_REQUIRED' | 'POST_QUOTA_EXCEEDED' | 'STORAGE_QUOTA_EXCEEDED' | 'INVALID_STATE' | 'CONTENT_TOO_LONG' | 'DUPLICATE_CONTENT' | 'NO_FREE_SLOT';
interface Skip {
  integrationId: string;
  code: SkipCode;
  reason: string;
}

/**
 * One run of a rule: picks its evergreen posts (least recently picked first), schedules each again on the rule's
 * channels it was first published to, and writes a recycle event per post, all in one transaction. The run's row
 * (rule, period) is inserted first: a second run of the period, in this worker or another, finds it and does nothing.
 * Posts are locked SKIP LOCKED, so one being changed or deleted right now waits for the next run.
 */
export async function runRecycle(db: Database, storage: Storage, ruleId: string, period: string): Promise<{ recycled: number; skipped: number } | null> {
  const done = await db.begin(async (tx) => {
    const [rule] = await tx<Rule[]>`
      SELECT r.organization_id, r.integration_ids, ARRAY(SELECT t.id FROM tags t WHERE t.id = ANY(r.tag_ids)) AS tag_ids, r.frequency, r.posts_per_run, r.min_interval_days, r.max_runs,
        r.posting_windows::text AS posting_windows_text, r.linkedin_variations, r.enabled, o.plan, o.subscription_status
      FROM recycle_rules r JOIN organizations o ON o.id = r.organization_id WHERE r.id = ${ruleId} FOR NO KEY UPDATE OF r`;
    // Tags deleted since drop out, as GET /recycle-rules shows them.
    if (!rule?.enabled) return null;
    const [run] = await tx<{ id: string }[]>`
      INSERT INTO recycle_runs (rule_id, period) VALUES (${ruleId}, ${period}) ON CONFLICT DO NOTHING RETURNING id`;
    if (!run) return null;

    const posts = await recycleCandidates(tx, ruleId, rule);
    if (posts.length === 0) return { recycled: 0, skipped: 0, postIds: [] };

    // Channels are locked (in id order, as createPost does) so that the slot search sees every schedule made for them.
    const channels = await tx<Channel[]>`
      SELECT i.id, i.platform, i.name, i.connect_status, i.token_status, mi.limits FROM integrations i
      LEFT JOIN mastodon_instances mi ON mi.host = i.instance_host
      WHERE i.organization_id = ${rule.organizationId} AND i.id = ANY(${rule.integrationIds}::uuid[]) ORDER BY i.id FOR NO KEY UPDATE OF i`;
    const order = (id: string) => rule.integrationIds.indexOf(id);
    const sources = await tx<{ id: string; postId: string; integrationId: string; scheduledContent: string }[]>`
      SELECT DISTINCT ON (s.post_id, s.integration_id) s.id, s.post_id, s.integration_id, s.scheduled_content
      FROM schedules s
      WHERE s.post_id = ANY(${posts.map((post) => post.id)}::uuid[]) AND s.integration_id = ANY(${rule.integrationIds}::uuid[])
        AND s.status = 'PUBLISHED' AND s.thread_order = 0 AND s.origin_recycle_event_id IS NULL
        -- Taken down from the platform by a person (DELETE /schedules/{id}): not put back.
        AND s.platform_deleted_at IS NULL
      ORDER BY s.post_id, s.integration_id, s.published_at`;
    // The texts each post already has on each LinkedIn channel (its first publication and every recycle): a variation
    // is appended only if it makes a text the channel does not have, whichever rule recycled it before.
    const linkedinIds = channels.filter((channel) => channel.platform === 'LINKEDIN').map((channel) => channel.id);
    const linkedinTexts = linkedinIds.length
      ? await tx<{ postId: string; integrationId: string; scheduledContent: string }[]>`
          SELECT post_id, integration_id, scheduled_content FROM schedules
          WHERE post_id = ANY(${posts.map((post) => post.id)}::uuid[]) AND integration_id = ANY(${linkedinIds}::uuid[]) AND thread_order = 0`
      : [];
    const space = posts.some((post) => post.hasMedia) ? await storageInUse(tx, rule.organizationId) : undefined;
    const storageOut = space !== undefined && space.usage > space.limit;
    const windows = rule.postingWindowsText ? (JSON.parse(rule.postingWindowsText) as PostingWindow[]) : null;
    const days = HORIZON_DAYS[rule.frequency];

    // 1. What each post would publish where, and the channels it cannot (no queries).
    const picks = posts.map((post) => {
      const skipped: Skip[] = [];
      const made: Made[] = [];
      let variation: string | null = null;
      const postSources = sources.filter((source) => source.postId === post.id).sort((a, b) => order(a.integrationId) - order(b.integrationId));
      for (const source of postSources) {
        const channel = channels.find((candidate) => candidate.id === source.integrationId);
        if (!channel) continue; // deleted since the rule was made: not one of its channels any more
        const skip = (code: SkipCode, reason: string) => skipped.push({ integrationId: channel.id, code, reason });
        if (rule.subscriptionStatus !== 'active') {
          skip('PAYMENT_REQUIRED', 'The workspace has no active subscription: nothing is recycled until it has one');
          continue;
        }
        if (post.hasMedia && storageOut) {
          skip('STORAGE_QUOTA_EXCEEDED', `The workspace uses more storage than the ${rule.plan} plan allows: delete media or change plan to recycle posts with media`);
          continue;
        }
        if (channel.connectStatus !== 'ACTIVE' || channel.tokenStatus !== 'VALID') {
          skip('INVALID_STATE', `"${channel.name}" cannot publish (token ${channel.tokenStatus}, ${channel.connectStatus}): reconnect it`);
          continue;
        }
        let content = source.scheduledContent;
        if (channel.platform === 'LINKEDIN') {
          if (rule.linkedinVariations.length === 0) {
            skip('DUPLICATE_CONTENT', `LinkedIn refuses a text "${channel.name}" already has: give the rule linkedinVariations to recycle to LinkedIn`);
            continue;
          }
          const has = new Set(linkedinTexts.filter((row) => row.postId === post.id && row.integrationId === channel.id).map((row) => row.scheduledContent));
          const unused = rule.linkedinVariations.find((line) => !has.has(`${content}\n\n${line}`));
          if (unused === undefined) {
            skip('DUPLICATE_CONTENT', `"${channel.name}" already has the text with each of the rule's ${rule.linkedinVariations.length} LinkedIn variations: add new lines to recycle it there again`);
            continue;
          }
          content = `${content}\n\n${unused}`;
          // A skip's reason is read on the Recycling page: the sentence alone, with no field of a request.
          const refusal = contentTooLong('', channel, content, 'post');
          if (refusal) {
            skip('CONTENT_TOO_LONG', `${refusal.sentence}, with the variation appended`);
            continue;
          }
          variation ??= unused;
        }
        made.push({ id: randomUUID(), source: source.id, integrationId: channel.id, at: null, content, platform: channel.platform });
      }
      return { post, skipped, made, variation, eventId: randomUUID() };
    });

    // 2. Slots: one search per channel for every post that wants it, handed out in the order the posts were picked.
    for (const channel of channels) {
      const wanting = picks.flatMap((pick) => pick.made.filter((schedule) => schedule.integrationId === channel.id).map((schedule) => ({ pick, schedule })));
      if (wanting.length === 0) continue;
      const slots = await nextFreeSlots(tx, rule.organizationId, channel.id, wanting.length, { windows, days });
      for (const [index, { pick, schedule }] of wanting.entries()) {
        if (slots[index]) schedule.at = slots[index];
        else {
          pick.made.splice(pick.made.indexOf(schedule), 1);
          pick.skipped.push({
            integrationId: channel.id,
            code: 'NO_FREE_SLOT',
            reason: `No free posting slot on "${channel.name}" in the next ${days} days: widen the posting windows or recycle fewer posts a run`,
          });
        }
      }
    }

    // 3. Quota, all of a post's channels or none. The whole run's at once when it fits (one statement per platform);
    // otherwise post by post, so that the posts that fit still go.
    const workspace = { id: rule.organizationId, plan: rule.plan };
    const spend = (made: Made[]) => {
      const perPlatform: Partial<Record<Platform, number>> = {};
      for (const schedule of made) perPlatform[schedule.platform] = (perPlatform[schedule.platform] ?? 0) + 1;
      // A refusal rolls back what the platforms before it spent.
      return tx
        .savepoint(async (sp) => {
          const refused = await spendQuotas(sp, workspace, perPlatform);
          if (refused) throw new QuotaRefused(refused);
        })
        .then(() => undefined, (error: unknown) => (error instanceof QuotaRefused ? error.message : Promise.reject(error)));
    };
    const all = picks.flatMap((pick) => pick.made);
    if (all.length && (await spend(all))) {
      for (const pick of picks.filter((candidate) => candidate.made.length)) {
        const refusal = await spend(pick.made);
        if (!refusal) continue;
        pick.skipped.push(...pick.made.map((schedule) => ({ integrationId: schedule.integrationId, code: 'POST_QUOTA_EXCEEDED' as const, reason: refusal })));
        pick.made = [];
      }
    }

    // 4. Written in a few statements whatever the number of posts: the events, the posts, the schedules (what the
    // channel published first: its settings, first comment and thread parts, at the new slot), their jobs and events.
    await tx`
      INSERT INTO recycle_events (id, organization_id, rule_id, run_id, period, post_id, status, schedule_ids, skipped, linkedin_variation)
      SELECT e.id, ${rule.organizationId}, ${ruleId}, ${run.id}, ${period}, e.post_id, e.status, e.schedule_ids, e.skipped, e.linkedin_variation
      FROM json_to_recordset(${JSON.stringify(
        picks.map((pick) => ({
          id: pick.eventId,
          post_id: pick.post.id,
          status: pick.made.length ? 'RECYCLED' : 'SKIPPED',
          schedule_ids: pick.made.map((schedule) => schedule.id),
          skipped: pick.skipped,
          linkedin_variation: pick.made.some((schedule) => schedule.platform === 'LINKEDIN') ? pick.variation : null,
        })),
      )}::text::json) AS e (id uuid, post_id uuid, status text, schedule_ids uuid[], skipped jsonb, linkedin_variation text)`;
    const recycledIds = picks.filter((pick) => pick.made.length).map((pick) => pick.post.id);
    await tx`UPDATE posts SET recycle_picked_at = now(), last_recycled_at = CASE WHEN id = ANY(${recycledIds}::uuid[]) THEN now() ELSE last_recycled_at END
      WHERE id = ANY(${posts.map((post) => post.id)}::uuid[])`;
    const rows = JSON.stringify(picks.flatMap((pick) => pick.made.map(({ id, source, at, content }) => ({ id, source, at, content, event: pick.eventId }))));
    const roots = picks.flatMap((pick) => pick.made.map((schedule) => schedule.id));
    if (roots.length) {
      await tx`
        INSERT INTO schedules (id, organization_id, post_id, integration_id, user_id, status, scheduled_at, scheduled_content, first_comment,
          settings, origin_recycle_event_id, approval_status, approval_requested_at, approval_completed_at, quota_spent)
        SELECT m.id, s.organization_id, s.post_id, s.integration_id, p.user_id, 'SCHEDULED', m.at, m.content, s.first_comment,
          s.settings, m.event, p.approval_status, p.approval_requested_at, p.approval_completed_at, true
        FROM json_to_recordset(${rows}::text::json) AS m (id uuid, source uuid, at timestamptz, content text, event uuid)
        JOIN schedules s ON s.id = m.source JOIN posts p ON p.id = s.post_id`;
      await tx`
        INSERT INTO schedules (organization_id, post_id, integration_id, user_id, status, scheduled_at, scheduled_content, settings,
          thread_root_schedule_id, thread_order, origin_recycle_event_id, approval_status, approval_requested_at, approval_completed_at)
        SELECT root.organization_id, root.post_id, root.integration_id, root.user_id, 'SCHEDULED', root.scheduled_at, part.scheduled_content,
          part.settings, root.id, part.thread_order, root.origin_recycle_event_id, root.approval_status, root.approval_requested_at,
          root.approval_completed_at
        FROM json_to_recordset(${rows}::text::json) AS m (id uuid, source uuid)
        JOIN schedules root ON root.id = m.id JOIN schedules part ON part.thread_root_schedule_id = m.source`;
      await enqueuePublish(tx, roots);
      const made = await tx<{ id: string }[]>`
        SELECT id FROM schedules WHERE id = ANY(${roots}::uuid[]) OR thread_root_schedule_id = ANY(${roots}::uuid[])
        ORDER BY post_id, integration_id, thread_order`;
      await recordScheduleEvents(tx, storage, 'schedule.scheduled', made.map((schedule) => schedule.id));
      await recordPostEvents(tx, storage, rule.organizationId, 'post.recycled', recycledIds);
    }
    const recycled = recycledIds.length;
    return { recycled, skipped: posts.length - recycled, postIds: recycledIds };
  });
  if (!done) return null;
  await rememberThreadLanguages(db, done.postIds);
  return { recycled: done.recycled, skipped: done.skipped };
}

/**
 * The posts a run of rule `ruleId` picks, in order, locking them (SKIP LOCKED: one being changed or deleted right now
 * waits for a later run). Exported for the bench, which times and explains this very query.
 */
export function recycleCandidates(
  tx: Sql,
  ruleId: string,
  rule: Pick<Rule, 'organizationId' | 'tagIds' | 'integrationIds' | 'minIntervalDays' | 'maxRuns' | 'postsPerRun'>,
) {
  return tx<{ id: string; hasMedia: boolean }[]>`
    SELECT p.id, EXISTS (SELECT 1 FROM attachments a WHERE a.post_id = p.id) AS has_media
    FROM posts p
    WHERE p.organization_id = ${rule.organizationId} AND p.is_evergreen
      AND p.approval_status IS DISTINCT FROM 'pending_review' AND p.approval_status IS DISTINCT FROM 'rejected'
      AND (cardinality(${rule.tagIds}::uuid[]) = 0 OR EXISTS (SELECT 1 FROM post_tags t WHERE t.post_id = p.id AND t.tag_id = ANY(${rule.tagIds}::uuid[])))
      AND EXISTS (SELECT 1 FROM schedules s WHERE s.post_id = p.id AND s.status = 'PUBLISHED' AND s.thread_order = 0
        AND s.origin_recycle_event_id IS NULL AND s.platform_deleted_at IS NULL AND s.integration_id = ANY(${rule.integrationIds}::uuid[]))
      -- Not while it waits to publish, nor while a recycle of it failed (retry or delete it first).
      AND NOT EXISTS (SELECT 1 FROM schedules s WHERE s.post_id = p.id
        AND (s.status IN ('SCHEDULED', 'PUBLISHING') OR (s.status = 'FAILED' AND s.origin_recycle_event_id IS NOT NULL)))
      AND coalesce(greatest(p.last_recycled_at, (SELECT max(s.published_at) FROM schedules s WHERE s.post_id = p.id AND s.status = 'PUBLISHED')),
        '-infinity') <= now() - ${rule.minIntervalDays} * interval '1 day'
      AND (${rule.maxRuns}::int IS NULL
        OR (SELECT count(*) FROM recycle_events e WHERE e.rule_id = ${ruleId} AND e.post_id = p.id AND e.status = 'RECYCLED') < ${rule.maxRuns}::int)
    ORDER BY p.recycle_picked_at NULLS FIRST, p.created_at, p.id
    LIMIT ${rule.postsPerRun}
    FOR NO KEY UPDATE OF p SKIP LOCKED`;
}

/** A schedule a run makes: from its source (the channel's first publication), at its slot once found. */
interface Made {
  id: string;
  source: string;
  integrationId: string;
  at: Date | null;
  content: string;
  platform: Platform;
}

/** Thrown inside the savepoint so that it rolls back; carries the refusal's message. */
class QuotaRefused extends Error {}

export default defineTask(TASK.recycleRule, recycleRuleTask);
