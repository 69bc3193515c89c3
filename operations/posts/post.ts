import { z } from 'zod';
import type { Sql } from '../../src/db/index.js';
import { iso, isoOrNull, timestamp, uuid } from '../../src/registry/fields.js';
import { platform, tokenStatus } from '../integrations/integration.js';
import { Media } from '../media/media.js';
import type { Platform } from '../../src/platforms/index.js';
import type { Storage } from '../../src/storage/index.js';
import { loadAttachments } from './attachments.js';

export const SCHEDULE_STATUSES = ['DRAFT', 'SCHEDULED', 'PUBLISHING', 'PUBLISHED', 'FAILED'] as const;
export type ScheduleStatus = (typeof SCHEDULE_STATUSES)[number];
export const scheduleStatus = z.enum(SCHEDULE_STATUSES);

const approvalStatus = z
  .enum(['pending_review', 'approved', 'rejected'])
  .nullable()
  .meta({ description: 'Null: the workspace has no approval workflow (not built yet).' });

export const Attachment = z
  .object({
    id: uuid,
    order: z.number().int(),
    altText: z.string().nullable(),
    postId: uuid,
    mediaId: uuid,
    media: Media.nullable(),
    thumbnailMediaId: uuid.nullable(),
    thumbnailSource: z.string().nullable().meta({ description: 'e.g. `FRAME_CAPTURE`' }),
    thumbnailTimestampMs: z.number().nullable(),
    thumbnail: Media.nullable(),
    createdAt: timestamp,
    updatedAt: timestamp,
  })
  .meta({ id: 'Attachment' });

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
  originRecycleEventId: uuid.nullable(),
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
    isEvergreen: z.boolean(),
    lastRecycledAt: timestamp.nullable(),
    tagIds: z.array(uuid),
    approvalStatus,
    approvalRequestedAt: timestamp.nullable(),
    approvalCompletedAt: timestamp.nullable(),
    requiredApproverIds: z.array(z.string()),
    canSchedule: z.boolean().meta({ description: 'False while the post waits for approval.' }),
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
  })
  .meta({ id: 'Post' });

export type PostOutput = z.input<typeof Post>;

interface PostRow {
  id: string;
  content: string;
  organizationId: string;
  userId: string | null;
  originSourcePostId: string | null;
  isEvergreen: boolean;
  lastRecycledAt: Date | null;
  approvalStatus: 'pending_review' | 'approved' | 'rejected' | null;
  approvalRequestedAt: Date | null;
  approvalCompletedAt: Date | null;
  requiredApproverIds: string[];
  createdAt: Date;
  updatedAt: Date;
  userName: string | null;
  userEmail: string | null;
}

export interface ScheduleRow {
  id: string;
  postId: string;
  organizationId: string;
  userId: string | null;
  integrationId: string;
  status: ScheduleStatus;
  scheduledAt: Date | null;
  publishedAt: Date | null;
  originRecycleEventId: string | null;
  failureReason: string | null;
  failureDetail: z.input<typeof FailureDetail> | null;
  platformDeletedAt: Date | null;
  scheduledContent: string;
  firstComment: string | null;
  /** As text: the client's camelCase transform would rewrite the keys of free-form JSON. */
  settingsText: string;
  platformPostId: string | null;
  releaseUrl: string | null;
  retryCount: number;
  lastAttempt: Date | null;
  threadRootScheduleId: string | null;
  threadOrder: number;
  approvalStatus: 'pending_review' | 'approved' | 'rejected' | null;
  approvalRequestedAt: Date | null;
  approvalCompletedAt: Date | null;
  createdAt: Date;
  updatedAt: Date;
  integrationName: string;
  integrationPlatform: Platform;
  integrationTokenStatus: z.infer<typeof tokenStatus>;
}

/**
 * The posts `ids` of the workspace as the API shows them, in the order of `ids` (missing ones left out).
 * Four queries, whatever the number of posts: the posts, their schedules, their tags, their attachments.
 */
export async function loadPosts(db: Sql, storage: Storage, workspaceId: string, ids: string[]): Promise<PostOutput[]> {
  if (ids.length === 0) return [];
  const [posts, schedules, tags, attachments] = await Promise.all([
    db<PostRow[]>`
      SELECT p.*, u.name AS user_name, u.email AS user_email
      FROM posts p LEFT JOIN users u ON u.id = p.user_id
      WHERE p.organization_id = ${workspaceId} AND p.id = ANY(${ids}::uuid[])`,
    db<ScheduleRow[]>`
      SELECT s.*, s.settings::text AS settings_text, i.name AS integration_name, i.platform AS integration_platform, i.token_status AS integration_token_status
      FROM schedules s JOIN integrations i ON i.id = s.integration_id
      WHERE s.organization_id = ${workspaceId} AND s.post_id = ANY(${ids}::uuid[])
      ORDER BY i.created_at, i.id, s.thread_order`,
    db<{ postId: string; id: string; name: string; slug: string }[]>`
      SELECT pt.post_id, t.id, t.name, t.slug FROM post_tags pt JOIN tags t ON t.id = pt.tag_id
      WHERE pt.organization_id = ${workspaceId} AND pt.post_id = ANY(${ids}::uuid[])
      ORDER BY t.slug`,
    loadAttachments(db, storage, workspaceId, ids),
  ]);
  const byId = new Map(posts.map((post) => [post.id, post]));
  return ids.flatMap((id) => {
    const post = byId.get(id);
    if (!post) return [];
    const postTags = tags.filter((tag) => tag.postId === id).map(({ id, name, slug }) => ({ id, name, slug }));
    const postAttachments = attachments.get(id) ?? [];
    const mediaUrls = postAttachments.map((attachment) => attachment.media!.url);
    return [
      {
        id: post.id,
        content: post.content,
        organizationId: post.organizationId,
        userId: post.userId,
        originSourcePostId: post.originSourcePostId,
        isEvergreen: post.isEvergreen,
        lastRecycledAt: isoOrNull(post.lastRecycledAt),
        tagIds: postTags.map((tag) => tag.id),
        approvalStatus: post.approvalStatus,
        approvalRequestedAt: isoOrNull(post.approvalRequestedAt),
        approvalCompletedAt: isoOrNull(post.approvalCompletedAt),
        requiredApproverIds: post.requiredApproverIds,
        canSchedule: post.approvalStatus !== 'pending_review' && post.approvalStatus !== 'rejected',
        createdAt: iso(post.createdAt),
        updatedAt: iso(post.updatedAt),
        attachments: postAttachments,
        collab: null,
        tags: postTags,
        schedules: schedules.filter((schedule) => schedule.postId === id).map((schedule) => toPostSchedule(schedule, mediaUrls)),
        user: post.userId && post.userName !== null && post.userEmail !== null ? { id: post.userId, name: post.userName, email: post.userEmail } : null,
      },
    ];
  });
}

function toPostSchedule(row: ScheduleRow, mediaUrls: string[]): z.input<typeof PostSchedule> {
  return {
    ...toSchedule(row, mediaUrls),
    integration: { id: row.integrationId, name: row.integrationName, platform: row.integrationPlatform, tokenStatus: row.integrationTokenStatus },
  };
}

/**
 * A schedule row as the API shows it, without the channel (each endpoint adds the shape it carries). `mediaUrls`:
 * its post's media, which the thread's first schedule publishes (thread parts carry none).
 */
export function toSchedule(row: ScheduleRow, mediaUrls: string[]): z.input<typeof Schedule> {
  const { integrationName: _name, integrationPlatform: _platform, integrationTokenStatus: _tokenStatus, settingsText, ...schedule } = row;
  return {
    ...schedule,
    settings: JSON.parse(settingsText),
    scheduledAt: isoOrNull(row.scheduledAt),
    publishedAt: isoOrNull(row.publishedAt),
    platformDeletedAt: isoOrNull(row.platformDeletedAt),
    lastAttempt: isoOrNull(row.lastAttempt),
    approvalRequestedAt: isoOrNull(row.approvalRequestedAt),
    approvalCompletedAt: isoOrNull(row.approvalCompletedAt),
    createdAt: iso(row.createdAt),
    updatedAt: iso(row.updatedAt),
    attachmentMediaUrls: row.threadOrder === 0 ? mediaUrls : [],
  };
}
