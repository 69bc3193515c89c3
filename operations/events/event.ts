import type { PendingQuery, Row } from 'postgres';
import { z } from 'zod';
import type { Sql } from '../../src/db/index.js';
import { timestamp, uuid } from '../../src/registry/fields.js';
import type { Storage } from '../../src/storage/index.js';
import { Integration, selectIntegrations, toIntegration } from '../integrations/integration.js';
import { loadPosts, Post, postScheduleColumns, PostSchedule } from '../posts/post.js';
import { uploadResult, UploadResult } from '../uploads/upload.js';
import { WebhookEndpoint } from '../webhooks/webhook.js';
import { EVENT_TYPES, type IntegrationEventType, type PostEventType, type ScheduleEventType } from './types.js';

/**
 * Events: a row of the outbox (migrations/016_events.sql) per change that matters, written by the change's own
 * transaction, carrying the resource as the API shows it after the change (before it, for a deletion); the types are
 * in ./types.ts.
 */

const envelope = <T extends readonly [string, ...string[]], D extends z.ZodType>(types: T, data: D) =>
  z.object({
    id: z.string().meta({ description: 'Unique and stable (the same in every delivery); also the feed\'s position: pass it as `cursor`.' }),
    type: z.enum(types),
    createdAt: timestamp,
    workspaceId: uuid,
    data,
  });

export const Event = z
  .discriminatedUnion('type', [
    envelope(EVENT_TYPES.post, Post).meta({ description: 'A post: the Post as GET /posts/{id} shows it (before its deletion, for post.deleted).' }),
    envelope(EVENT_TYPES.schedule, PostSchedule).meta({
      description: 'A schedule: the Schedule as a Post\'s `schedules` show it, with its `integration` (before its deletion, for schedule.deleted).',
    }),
    envelope(EVENT_TYPES.integration, Integration).meta({ description: 'A channel: the Integration as GET /integrations shows it.' }),
    envelope(EVENT_TYPES.upload, UploadResult.omit({ idempotent: true })).meta({ description: 'An upload, as POST /uploads/complete answers it.' }),
    envelope(EVENT_TYPES.endpoint, WebhookEndpoint).meta({ description: 'A webhook endpoint, as GET /webhooks shows it.' }),
  ])
  .meta({ id: 'Event' });

export type EventOutput = z.input<typeof Event>;

/** `evt_<tx>_<seq>`: the id a row's position makes (see the migration), and back. */
export const eventIdSql = (db: Sql) => db`'evt_' || e.tx || '_' || e.seq`;
/** A row `e` of events as its envelope `{ id, type, createdAt, workspaceId, data }`, as JSON: what a delivery sends. */
export const envelopeJson = (db: Sql) =>
  db`json_build_object('id', ${eventIdSql(db)}, 'type', e.type, 'createdAt', api_time(e.created_at), 'workspaceId', e.organization_id, 'data', e.data)`;
export function eventPosition(id: string): { tx: string; seq: string } | undefined {
  const match = /^evt_(\d{1,20})_(\d{1,19})$/.exec(id);
  return match ? { tx: match[1]!, seq: match[2]! } : undefined;
}

interface Recorded {
  type: string;
  resourceId: string;
  postId?: string | null;
  data: unknown;
}

/** Appends events whose data Node made, in the caller's transaction `tx`. */
export async function recordEvents(tx: Sql, workspaceId: string, events: Recorded[]): Promise<void> {
  if (events.length === 0) return;
  await tx`
    INSERT INTO events (organization_id, type, resource_id, post_id, data)
    SELECT ${workspaceId}, e.type, e."resourceId", e."postId", e.data
    FROM json_to_recordset(${JSON.stringify(events)}::text::json) AS e (type text, "resourceId" uuid, "postId" uuid, data json)`;
}

/** One `type` event for each post of `postIds`, with the post as it is now in `tx`. */
export async function recordPostEvents(tx: Sql, storage: Storage, workspaceId: string, type: PostEventType, postIds: string[]): Promise<void> {
  const posts = await loadPosts(tx, storage, workspaceId, postIds);
  await recordEvents(tx, workspaceId, posts.map((post) => ({ type, resourceId: post.id, postId: post.id, data: post })));
}

/**
 * The statement that appends one `type` event for each schedule row of `schedules` (a table or a data-modifying
 * CTE's name, or a subquery: anything with the schedules table's columns, named `s` here), with the schedule as a
 * Post shows it, made in SQL so that the engine's state changes write their events in the same statement. Media URLs
 * are the store's public prefix and the object key: the keys we make are URL-safe (keyName in uploads/upload.ts), so
 * this is what `storage.publicUrl` makes of them.
 */
export function scheduleEvents(db: Sql, storage: Storage, type: ScheduleEventType, schedules: PendingQuery<Row[]>): PendingQuery<Row[]> {
  const mediaUrls = db`CASE WHEN s.thread_order = 0 THEN (
    SELECT coalesce(json_agg(${storage.publicUrl('')} || m.object_key ORDER BY a."order"), '[]'::json)
    FROM attachments a JOIN media m ON m.id = a.media_id WHERE a.post_id = s.post_id) ELSE '[]'::json END`;
  return db`
    INSERT INTO events (organization_id, type, resource_id, post_id, data)
    SELECT s.organization_id, ${type}, s.id, s.post_id, row_to_json(api)
    FROM ${schedules} s JOIN integrations i ON i.id = s.integration_id
    CROSS JOIN LATERAL (SELECT ${postScheduleColumns(db, mediaUrls)}) api
    ORDER BY s.post_id, s.integration_id, s.thread_order`;
}

/** One `type` event for each of the schedules `ids`, as they are now in `tx`. */
export async function recordScheduleEvents(tx: Sql, storage: Storage, type: ScheduleEventType, ids: string[]): Promise<void> {
  if (ids.length) await tx`${scheduleEvents(tx, storage, type, tx`(SELECT * FROM schedules WHERE id = ANY(${ids}::uuid[]))`)}`;
}

/** One `type` event for the channel `id`, as it is now in `tx`. */
export async function recordIntegrationEvent(tx: Sql, workspaceId: string, type: IntegrationEventType, id: string): Promise<void> {
  const [row] = await selectIntegrations(tx, workspaceId, id);
  if (row) await recordEvents(tx, workspaceId, [{ type, resourceId: id, data: toIntegration(row) }]);
}

/** upload.completed for `uploadId`, completed in `tx`. */
export async function recordUploadCompleted(tx: Sql, storage: Storage, workspaceId: string, uploadId: string): Promise<void> {
  const result = await uploadResult(tx, storage, uploadId, false);
  if (!result) return;
  const { idempotent: _idempotent, ...data } = result;
  await recordEvents(tx, workspaceId, [{ type: 'upload.completed', resourceId: uploadId, data }]);
}

/**
 * `change` (an UPDATE or DELETE of schedules ending in `RETURNING *`) with a `type` event for each schedule it changed,
 * in one statement; answers the changed rows.
 */
export function changeSchedules<T extends Row = Row>(db: Sql, storage: Storage, type: ScheduleEventType, change: PendingQuery<Row[]>): PendingQuery<T[]> {
  return db<T[]>`WITH changed AS (${change}), recorded AS (${scheduleEvents(db, storage, type, db`changed`)}) SELECT * FROM changed`;
}
