import type { PendingQuery, Row } from 'postgres';
import { z } from 'zod';
import type { Sql } from '../../src/db/index.js';
import type { AttachedImage } from '../../src/platforms/index.js';
import { NOT_FOUND_MESSAGE } from '../../src/registry/errors.js';
import { iso, text, timestamp, uuid } from '../../src/registry/fields.js';
import type { Storage } from '../../src/storage/index.js';
import { Media, mediaColumns, storedVariants, toMedia, type MediaRow } from '../media/media.js';

/** A post's image, in order, as the API shows it. */
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

/** rows[].media on createPost, and media on updatePost: completed uploads' media, in order. */
export const mediaList = z
  .array(
    z.strictObject({
      id: uuid.meta({ description: 'A `mediaId` from POST /uploads/complete.' }),
      altText: text.max(5000).optional().meta({ description: 'Read aloud by screen readers; each platform caps its length (see MEDIA_RULE_VIOLATED).' }),
    }),
  )
  .max(20)
  .meta({
    description:
      'Images in order, each once, with optional alt text, within each channel\'s platform rules (400 MEDIA_RULE_VIOLATED names the ' +
      'platform and the rule): Bluesky at most 4 images of at most 1,000,000 bytes each (the `source` variant is published, made to ' +
      'fit) and alt text up to 2000 graphemes; LinkedIn at most 20 JPEG, PNG or GIF images and alt text up to 4086 characters.',
  });

export type MediaInput = z.output<typeof mediaList>;

/**
 * The images `lists` name, as the platform rules see them, in each list's order; or the field of the first id that
 * is not a media of the workspace, or that a list names twice. The media rows are share-locked until the
 * transaction ends, so a concurrent DELETE /uploads/{uploadId} waits for the attachments (and then refuses), or
 * deletes first (and these ids are not found).
 */
export async function imagesOf(tx: Sql, workspaceId: string, lists: { field: string; media: MediaInput }[]): Promise<AttachedImage[][] | { missing: string } | { repeated: string }> {
  const ids = [...new Set(lists.flatMap((list) => list.media.map((item) => item.id)))];
  const rows = ids.length
    ? await tx<{ id: string; mimeType: string; variantsStatus: AttachedImage['variantsStatus']; variantsText: string }[]>`
        SELECT id, mime_type, variants_status, variants::text AS variants_text FROM media
        WHERE organization_id = ${workspaceId} AND id = ANY(${ids}::uuid[]) ORDER BY id FOR KEY SHARE`
    : [];
  const byId = new Map(rows.map((row) => [row.id, row]));
  const images: AttachedImage[][] = [];
  for (const list of lists) {
    const seen = new Set<string>();
    const found: AttachedImage[] = [];
    for (const [index, item] of list.media.entries()) {
      const row = byId.get(item.id);
      if (!row) return { missing: `${list.field}[${index}].id` };
      if (seen.has(item.id)) return { repeated: `${list.field}[${index}].id: ${item.id} is attached a second time` };
      seen.add(item.id);
      const source = storedVariants(row).source;
      found.push({
        mimeType: row.mimeType,
        altText: item.altText ?? null,
        variantsStatus: row.variantsStatus,
        publishedBytes: source?.sizeBytes ?? null,
        publishedPixels: source ? source.width * source.height : null,
      });
    }
    images.push(found);
  }
  return images;
}

export const missingMedia = (field: string) => `${NOT_FOUND_MESSAGE}: ${field} is not a media of this workspace (complete an upload first)`;

/** Replaces the attachments of `postId` with `media`, in order. */
export async function setAttachments(tx: Sql, workspaceId: string, postId: string, media: MediaInput): Promise<void> {
  await tx`DELETE FROM attachments WHERE post_id = ${postId}`;
  if (media.length === 0) return;
  await tx`INSERT INTO attachments ${tx(
    media.map((item, order) => ({ postId, organizationId: workspaceId, mediaId: item.id, order, altText: item.altText ?? null })),
  )}`;
}

/**
 * The part of a render's fingerprint (src/registry/render-cache.ts) that covers the attachments of post `postId` and their
 * media: what loadAttachments reads.
 */
export const attachmentsFingerprint = (db: Sql, postId: PendingQuery<Row[]>) => db`(
  SELECT string_agg(concat(a.id, ':', a.xmin, ':', m.xmin), ',' ORDER BY a.id)
  FROM attachments a JOIN media m ON m.id = a.media_id WHERE a.post_id = ${postId})`;

/** The attachments of `postIds` as the API shows them, by post, in order. */
export async function loadAttachments(db: Sql, storage: Storage, workspaceId: string, postIds: string[]): Promise<Map<string, z.input<typeof Attachment>[]>> {
  const rows = await db<(MediaRow & { attachmentId: string; postId: string; order: number; altText: string | null; mediaId: string; attachedAt: Date; attachmentUpdatedAt: Date })[]>`
    SELECT ${mediaColumns(db)}, a.id AS attachment_id, a.post_id, a."order", a.alt_text, a.media_id, a.created_at AS attached_at,
      a.updated_at AS attachment_updated_at
    FROM attachments a JOIN media m ON m.id = a.media_id
    WHERE a.organization_id = ${workspaceId} AND a.post_id = ANY(${postIds}::uuid[])
    ORDER BY a.post_id, a."order"`;
  const byPost = new Map<string, z.input<typeof Attachment>[]>();
  for (const row of rows) {
    const list = byPost.get(row.postId) ?? [];
    list.push({
      id: row.attachmentId,
      order: row.order,
      altText: row.altText,
      postId: row.postId,
      mediaId: row.mediaId,
      media: toMedia(storage, row),
      // An image is its own preview; a video's would be a captured frame (thumbnailSource FRAME_CAPTURE).
      thumbnailMediaId: row.mediaId,
      thumbnailSource: null,
      thumbnailTimestampMs: null,
      thumbnail: toMedia(storage, row),
      createdAt: iso(row.attachedAt),
      updatedAt: iso(row.attachmentUpdatedAt),
    });
    byPost.set(row.postId, list);
  }
  return byPost;
}
