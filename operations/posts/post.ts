import type { PendingQuery, Row } from 'postgres';
import { z } from 'zod';
import type { Principal } from '../../src/auth/principal.js';
import type { Sql } from '../../src/db/index.js';
import { timestamp, uuid } from '../../src/registry/fields.js';
import { platform, tokenStatus } from '../integrations/integration.js';
import type { Storage } from '../../src/storage/index.js';
import type { AppContext } from '../../src/registry/context.js';
import { Attachment, attachmentsFingerprint, loadAttachments } from './attachments.js';

export const SCHEDULE_STATUSES = ['DRAFT', 'SCHEDULED', 'PUBLISHING', 'PUBLISHED', 'FAILED'] as const;
export type ScheduleStatus = (typeof SCHEDULE_STATUSES)[number];
export const scheduleStatus = z.enum(SCHEDULE_STATUSES);

export const approvalStatus = z
  .enum(['pending_review', 'approved', 'rejected'])
  .nullable()
  .meta({
    description:
      'Null: no approval rule held the post. `pending_review`: it waits for an approver and nothing publishes; `approved`: an approver ' +
      'let it publish; `rejected`: an approver refused it (a change sends it back to review).',
  });

export const canSchedule = z.boolean().meta({ description: 'False while the post waits for approval or is rejected: its schedules do not publish.' });

export const FailureDetail = z.object({
  status: z.number().nullable(),
  platformMessage: z.string().nullable(),
  platformCode: z.string().nullable(),
  traceId: z.string().nullable(),
  raw: z.string().nullable(),
});

/** A schedule: one post on one channel. Endpoints add the `integration` (and later `post`) shape they carry. */
export const Schedule = z.object({
  id: uuid,
  postId: uuid,
  organizationId: uuid,
  userId: uuid.nullable(),
  integrationId: uuid,
  status: scheduleStatus,
  scheduledAt: timestamp.nullable().meta({ description: 'When it publishes; null only for a draft without a date.' }),
  publishedAt: timestamp.nullable(),
  originRecycleEventId: uuid.nullable().meta({ description: 'The recycle event (GET /recycle-events) that made this schedule; null for one made by hand.' }),
  failureReason: z.string().nullable(),
  failureDetail: FailureDetail.nullable(),
  platformDeletedAt: timestamp.nullable(),
  scheduledContent: z.string().meta({ description: 'The text this channel publishes: the post\'s, an override, or a thread part.' }),
  firstComment: z.string().nullable(),
  settings: z.record(z.string(), z.unknown()),
  attachmentMediaUrls: z.array(z.string()).meta({ description: 'The URLs of the media this schedule publishes, in order (its post\'s; none on thread parts).' }),
  platformPostId: z.string().nullable(),
  releaseUrl: z.string().nullable(),
  retryCount: z.number().int(),
  lastAttempt: timestamp.nullable(),
  nextAttemptAt: timestamp.nullable().meta({
    description:
      'When a failed attempt is tried again automatically (the schedule is SCHEDULED, `failureReason` says which attempt failed); ' +
      'null otherwise: cleared when an attempt begins, and when it is rescheduled, retried by hand or held for approval.',
  }),
  threadRootScheduleId: uuid.nullable().meta({ description: 'For a thread part: the thread\'s first schedule; null for that one.' }),
  threadOrder: z.number().int().meta({ description: '0 for the thread\'s first schedule (every schedule without a thread), then 1, 2...' }),
  approvalStatus,
  approvalRequestedAt: timestamp.nullable(),
  approvalCompletedAt: timestamp.nullable(),
  createdAt: timestamp,
  updatedAt: timestamp,
});

export const PostSchedule = Schedule.extend({
  integration: z.object({ id: uuid, name: z.string(), platform, tokenStatus }),
}).meta({ id: 'Schedule' });

export const Post = z
  .object({
    id: uuid,
    content: z.string(),
    organizationId: uuid,
    userId: uuid.nullable().meta({ description: 'The author; null once that user no longer exists.' }),
    originSourcePostId: uuid.nullable(),
    isEvergreen: z.boolean().meta({ description: 'Worth posting again: recycle rules schedule it again once it has been published.' }),
    lastRecycledAt: timestamp.nullable().meta({ description: 'When a recycle rule last scheduled it again; null if never.' }),
    tagIds: z.array(uuid),
    approvalStatus,
    approvalRequestedAt: timestamp.nullable(),
    approvalCompletedAt: timestamp.nullable(),
    requiredApproverIds: z.array(z.string()).meta({ description: 'Who may approve it (user ids; a workspace owner may too); empty when no rule held it.' }),
    canSchedule,
    approvalReviewerId: uuid.nullable().meta({ description: 'Who approved or rejected it; null before a review, or once that user is gone.' }),
    approvalNote: z.string().nullable().meta({ description: 'The reviewer\'s note, kept with the decision.' }),
    createdAt: timestamp,
    updatedAt: timestamp,
    attachments: z.array(Attachment),
    collab: z
      .object({ shared: z.boolean(), allowComments: z.boolean(), audience: z.string(), recipientCount: z.number(), commentCount: z.number() })
      .nullable()
      .meta({ description: 'Null: collaboration is not built yet.' }),
    tags: z.array(z.object({ id: uuid, name: z.string(), slug: z.string() })),
    schedules: z.array(PostSchedule).meta({ description: 'One per target channel, thread parts after their first schedule.' }),
    user: z.object({ id: uuid, name: z.string(), email: z.string() }).nullable(),
    createdBy: z
      .object({
        kind: z.enum(['key', 'member', 'app']).meta({
          description: '`key`: written with an API key (an agent, a script); `member`: by a member, in the dashboard or the command line; `app`: by an app a member connected by OAuth (a hosted agent).',
        }),
        name: z.string().nullable().meta({
          description:
            'For `key`: the key\'s name (its current one; a revoked key keeps it; the name it had then once the key no longer exists). ' +
            'For `member`: the member\'s name; null once that user no longer exists. For `app`: the app\'s name as its member allowed it.',
        }),
        apiKeyId: uuid.nullable().meta({ description: 'For `key`: the key (as GET /api-keys lists it); null once it no longer exists, and for `member`.' }),
      })
      .nullable()
      .meta({ description: 'How the post was written: with which API key, by a member, or by a connected app. Null for posts written before Postwise recorded it.' }),
  })
  .meta({ id: 'Post' });

export type PostOutput = z.input<typeof Post>;

/**
 * How a post records who wrote it (migrations 027 and 028): with an API key or by a connected app (the key or the
 * connection, and its name then, kept should its row go), or as a member (the dashboard, a signed-in command line, the
 * admin command acting for a member).
 */
export const writtenBy = (principal: Principal) => {
  const none = { apiKeyId: null, apiKeyName: null, oauthConnectionId: null, appName: null };
  if (principal.kind === 'apiKey') return { ...none, createdByKind: 'key', apiKeyId: principal.keyId, apiKeyName: principal.keyName };
  if (principal.kind === 'connection') return { ...none, createdByKind: 'app', oauthConnectionId: principal.connectionId, appName: principal.appName };
  return { ...none, createdByKind: 'member' };
};

/**
 * The Schedule fields of a row `s` of schedules, as the select list of a subquery whose row becomes the JSON
 * object (`row_to_json`, `json_agg`): the lists build their answer as JSON in Postgres, which costs Node a
 * JSON.parse instead of reading and converting every column (and `row_to_json` costs Postgres less than
 * `json_build_object`: docs/benchmarks.md). Callers add the shapes they carry (`integration`, `post`) after these.
 */
export const scheduleColumns = (db: Sql, mediaUrls = db`'[]'::json`) => db`
  s.id AS "id", s.post_id AS "postId", s.organization_id AS "organizationId", s.user_id AS "userId",
  s.integration_id AS "integrationId", s.status AS "status", api_time(s.scheduled_at) AS "scheduledAt",
  api_time(s.published_at) AS "publishedAt", s.origin_recycle_event_id AS "originRecycleEventId",
  s.failure_reason AS "failureReason", s.failure_detail AS "failureDetail", api_time(s.platform_deleted_at) AS "platformDeletedAt",
  s.scheduled_content AS "scheduledContent", s.first_comment AS "firstComment", s.settings AS "settings",
  ${mediaUrls} AS "attachmentMediaUrls", s.platform_post_id AS "platformPostId", s.release_url AS "releaseUrl",
  s.retry_count AS "retryCount", api_time(s.last_attempt) AS "lastAttempt",
  api_time(s.next_attempt_at) AS "nextAttemptAt", s.thread_root_schedule_id AS "threadRootScheduleId",
  s.thread_order AS "threadOrder", s.approval_status AS "approvalStatus", api_time(s.approval_requested_at) AS "approvalRequestedAt",
  api_time(s.approval_completed_at) AS "approvalCompletedAt", api_time(s.created_at) AS "createdAt", api_time(s.updated_at) AS "updatedAt"`;

/**
 * A row `s` of schedules with its channel `i` as the Post's Schedule shows them, as select list (see scheduleColumns).
 * `mediaUrls`: the `attachmentMediaUrls` JSON, when it is made in SQL (events: operations/events/event.ts).
 */
export const postScheduleColumns = (db: Sql, mediaUrls?: PendingQuery<Row[]>) => db`
  ${scheduleColumns(db, mediaUrls)},
  json_build_object('id', i.id, 'name', i.name, 'platform', i.platform, 'tokenStatus', i.token_status) AS "integration"`;

/**
 * The posts `ids` of the workspace as the API shows them, in the order of `ids` (missing ones left out), from four
 * statements sent at once whatever the number of posts: the posts, their schedules (each as JSON text, read as text:
 * the client's camelCase transform would rewrite the keys of free-form JSON such as `settings`), their tags, and
 * their attachments with media URLs made by `storage`. Each is a plain read by ids, whose plan Postgres makes once and
 * keeps; a single statement nesting them all was planned anew on every run, and planning it cost as much as running
 * it (docs/benchmarks.md). Renders afresh, as a transaction's reads must (the events a write records); a read outside
 * one takes readPosts.
 */
export async function loadPosts(db: Sql, storage: Storage, workspaceId: string, ids: string[]): Promise<PostOutput[]> {
  const rendered = await renderPosts(db, storage, workspaceId, ids);
  return ids.flatMap((id) => rendered.get(id) ?? []);
}

/**
 * The fingerprints (src/registry/render-cache.ts) of the workspace's posts among `ids`, as JSON text: an object of fingerprints
 * by post id. Each covers every row its render reads: the post and its author, its schedules and their channels, its
 * tags, its attachments and their media; of the API key it was written with, the name alone (the key's row changes
 * every second the key is used: its last use). Scoped to the workspace, so that a post kept for one workspace is never
 * served to another.
 *
 * The workspace is a filter of the aggregate rather than of the rows, so that the statement's estimates depend only on
 * how many ids it is given: Postgres then keeps its generic plan after five runs. Filtered in the WHERE clause, a small
 * workspace's custom plan looked cheaper than the generic one, and the statement was planned on every run, which cost
 * more than running it (docs/benchmarks.md).
 */
const postFingerprints = (db: Sql, workspaceId: string, ids: string[]) => db<[{ fingerprints: string }]>`
  SELECT coalesce(json_object_agg(p.id, md5(concat_ws('|', p.xmin, u.xmin, k.name,
    (SELECT string_agg(concat(s.id, ':', s.xmin, ':', i.xmin), ',' ORDER BY s.id)
      FROM schedules s JOIN integrations i ON i.id = s.integration_id WHERE s.post_id = p.id),
    (SELECT string_agg(concat(pt.tag_id, ':', pt.xmin, ':', t.xmin), ',' ORDER BY pt.tag_id)
      FROM post_tags pt JOIN tags t ON t.id = pt.tag_id WHERE pt.post_id = p.id),
    ${attachmentsFingerprint(db, db`p.id`)}))) FILTER (WHERE p.organization_id = ${workspaceId}), '{}')::text AS fingerprints
  FROM posts p LEFT JOIN users u ON u.id = p.user_id LEFT JOIN api_keys k ON k.id = p.api_key_id
  WHERE p.id = ANY(${ids}::uuid[])`;

/** How much of the posts list's renders a process keeps: some thousands of posts of a few hundred characters. */
const POSTS_KEPT_BYTES = 24_000_000;

/**
 * The posts `ids` as loadPosts makes them, for a read outside any transaction: a post whose rows are unchanged since
 * this process last rendered it is served from `renders`.
 */
export async function readPosts({ db, storage, renders }: Pick<AppContext, 'db' | 'storage' | 'renders'>, workspaceId: string, ids: string[]): Promise<PostOutput[]> {
  if (ids.length === 0) return [];
  const [{ fingerprints: text }] = await postFingerprints(db, workspaceId, ids);
  const current = Object.entries(JSON.parse(text) as Record<string, string>).map(([id, fingerprint]) => ({ id, fingerprint }));
  const rendered = await renders.of<PostOutput>('posts', POSTS_KEPT_BYTES).read(current, (stale) => renderPosts(db, storage, workspaceId, stale));
  return ids.flatMap((id) => rendered.get(id) ?? []);
}

async function renderPosts(db: Sql, storage: Storage, workspaceId: string, ids: string[]): Promise<Map<string, PostOutput>> {
  if (ids.length === 0) return new Map();
  const [posts, schedules, tags, attachments] = await Promise.all([
    db<{ post: string }[]>`
      SELECT row_to_json(api)::text AS post
      FROM posts p LEFT JOIN users u ON u.id = p.user_id LEFT JOIN api_keys k ON k.id = p.api_key_id
      CROSS JOIN LATERAL (
        SELECT p.id AS "id", p.content AS "content", p.organization_id AS "organizationId", p.user_id AS "userId",
          p.origin_source_post_id AS "originSourcePostId", p.is_evergreen AS "isEvergreen", api_time(p.last_recycled_at) AS "lastRecycledAt",
          '[]'::json AS "tagIds", p.approval_status AS "approvalStatus", api_time(p.approval_requested_at) AS "approvalRequestedAt",
          api_time(p.approval_completed_at) AS "approvalCompletedAt", p.required_approver_ids AS "requiredApproverIds",
          COALESCE(p.approval_status NOT IN ('pending_review', 'rejected'), true) AS "canSchedule",
          p.approval_reviewer_id AS "approvalReviewerId", p.approval_note AS "approvalNote",
          api_time(p.created_at) AS "createdAt", api_time(p.updated_at) AS "updatedAt",
          '[]'::json AS "attachments", NULL::json AS "collab", '[]'::json AS "tags", '[]'::json AS "schedules",
          CASE WHEN u.id IS NOT NULL THEN json_build_object('id', u.id, 'name', u.name, 'email', u.email) END AS "user",
          CASE p.created_by_kind
            WHEN 'key' THEN json_build_object('kind', 'key', 'name', coalesce(k.name, p.api_key_name), 'apiKeyId', k.id)
            WHEN 'member' THEN json_build_object('kind', 'member', 'name', u.name, 'apiKeyId', NULL)
            WHEN 'app' THEN json_build_object('kind', 'app', 'name', p.app_name, 'apiKeyId', NULL)
          END AS "createdBy"
      ) api
      WHERE p.id = ANY(${ids}::uuid[]) AND p.organization_id = ${workspaceId}`,
    db<{ schedule: string }[]>`
      SELECT row_to_json(api)::text AS schedule
      FROM schedules s JOIN integrations i ON i.id = s.integration_id
      CROSS JOIN LATERAL (SELECT ${postScheduleColumns(db)}) api
      WHERE s.post_id = ANY(${ids}::uuid[]) AND s.organization_id = ${workspaceId}
      ORDER BY i.created_at, i.id, s.thread_order`,
    db<{ postId: string; id: string; name: string; slug: string }[]>`
      SELECT pt.post_id, t.id, t.name, t.slug FROM post_tags pt JOIN tags t ON t.id = pt.tag_id
      WHERE pt.post_id = ANY(${ids}::uuid[]) AND pt.organization_id = ${workspaceId}
      ORDER BY t.slug`,
    loadAttachments(db, storage, workspaceId, ids),
  ]);
  const byId = new Map<string, { post: PostOutput; mediaUrls: string[] }>();
  for (const row of posts) {
    const post = JSON.parse(row.post) as PostOutput;
    post.attachments = attachments.get(post.id) ?? [];
    byId.set(post.id, { post, mediaUrls: post.attachments.map((attachment) => attachment.media!.url) });
  }
  for (const { postId, ...tag } of tags) {
    const post = byId.get(postId)?.post;
    post?.tagIds.push(tag.id);
    post?.tags.push(tag);
  }
  for (const row of schedules) {
    const schedule = JSON.parse(row.schedule) as PostOutput['schedules'][number];
    const loaded = byId.get(schedule.postId);
    if (!loaded) continue;
    // The thread's first schedule publishes the post's media; thread parts carry none.
    if (schedule.threadOrder === 0) schedule.attachmentMediaUrls = loaded.mediaUrls;
    loaded.post.schedules.push(schedule);
  }
  return new Map([...byId].map(([id, { post }]) => [id, post]));
}
