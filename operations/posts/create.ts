import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import type { Sql } from '../../src/db/index.js';
import type { Platform } from '../../src/platforms/index.js';
import { checkSettingsLangs } from '../../src/platforms/languages.js';
import { countedWith, type InstanceLimits, type TextContext } from '../../src/platforms/rules.js';
import { rememberThreadLanguages } from '../../src/platforms/detected-languages.js';
import { approvalRule, requestApproval } from './approval.js';
import { NOT_FOUND_MESSAGE } from '../../src/registry/errors.js';
import { text, timestamp, uuid } from '../../src/registry/fields.js';
import { defineOperation } from '../../src/registry/operation.js';
import { enqueuePublish } from '../../src/worker/queue.js';
import { recordPostEvents, recordScheduleEvents } from '../events/event.js';
import { approvalStatus, canSchedule, writtenBy, type ScheduleStatus } from './post.js';
import { imagesOf, mediaList, missingMedia, setAttachments } from './attachments.js';
import { contentTooLong, count, mediaRuleViolated, settingsRefused, spendQuotas, threadRefused } from './refusals.js';
import { LOOKAHEAD_DAYS, nextFreeSlots } from './slots.js';

const MAX_TEXT = 100_000;
/** Schedules one request may create (rows × channels × thread parts). */
const MAX_SCHEDULES = 1000;

export const content = text.min(1).max(MAX_TEXT);

export const settings = z
  .record(z.string(), z.unknown())
  .refine((value) => !JSON.stringify(value).includes('\\u0000'), 'must not contain the NUL character (\\u0000)')
  .superRefine(checkSettingsLangs)
  .meta({
    description:
      'Options for this channel, kept on its schedule (the publishing adapters read them). `langs`: language tags (Bluesky, Mastodon). ' +
      'LinkedIn: `visibility` CONNECTIONS. Mastodon: `visibility` (public, unlisted, private, direct), `spoilerText` (a content warning, ' +
      'counted with the text), `sensitive`, `focalPoints` ([{ x, y }] from -1 to 1 per image, or null). Threads: `replyControl` (everyone, ' +
      'accounts_you_follow, mentioned_only, parent_post_author_only, followers_only). A value the platform does not take: 400.',
  });

const Row = z.strictObject({
  content: content.meta({ description: 'The post\'s text; published on every channel without a content override.' }),
  scheduledAt: timestamp.optional().meta({
    description: 'Required with SCHEDULED_TIME (and not in the past); with DRAFT it holds the draft on the calendar; ignored otherwise.',
  }),
  tagIds: z.array(uuid).max(50).optional().meta({ description: 'Tags of this workspace to put on the post.' }),
  firstComment: content.optional().meta({ description: 'Published as the first reply under the post, on every channel.' }),
  thread: z
    .array(z.strictObject({ content: content.meta({ description: 'The part\'s text.' }) }))
    .max(25)
    .optional()
    .meta({
      description:
        'Follow-up parts, published in order as replies under the post (on each channel, schedules with `threadRootScheduleId` and ' +
        '`threadOrder` 1, 2…). Not on platforms without threads (LinkedIn): 400 VALIDATION_ERROR.',
    }),
  overrides: z
    .array(
      z.strictObject({
        integrationId: uuid.meta({ description: 'The channel: one of shared.selectedIntegrations.' }),
        content: content.optional().meta({ description: 'Its text instead of the row\'s.' }),
        settings: settings.optional(),
      }),
    )
    .max(20)
    .optional()
    .meta({ description: 'Per channel (one of shared.selectedIntegrations, once each): its own content and/or settings.' }),
  media: mediaList.optional(),
  isEvergreen: z
    .boolean()
    .optional()
    .meta({ description: 'Evergreen: once published, the workspace\'s recycle rules schedule it again (docs/publishing.md#evergreen-recycling). False unless given.' }),
});

type RowInput = z.output<typeof Row>;
type PostAction = 'NEXT_WINDOW' | 'SCHEDULED_TIME' | 'PUBLISH_NOW' | 'DRAFT';

const postAction = z
  .enum(['NEXT_WINDOW', 'SCHEDULED_TIME', 'PUBLISH_NOW', 'DRAFT'] satisfies PostAction[])
  .default('NEXT_WINDOW')
  .meta({
    description:
      '`NEXT_WINDOW` (default): SCHEDULED at each channel\'s next free posting slot. `SCHEDULED_TIME`: SCHEDULED at each row\'s ' +
      '`scheduledAt`. `PUBLISH_NOW`: SCHEDULED, due now. `DRAFT`: DRAFT, never published (a row\'s `scheduledAt` holds it on the calendar).',
  });

const actionMessages: Record<PostAction, string> = {
  NEXT_WINDOW: 'scheduled at the next free posting slots',
  SCHEDULED_TIME: 'scheduled at the requested times',
  PUBLISH_NOW: 'queued for publishing now',
  DRAFT: 'saved as drafts',
};

export default defineOperation({
  id: 'createPost',
  method: 'POST',
  path: '/posts',
  visibility: 'public',
  summary: 'Create posts and schedule them to channels',
  description: [
    'Each row becomes one post, with one schedule per selected channel (and one per thread part). All or nothing: when a row or',
    'channel breaks a rule, nothing is created and the message names the row, the channel and the rule.',
    '',
    '**NEXT_WINDOW** takes, for each channel and row in order, the earliest free slot of the workspace\'s posting windows (by default',
    `Monday to Friday at 09:00, 12:00 and 17:00 in the workspace's time zone, UTC unless set) within ${LOOKAHEAD_DAYS} days: a slot no live`,
    'schedule (SCHEDULED, PUBLISHING, PUBLISHED) of that channel holds. Concurrent creates never take the same slot.',
    '',
    '**A post may wait for a person.** When the workspace, or the API key in use, requires approval (`postsNeedApproval`), a live post',
    'is created with `approvalStatus: pending_review` and `canSchedule: false`: its schedules keep their slots, but nothing publishes',
    'and no quota is spent until one of its `requiredApproverIds` approves it. The answer says so.',
    '',
    'Anything but DRAFT needs an active subscription (402 PAYMENT_REQUIRED) and spends the monthly quota of each channel\'s platform,',
    'one post per row and channel (403 POST_QUOTA_EXCEEDED). Texts must fit each channel\'s platform (400 CONTENT_TOO_LONG): Bluesky',
    '300 graphemes and 3000 bytes of UTF-8, LinkedIn 3000 characters (1250 in a first comment), Mastodon its instance\'s limit (500 by',
    'default: each link counts 23, `@user@domain` as `@user`, a content warning in `settings.spoilerText` with the text), Threads 500',
    '(an emoji counts its UTF-8 bytes) and at most 5 distinct links; so must media (400',
    'MEDIA_RULE_VIOLATED), published with the post, not its thread parts or first comment. LinkedIn has no threads (400',
    'VALIDATION_ERROR, drafts too). A channel waiting for account selection (PENDING_SELECTION) takes only drafts (409 INVALID_STATE).',
    'Integrations or tags of another workspace answer 404 NOT_FOUND.',
  ].join('\n'),
  input: {
    body: z.strictObject({
      rows: z.array(Row).min(1).max(50).meta({ description: 'One post each.' }),
      shared: z
        .strictObject({
          selectedIntegrations: z.array(uuid).min(1).max(20).meta({ description: 'The channels every row is scheduled to, once each.' }),
        })
        .meta({ description: 'What every row shares: the channels it is scheduled to.' }),
      postAction,
    }),
  },
  output: z
    .object({
      postId: uuid.meta({ description: 'The first row\'s post.' }),
      postIds: z.array(uuid).meta({ description: 'Every post created, in the order of the rows.' }),
      message: z.string(),
      scheduleCount: z.number().int().meta({ description: 'Schedules created, thread parts included.' }),
      approvalStatus,
      canSchedule,
    })
    .meta({ id: 'CreatedPosts' }),
  status: 201,
  errors: ['VALIDATION_ERROR', 'NOT_FOUND', 'PAYMENT_REQUIRED', 'POST_QUOTA_EXCEEDED', 'CONTENT_TOO_LONG', 'MEDIA_RULE_VIOLATED', 'INVALID_STATE'],
  idempotent: true,
  async handler({ rows, shared, postAction }, { db, storage, auth, fail }) {
    const targets = shared.selectedIntegrations;
    const live = postAction !== 'DRAFT';
    checkShape(rows, targets, postAction, (message) => fail('VALIDATION_ERROR', message));

    const created = await db.begin(async (tx) => {
      const [workspace] = await tx<{ plan: string; subscriptionStatus: 'active' | 'none' }[]>`
        SELECT plan, subscription_status FROM organizations WHERE id = ${auth.workspaceId}`;
      // Live creates lock their channels (in id order, so concurrent creates cannot deadlock): the slot search and
      // the inserts below then see every schedule a concurrent create made for them.
      // Each with its instance's limits on Mastodon, which its texts and media are checked against.
      const integrations = await tx<{ id: string; platform: Platform; name: string; connectStatus: string; limits: InstanceLimits | null }[]>`
        SELECT i.id, i.platform, i.name, i.connect_status, mi.limits FROM integrations i
        LEFT JOIN mastodon_instances mi ON mi.host = i.instance_host
        WHERE i.organization_id = ${auth.workspaceId} AND i.id = ANY(${targets}::uuid[])
        ORDER BY i.id ${live ? tx`FOR NO KEY UPDATE OF i` : tx``}`;
      const channels = targets.map((id) => integrations.find((integration) => integration.id === id));
      const missing = channels.findIndex((channel) => !channel);
      if (missing >= 0) return fail('NOT_FOUND', `${NOT_FOUND_MESSAGE}: shared.selectedIntegrations[${missing}]`);
      const missingTag = await findMissingTag(tx, auth.workspaceId, rows);
      if (missingTag) return fail('NOT_FOUND', `${NOT_FOUND_MESSAGE}: ${missingTag}`);
      const images = await imagesOf(tx, auth.workspaceId, rows.map((row, index) => ({ field: `rows[${index}].media`, media: row.media ?? [] })));
      if ('missing' in images) return fail('NOT_FOUND', missingMedia(images.missing));
      if ('repeated' in images) return fail('VALIDATION_ERROR', images.repeated);

      if (live && workspace!.subscriptionStatus !== 'active') {
        return fail('PAYMENT_REQUIRED', 'The workspace has no active subscription: posts can be saved as drafts (postAction DRAFT), not scheduled');
      }
      for (const [index, channel] of channels.entries()) {
        if (live && channel!.connectStatus !== 'ACTIVE') {
          fail('INVALID_STATE', `shared.selectedIntegrations[${index}]: "${channel!.name}" is not connected yet (connectStatus ${channel!.connectStatus}); it takes only drafts`);
        }
      }
      for (const [rowIndex, row] of rows.entries()) {
        for (const channel of channels) {
          const noThreads = row.thread?.length ? threadRefused(`rows[${rowIndex}].thread`, channel!) : undefined;
          if (noThreads) fail('VALIDATION_ERROR', noThreads);
          const overrideIndex = row.overrides?.findIndex((override) => override.integrationId === channel!.id) ?? -1;
          const badSettings = settingsRefused(`rows[${rowIndex}].overrides[${overrideIndex}].settings`, channel!, row.overrides?.[overrideIndex]?.settings);
          if (badSettings) fail('VALIDATION_ERROR', badSettings);
          for (const [field, value, context] of textsFor(row, channel!.id)) {
            const refusal = contentTooLong(`rows[${rowIndex}].${field}`, channel!, value, field === 'firstComment' ? 'comment' : 'post', context);
            if (refusal) fail('CONTENT_TOO_LONG', refusal);
          }
          const violation = mediaRuleViolated(`rows[${rowIndex}].media`, channel!, images[rowIndex]!);
          if (violation) fail('MEDIA_RULE_VIOLATED', violation);
        }
      }
      // A rule on the workspace or the key holds live posts for approval: they spend their quota when approved.
      const rule = live ? await approvalRule(tx, auth.principal) : null;
      if (live && !rule) {
        const posts: Partial<Record<Platform, number>> = {};
        for (const channel of channels) posts[channel!.platform] = (posts[channel!.platform] ?? 0) + rows.length;
        const refusal = await spendQuotas(tx, { id: auth.workspaceId, plan: workspace!.plan }, posts);
        if (refusal) fail('POST_QUOTA_EXCEEDED', refusal);
      }

      const times = await scheduleTimes(tx, auth.workspaceId, rows, targets, postAction);
      if (typeof times === 'string') return fail('INVALID_STATE', times);
      const status: ScheduleStatus = live ? 'SCHEDULED' : 'DRAFT';
      const posts = rows.map((row) => ({
        id: randomUUID(),
        organizationId: auth.workspaceId,
        userId: auth.userId,
        ...writtenBy(auth.principal),
        content: row.content,
        isEvergreen: row.isEvergreen ?? false,
      }));
      const roots: Record<string, unknown>[] = [];
      const parts: Record<string, unknown>[] = [];
      for (const [rowIndex, row] of rows.entries()) {
        for (const [targetIndex, integrationId] of targets.entries()) {
          const override = row.overrides?.find((candidate) => candidate.integrationId === integrationId);
          const common = {
            organizationId: auth.workspaceId,
            postId: posts[rowIndex]!.id,
            integrationId,
            userId: auth.userId,
            status,
            scheduledAt: times[rowIndex]![targetIndex]!,
          };
          const rootId = randomUUID();
          roots.push({
            ...common,
            id: rootId,
            scheduledContent: override?.content ?? row.content,
            firstComment: row.firstComment ?? null,
            settings: tx.json((override?.settings ?? {}) as Parameters<typeof tx.json>[0]),
            quotaSpent: live && !rule,
          });
          for (const [partIndex, part] of (row.thread ?? []).entries()) {
            parts.push({ ...common, id: randomUUID(), scheduledContent: part.content, threadRootScheduleId: rootId, threadOrder: partIndex + 1 });
          }
        }
      }

      await tx`INSERT INTO posts ${tx(posts)}`;
      const postTags = rows.flatMap((row, index) =>
        [...new Set(row.tagIds ?? [])].map((tagId) => ({ postId: posts[index]!.id, tagId, organizationId: auth.workspaceId })),
      );
      if (postTags.length) await tx`INSERT INTO post_tags ${tx(postTags)}`;
      for (const [index, row] of rows.entries()) if (row.media?.length) await setAttachments(tx, auth.workspaceId, posts[index]!.id, row.media);
      await tx`INSERT INTO schedules ${tx(roots)}`;
      if (parts.length) await tx`INSERT INTO schedules ${tx(parts)}`;
      // One job per thread: the publish task of its first schedule publishes the replies after it.
      if (live && !rule) await enqueuePublish(tx, roots.map((root) => root.id as string));
      // The reads that make the events are by ids: one plan serves every create, where Postgres would plan each anew
      // (docs/benchmarks.md, "What events cost a create").
      await tx`SET LOCAL plan_cache_mode = force_generic_plan`;
      if (rule) await requestApproval(tx, posts.map((post) => post.id), rule);
      await recordPostEvents(tx, storage, auth.workspaceId, 'post.created', posts.map((post) => post.id));
      if (rule) await recordPostEvents(tx, storage, auth.workspaceId, 'post.approval_requested', posts.map((post) => post.id));
      else if (live) await recordScheduleEvents(tx, storage, 'schedule.scheduled', [...roots, ...parts].map((schedule) => schedule.id as string));

      const scheduleCount = roots.length + parts.length;
      return {
        postId: posts[0]!.id,
        postIds: posts.map((post) => post.id),
        message:
          `${count(posts.length, 'post')} with ${count(scheduleCount, 'schedule')} ${actionMessages[postAction]}` +
          (rule ? `; waiting for approval (approvalStatus pending_review): nothing publishes until an approver approves` : ''),
        scheduleCount,
        approvalStatus: rule ? ('pending_review' as const) : null,
        canSchedule: !rule,
      };
    });
    await rememberThreadLanguages(db, created.postIds);
    return created;
  },
});

/** The rules that need no database: times, overrides, duplicates, size. */
function checkShape(rows: RowInput[], targets: string[], postAction: PostAction, refuse: (message: string) => never): void {
  const repeated = targets.findIndex((id, index) => targets.indexOf(id) !== index);
  if (repeated >= 0) refuse(`shared.selectedIntegrations[${repeated}]: lists ${targets[repeated]} a second time`);
  const schedules = rows.reduce((sum, row) => sum + targets.length * (1 + (row.thread?.length ?? 0)), 0);
  if (schedules > MAX_SCHEDULES) refuse(`rows: would create ${schedules} schedules; at most ${MAX_SCHEDULES} in one request`);
  const now = Date.now();
  for (const [index, row] of rows.entries()) {
    if (postAction === 'SCHEDULED_TIME') {
      if (!row.scheduledAt) refuse(`rows[${index}].scheduledAt: required when postAction is SCHEDULED_TIME`);
      if (Date.parse(row.scheduledAt) <= now) refuse(`rows[${index}].scheduledAt: ${row.scheduledAt} is in the past`);
    }
    for (const [overrideIndex, override] of (row.overrides ?? []).entries()) {
      const field = `rows[${index}].overrides[${overrideIndex}].integrationId`;
      if (!targets.includes(override.integrationId)) refuse(`${field}: ${override.integrationId} is not in shared.selectedIntegrations`);
      if (row.overrides!.findIndex((other) => other.integrationId === override.integrationId) !== overrideIndex) {
        refuse(`${field}: ${override.integrationId} is overridden a second time`);
      }
    }
  }
}

/** The first tag id of the rows that is not this workspace's, as a field path. */
async function findMissingTag(tx: Sql, workspaceId: string, rows: RowInput[]): Promise<string | undefined> {
  const ids = [...new Set(rows.flatMap((row) => row.tagIds ?? []))];
  if (ids.length === 0) return undefined;
  const found = new Set(
    (await tx<{ id: string }[]>`SELECT id FROM tags WHERE organization_id = ${workspaceId} AND id = ANY(${ids}::uuid[])`).map((tag) => tag.id),
  );
  for (const [rowIndex, row] of rows.entries()) {
    const tagIndex = (row.tagIds ?? []).findIndex((id) => !found.has(id));
    if (tagIndex >= 0) return `rows[${rowIndex}].tagIds[${tagIndex}]`;
  }
  return undefined;
}

/**
 * What each channel publishes for a row, by field: the content (or its override), counted with what its settings add to
 * it (a content warning on Mastodon), the thread parts, the first comment.
 */
function textsFor(row: RowInput, integrationId: string): [string, string, TextContext?][] {
  const overrideIndex = row.overrides?.findIndex((override) => override.integrationId === integrationId) ?? -1;
  const override = overrideIndex >= 0 ? row.overrides![overrideIndex] : undefined;
  const context = countedWith(override?.settings);
  return [
    override?.content !== undefined ? [`overrides[${overrideIndex}].content`, override.content, context] : ['content', row.content, context],
    ...(row.thread ?? []).map((part, index): [string, string] => [`thread[${index}].content`, part.content]),
    ...(row.firstComment !== undefined ? [['firstComment', row.firstComment] as [string, string]] : []),
  ];
}

/** When each row's schedule on each channel is due ([row][target]), or why NEXT_WINDOW found no slot. */
async function scheduleTimes(
  tx: Sql,
  workspaceId: string,
  rows: RowInput[],
  targets: string[],
  postAction: PostAction,
): Promise<(Date | null)[][] | string> {
  const given = (row: RowInput) => (row.scheduledAt ? new Date(row.scheduledAt) : null);
  if (postAction === 'DRAFT' || postAction === 'SCHEDULED_TIME') return rows.map((row) => targets.map(() => given(row)));
  if (postAction === 'PUBLISH_NOW') {
    const now = new Date();
    return rows.map(() => targets.map(() => now));
  }
  const slots: Date[][] = [];
  for (const [index, integrationId] of targets.entries()) {
    const free = await nextFreeSlots(tx, workspaceId, integrationId, rows.length);
    if (free.length < rows.length) {
      return `shared.selectedIntegrations[${index}]: no free posting slot in the next ${LOOKAHEAD_DAYS} days for ${count(rows.length, 'post')}; check the workspace's posting windows`;
    }
    slots.push(free);
  }
  return rows.map((_, rowIndex) => targets.map((_, targetIndex) => slots[targetIndex]![rowIndex]!));
}
