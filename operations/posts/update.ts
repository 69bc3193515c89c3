import { z } from 'zod';
import type { Sql } from '../../src/db/index.js';
import type { Platform } from '../../src/platforms/index.js';
import { countedWith, type InstanceLimits, type TextContext } from '../../src/platforms/rules.js';
import { NOT_FOUND_MESSAGE } from '../../src/registry/errors.js';
import { idOf, timestamp, uuid } from '../../src/registry/fields.js';
import { defineOperation } from '../../src/registry/operation.js';
import { cancelPublish, enqueuePublish } from '../../src/worker/queue.js';
import { approvalRule, requestApproval, type ApprovalStatus } from './approval.js';
import { rememberThreadLanguages } from '../../src/platforms/detected-languages.js';
import { recordPostEvents, recordScheduleEvents } from '../events/event.js';
import { content, settings } from './create.js';
import { approvalStatus, canSchedule, type ScheduleStatus } from './post.js';
import { imagesOf, mediaList, missingMedia, setAttachments } from './attachments.js';
import { contentTooLong, mediaRuleViolated, settingsRefused, spendQuotas, threadRefused } from './refusals.js';
import { LOOKAHEAD_DAYS, nextFreeSlots } from './slots.js';

interface LockedSchedule {
  id: string;
  status: ScheduleStatus;
  scheduledContent: string;
  threadOrder: number;
  integrationId: string;
  platform: Platform;
  name: string;
  connectStatus: string;
  /** Its channel's instance's limits (Mastodon), its texts and media checked against them. */
  limits: InstanceLimits | null;
  /** Its settings' content warning (`settings.spoilerText`, whatever was stored), counted with its text on Mastodon. */
  spoilerText: unknown;
  /** Sent to a platform that cannot be asked (post_sent_at), with no answer yet: its retry is queued, and the post may be live. */
  sentUnanswered: boolean;
}

/**
 * Whether a change may reach the schedule: not while it is publishing or published, nor while a send whose answer was
 * lost waits for its retry (the retry sends the text again as one that may exist; a new text would be a second post).
 */
const editable = (schedule: LockedSchedule) =>
  schedule.status === 'DRAFT' || schedule.status === 'FAILED' || (schedule.status === 'SCHEDULED' && !schedule.sentUnanswered);
const frozenReason = (schedule: LockedSchedule) =>
  schedule.sentUnanswered && schedule.status === 'SCHEDULED'
    ? 'is waiting to retry a send that got no answer (the post may be live); it cannot be changed until the retry settles it, or delete it'
    : `is ${schedule.status}; it cannot be changed`;

export default defineOperation({
  id: 'updatePost',
  method: 'PATCH',
  path: '/posts/{id}',
  visibility: 'public',
  summary: 'Change a post: its content, tags, first comment, per-schedule content, or schedule its drafts',
  description: [
    'Every field is optional: what is sent changes, the rest stays. All or nothing. Schedules that are PUBLISHING or PUBLISHED are',
    'never altered, nor a SCHEDULED one whose send to a platform that cannot be asked (LinkedIn) got no answer (its retry sends the',
    'same text, which the platform refuses as a duplicate if the first went out): a new content or first comment skips them (the',
    'message says how many), and naming one in `schedules` answers 409 INVALID_STATE. A post whose schedules are all published is',
    'history: its content, media and first comment no longer change (409 INVALID_STATE); its tags and isEvergreen still do.',
    '',
    'Every new text and media is checked against each affected channel\'s platform (400 CONTENT_TOO_LONG, MEDIA_RULE_VIOLATED,',
    'naming the field, channel and limit). A platform without threads (LinkedIn) refuses a change to a thread part and making thread',
    'parts live (400 VALIDATION_ERROR): delete such a part (DELETE /schedules/{id}). `postAction` makes the post\'s DRAFT schedules',
    'live as createPost does: it needs an active subscription (402) and spends the monthly quota (403).',
    '',
    'Approval: a change to a post waiting for approval keeps it waiting; a change to a rejected post sends it back to review. When',
    'the workspace or the API key in use requires approval, drafts made live wait for it (no quota spent yet), and a change to what a',
    'live post publishes (content, media, first comment, `schedules`; not tags) sends it back to review. The message says when it waits.',
  ].join('\n'),
  input: {
    path: z.object({ id: idOf('post') }),
    body: z.strictObject({
      content: content.optional().meta({
        description: 'The post\'s new text, also given to each unpublished schedule that published the post\'s text (not to thread parts, nor to one with content of its own).',
      }),
      tagIds: z.array(uuid).max(50).optional().meta({ description: 'Replaces the post\'s tags (tag ids); [] removes them.' }),
      firstComment: content.nullable().optional().meta({ description: 'The comment posted under the post on every unpublished schedule; null removes it.' }),
      isEvergreen: z.boolean().optional().meta({ description: 'Whether the post is evergreen: one that stays worth posting again, which the workspace\'s recycle rules schedule again once published.' }),
      media: mediaList.optional(),
      schedules: z
        .array(
          z.strictObject({
            id: idOf('schedule'),
            content: content.optional().meta({ description: 'Its own text from now on.' }),
            settings: settings.optional(),
          }),
        )
        .max(100)
        .optional()
        .meta({ description: 'Per schedule of this post: its own `content` and/or `settings` (which replace the old ones).' }),
      postAction: z
        .enum(['SCHEDULED_TIME', 'PUBLISH_NOW', 'NEXT_WINDOW'])
        .optional()
        .meta({ description: 'Makes the post\'s DRAFT schedules live: at `scheduledAt`, now, or at the next posting window.' }),
      scheduledAt: timestamp.optional().meta({ description: 'With postAction SCHEDULED_TIME: when the drafts publish; in the future.' }),
    }),
  },
  output: z.object({ postId: uuid, message: z.string(), approvalStatus, canSchedule }),
  errors: ['VALIDATION_ERROR', 'NOT_FOUND', 'INVALID_STATE', 'CONTENT_TOO_LONG', 'MEDIA_RULE_VIOLATED', 'PAYMENT_REQUIRED', 'POST_QUOTA_EXCEEDED'],
  async handler({ id, ...change }, { db, storage, auth, fail }) {
    if (change.postAction === 'SCHEDULED_TIME') {
      if (!change.scheduledAt) return fail('VALIDATION_ERROR', 'body.scheduledAt: required when postAction is SCHEDULED_TIME');
      if (Date.parse(change.scheduledAt) <= Date.now()) return fail('VALIDATION_ERROR', `body.scheduledAt: ${change.scheduledAt} is in the past`);
    }
    const updated = await db.begin(async (tx) => {
      const [post] = await tx<{ content: string; approvalStatus: ApprovalStatus | null; requiredApproverIds: string[] }[]>`
        SELECT content, approval_status, required_approver_ids FROM posts WHERE id = ${id} AND organization_id = ${auth.workspaceId} FOR UPDATE`;
      if (!post) return fail('NOT_FOUND', NOT_FOUND_MESSAGE);
      const schedules = await tx<LockedSchedule[]>`
        SELECT s.id, s.status, s.scheduled_content, s.thread_order, s.integration_id, i.platform, i.name, i.connect_status, mi.limits,
          s.settings->'spoilerText' AS spoiler_text, s.post_sent_at IS NOT NULL AS sent_unanswered
        FROM schedules s JOIN integrations i ON i.id = s.integration_id
        LEFT JOIN mastodon_instances mi ON mi.host = i.instance_host
        WHERE s.post_id = ${id} ORDER BY i.id, s.thread_order FOR NO KEY UPDATE OF s`;
      const roots = schedules.filter((schedule) => schedule.threadOrder === 0);
      // What went out is history: a change that could reach no schedule would only make the post say what was never
      // published. Tags and the evergreen flag stay changeable.
      const gone = roots.length > 0 && roots.every((root) => root.status === 'PUBLISHED' || root.status === 'PUBLISHING');
      if (gone && (change.content !== undefined || change.firstComment !== undefined || change.media !== undefined)) {
        return fail(
          'INVALID_STATE',
          'This post has been published on every channel it was scheduled for, and what was published is not rewritten: make a new post ' +
            'to say it again or differently (a signed-in member can copy it with POST /posts/{id}/duplicate). Tags and isEvergreen can still change',
        );
      }
      const check = (field: string, text: string, schedule: LockedSchedule, as: 'post' | 'comment' = 'post', context?: TextContext) => {
        const refusal = contentTooLong(field, schedule, text, as, context);
        if (refusal) fail('CONTENT_TOO_LONG', refusal);
      };
      // What a first schedule's settings count with its text (Mastodon's content warning): the new settings when given.
      const contextOf = (schedule: LockedSchedule, settings?: Record<string, unknown>) =>
        schedule.threadOrder === 0 ? countedWith(settings ?? { spoilerText: schedule.spoilerText }) : undefined;
      const settingsOnly: { index: number; schedule: LockedSchedule; settings: Record<string, unknown> }[] = [];

      const updates: { id: string; content?: string; settings?: Record<string, unknown> }[] = [];
      for (const [index, edit] of (change.schedules ?? []).entries()) {
        const schedule = schedules.find((candidate) => candidate.id === edit.id);
        if (!schedule) return fail('NOT_FOUND', `${NOT_FOUND_MESSAGE}: body.schedules[${index}].id is not a schedule of this post`);
        if (!editable(schedule)) return fail('INVALID_STATE', `body.schedules[${index}]: the schedule ${frozenReason(schedule)}`);
        const noThreads = schedule.threadOrder > 0 ? threadRefused(`body.schedules[${index}]`, schedule, schedule.threadOrder) : undefined;
        if (noThreads) return fail('VALIDATION_ERROR', noThreads);
        const badSettings = settingsRefused(`body.schedules[${index}].settings`, schedule, edit.settings);
        if (badSettings) return fail('VALIDATION_ERROR', badSettings);
        if (edit.content !== undefined) check(`body.schedules[${index}].content`, edit.content, schedule, 'post', contextOf(schedule, edit.settings));
        else if (edit.settings && schedule.threadOrder === 0) settingsOnly.push({ index, schedule, settings: edit.settings });
        updates.push(edit);
      }
      // A schedule given its own text in `schedules` takes that one, and is checked against that one only.
      const ownText = new Set(updates.filter((edit) => edit.content !== undefined).map((edit) => edit.id));
      const following =
        change.content === undefined ? [] : roots.filter((root) => editable(root) && root.scheduledContent === post.content && !ownText.has(root.id));
      const newSettings = (root: LockedSchedule) => updates.findLast((edit) => edit.id === root.id && edit.settings)?.settings;
      for (const root of following) check('body.content', change.content!, root, 'post', contextOf(root, newSettings(root)));
      // A new content warning counts with the text the schedule keeps.
      for (const { index, schedule, settings } of settingsOnly) {
        if (!following.includes(schedule)) check(`body.schedules[${index}].settings`, schedule.scheduledContent, schedule, 'post', contextOf(schedule, settings));
      }
      if (typeof change.firstComment === 'string') for (const root of roots.filter(editable)) check('body.firstComment', change.firstComment, root, 'comment');
      if (change.tagIds) {
        const found = await tx<{ id: string }[]>`SELECT id FROM tags WHERE organization_id = ${auth.workspaceId} AND id = ANY(${change.tagIds}::uuid[])`;
        const missing = change.tagIds.findIndex((tagId) => !found.some((tag) => tag.id === tagId));
        if (missing >= 0) return fail('NOT_FOUND', `${NOT_FOUND_MESSAGE}: body.tagIds[${missing}]`);
      }
      if (change.media) {
        const images = await imagesOf(tx, auth.workspaceId, [{ field: 'body.media', media: change.media }]);
        if ('missing' in images) return fail('NOT_FOUND', missingMedia(images.missing));
        if ('repeated' in images) return fail('VALIDATION_ERROR', images.repeated);
        for (const root of roots.filter(editable)) {
          const violation = mediaRuleViolated('body.media', root, images[0]!);
          if (violation) fail('MEDIA_RULE_VIOLATED', violation);
        }
      }
      // Thread parts on a platform without threads (written before such threads were refused) never go live.
      const part = change.postAction ? schedules.find((s) => s.threadOrder > 0 && s.status === 'DRAFT' && threadRefused('', s)) : undefined;
      if (part) return fail('VALIDATION_ERROR', threadRefused('body.postAction', part, part.threadOrder)!);
      // A post waiting for review, or rejected, stays held whatever the rules say now; a rule holds what it makes live.
      const held = post.approvalStatus === 'pending_review' || post.approvalStatus === 'rejected';
      const rule = await approvalRule(tx, auth.principal);
      const promoted = change.postAction
        ? await makeDraftsLive(tx, auth.workspaceId, roots, change.postAction, change.scheduledAt, held || rule !== null, fail)
        : [];

      if (change.content !== undefined || change.isEvergreen !== undefined) {
        await tx`UPDATE posts SET content = coalesce(${change.content ?? null}, content),
          is_evergreen = coalesce(${change.isEvergreen ?? null}::boolean, is_evergreen), updated_at = now() WHERE id = ${id}`;
      }
      if (following.length) {
        await tx`UPDATE schedules SET scheduled_content = ${change.content!}, updated_at = now() WHERE id = ANY(${following.map((root) => root.id)}::uuid[])`;
      }
      for (const edit of updates) {
        await tx`UPDATE schedules SET scheduled_content = coalesce(${edit.content ?? null}, scheduled_content),
          settings = coalesce(${edit.settings ? tx.json(edit.settings as Parameters<typeof tx.json>[0]) : null}::jsonb, settings), updated_at = now()
          WHERE id = ${edit.id}`;
      }
      if (change.firstComment !== undefined) {
        await tx`UPDATE schedules SET first_comment = ${change.firstComment}, updated_at = now()
          WHERE id = ANY(${roots.filter(editable).map((root) => root.id)}::uuid[])`;
      }
      if (change.media) await setAttachments(tx, auth.workspaceId, id, change.media);
      if (change.tagIds) {
        await tx`DELETE FROM post_tags WHERE post_id = ${id}`;
        const rows = [...new Set(change.tagIds)].map((tagId) => ({ postId: id, tagId, organizationId: auth.workspaceId }));
        if (rows.length) await tx`INSERT INTO post_tags ${tx(rows)}`;
      }

      // Back to review: any change to a held post; under a rule, a change to what a live post publishes (a FAILED
      // schedule counts: a retry would publish the new text).
      const changesWhatPublishes =
        change.content !== undefined || change.firstComment !== undefined || change.media !== undefined || updates.length > 0 || promoted.length > 0;
      const waiting = schedules.filter((schedule) => schedule.status === 'SCHEDULED').map((schedule) => schedule.id);
      const failed = schedules.filter((schedule) => schedule.status === 'FAILED').length;
      const toReview = held || (rule !== null && changesWhatPublishes && waiting.length + failed + promoted.length > 0);
      if (toReview) {
        await cancelPublish(tx, waiting);
        await requestApproval(tx, [id], rule ?? { approverIds: post.requiredApproverIds });
      }
      await recordPostEvents(tx, storage, auth.workspaceId, 'post.updated', [id]);
      if (toReview) await recordPostEvents(tx, storage, auth.workspaceId, 'post.approval_requested', [id]);
      else await recordScheduleEvents(tx, storage, 'schedule.scheduled', promoted);

      const frozen = schedules.filter((schedule) => !editable(schedule)).length;
      const made = promoted.filter((scheduleId) => roots.some((root) => root.id === scheduleId)).length;
      const notes = [
        'Post updated',
        made ? `${made} draft schedule${made === 1 ? '' : 's'} made live` : '',
        frozen && (change.content !== undefined || change.firstComment !== undefined)
          ? `${frozen} schedule${frozen === 1 ? ' was' : 's were'} not altered because ${frozen === 1 ? 'it is' : 'they are'} PUBLISHING or PUBLISHED, ` +
            'or waiting to retry a send that got no answer'
          : '',
        toReview ? 'waiting for approval (approvalStatus pending_review): nothing publishes until an approver approves' : '',
      ];
      return {
        postId: id,
        message: notes.filter(Boolean).join('; '),
        approvalStatus: toReview ? ('pending_review' as const) : post.approvalStatus,
        canSchedule: !toReview,
      };
    });
    if (change.content !== undefined || change.schedules?.some((edit) => edit.content !== undefined)) await rememberThreadLanguages(db, [id]);
    return updated;
  },
});

/**
 * Makes the post's DRAFT schedules live as createPost would: same subscription, connection, quota and slot rules;
 * `forApproval`: held for review, with no quota spent and no publish job yet. Returns the schedules made live, thread
 * parts included.
 */
async function makeDraftsLive(
  tx: Sql,
  workspaceId: string,
  roots: LockedSchedule[],
  postAction: 'SCHEDULED_TIME' | 'PUBLISH_NOW' | 'NEXT_WINDOW',
  scheduledAt: string | undefined,
  forApproval: boolean,
  fail: (code: 'PAYMENT_REQUIRED' | 'INVALID_STATE' | 'POST_QUOTA_EXCEEDED', message: string) => never,
): Promise<string[]> {
  const drafts = roots.filter((root) => root.status === 'DRAFT');
  if (drafts.length === 0) return [];
  const [workspace] = await tx<{ plan: string; subscriptionStatus: string }[]>`SELECT plan, subscription_status FROM organizations WHERE id = ${workspaceId}`;
  if (workspace!.subscriptionStatus !== 'active') fail('PAYMENT_REQUIRED', 'The workspace has no active subscription: drafts cannot be made live');
  const pending = drafts.find((draft) => draft.connectStatus !== 'ACTIVE');
  if (pending) fail('INVALID_STATE', `"${pending.name}" is not connected yet (connectStatus ${pending.connectStatus}); it takes only drafts`);
  // The channels are locked in id order, as createPost locks them, so slots and quotas are taken one create at a time.
  await tx`SELECT 1 FROM integrations WHERE id = ANY(${drafts.map((draft) => draft.integrationId)}::uuid[]) ORDER BY id FOR NO KEY UPDATE`;
  const posts: Partial<Record<Platform, number>> = {};
  for (const draft of drafts) posts[draft.platform] = (posts[draft.platform] ?? 0) + 1;
  const refusal = forApproval ? undefined : await spendQuotas(tx, { id: workspaceId, plan: workspace!.plan }, posts);
  if (refusal) fail('POST_QUOTA_EXCEEDED', refusal);
  const now = new Date();
  const live: string[] = [];
  for (const draft of drafts) {
    let at = postAction === 'SCHEDULED_TIME' ? new Date(scheduledAt!) : now;
    if (postAction === 'NEXT_WINDOW') {
      const [slot] = await nextFreeSlots(tx, workspaceId, draft.integrationId, 1);
      if (!slot) fail('INVALID_STATE', `"${draft.name}": no free posting slot in the next ${LOOKAHEAD_DAYS} days; check the workspace's posting windows`);
      at = slot;
    }
    const made = await tx<{ id: string }[]>`UPDATE schedules SET status = 'SCHEDULED', scheduled_at = ${at}, updated_at = now(),
        quota_spent = (thread_order = 0 AND NOT ${forApproval}::boolean)
      WHERE (id = ${draft.id} OR thread_root_schedule_id = ${draft.id}) AND status = 'DRAFT' RETURNING id`;
    live.push(...made.map((row) => row.id));
  }
  if (!forApproval) await enqueuePublish(tx, drafts.map((draft) => draft.id));
  return live;
}
