import { randomUUID } from 'node:crypto';
import sharp from 'sharp';
import { z } from 'zod';
import type { Sql } from '../../src/db/index.js';
import { MAX_UPLOAD_BYTES as SHARED_MAX_UPLOAD_BYTES } from '../../src/platforms/rules.js';
import { uuid } from '../../src/registry/fields.js';
import type { Storage } from '../../src/storage/index.js';
import { enqueueVariants } from '../../src/worker/queue.js';
import { mediaColumns, toVariants, Variants, variantsStatus, type MediaRow } from '../media/media.js';
import { count } from '../posts/refusals.js';

/** What an upload is for. Only post attachments for now; an avatar scenario would fill `avatarUrl`. */
export const SCENARIOS = ['post_attachments'] as const;

/** The image types accepted, by media type, with the name sharp gives each format (complete checks the bytes). */
export const IMAGE_TYPES = { 'image/jpeg': 'jpeg', 'image/png': 'png', 'image/webp': 'webp', 'image/gif': 'gif' } as const;
export type ImageType = keyof typeof IMAGE_TYPES;

/** 20 MiB (src/platforms/rules.ts, which the dashboard's composer checks files against before initiating). */
export const MAX_UPLOAD_BYTES = SHARED_MAX_UPLOAD_BYTES;

export const scenarioId = z.enum(SCENARIOS).meta({ description: '`post_attachments`: media to attach to posts (rows[].media).' });

/**
 * The SHA-256 of the file's bytes, as base64 of the 32-byte digest (44 characters, what S3's x-amz-checksum-sha256
 * takes), or as 64 hex digits; either is read as the base64 form.
 */
export const checksum = z
  .string()
  .transform((value, ctx) => {
    if (/^[0-9a-fA-F]{64}$/.test(value)) return Buffer.from(value, 'hex').toString('base64');
    if (/^[A-Za-z0-9+/]{43}=$/.test(value)) return value;
    ctx.addIssue({ code: 'custom', message: 'must be the SHA-256 of the bytes: base64 of the 32-byte digest (44 characters) or 64 hex digits' });
    return z.NEVER;
  })
  .meta({
    description:
      'The SHA-256 of the file\'s bytes: base64 of the 32-byte digest (44 characters, e.g. `openssl dgst -sha256 -binary FILE | base64`), ' +
      'or the same digest as 64 hex digits.',
  });

export const UploadResult = z
  .object({
    uploadId: uuid,
    status: z.enum(['completed']),
    objectKey: z.string(),
    publicUrl: z.string().meta({ description: 'Where anyone reads the uploaded file.' }),
    idempotent: z.boolean().meta({ description: 'True when the upload had been completed before: this is that result again.' }),
    mediaId: uuid,
    variants: Variants,
    variantsStatus,
    avatarUrl: z.string().nullable().meta({ description: 'Null: no scenario makes avatars yet.' }),
  })
  .meta({ id: 'UploadResult' });

export interface UploadRow {
  id: string;
  scenarioId: string;
  size: string;
  checksum: string;
  objectKey: string;
  status: 'pending' | 'completed';
  /** Whether its signed URL has expired, by the database's clock: the one reserveStorage and withdrawUpload read too. */
  expired: boolean;
}

/** The upload `id` of the workspace, locked until the transaction ends. */
export async function lockUpload(tx: Sql, workspaceId: string, id: string): Promise<UploadRow | undefined> {
  const [upload] = await tx<UploadRow[]>`
    SELECT id, scenario_id, size, checksum, object_key, status, expires_at <= now() AS expired FROM uploads
    WHERE id = ${id} AND organization_id = ${workspaceId} AND status <> 'withdrawn' FOR UPDATE`;
  return upload;
}

/**
 * Takes an upload out of the API, with its media: removed when its signed URL has expired; otherwise withdrawn, since
 * the URL still accepts a PUT until then: its bytes stay counted against the allowance (reserveStorage counts every
 * upload whose URL still works) and the upload-expiry task removes what was PUT, and the row, at the expiry.
 */
export async function withdrawUpload(tx: Sql, uploadId: string): Promise<void> {
  await tx`DELETE FROM media WHERE upload_id = ${uploadId}`;
  const [withdrawn] = await tx`
    UPDATE uploads SET status = 'withdrawn', updated_at = now() WHERE id = ${uploadId} AND expires_at > now() RETURNING id`;
  if (!withdrawn) await tx`DELETE FROM uploads WHERE id = ${uploadId}`;
}

/** A completed upload as the API shows it; undefined once it is deleted. */
export async function uploadResult(db: Sql, storage: Storage, uploadId: string, idempotent: boolean): Promise<z.input<typeof UploadResult> | undefined> {
  const [media] = await db<(MediaRow & { uploadObjectKey: string })[]>`
    SELECT ${mediaColumns(db)}, u.object_key AS upload_object_key FROM media m JOIN uploads u ON u.id = m.upload_id WHERE m.upload_id = ${uploadId}`;
  if (!media) return undefined;
  return {
    uploadId,
    status: 'completed',
    objectKey: media.uploadObjectKey,
    publicUrl: storage.publicUrl(media.uploadObjectKey),
    idempotent,
    mediaId: media.id,
    variants: toVariants(storage, media!),
    variantsStatus: media.variantsStatus,
    avatarUrl: null,
  };
}

/**
 * Reserves `bytes` of the workspace's storage allowance, or says why not (STORAGE_QUOTA_EXCEEDED). In use: completed
 * uploads and pending ones whose signed URL has not expired (an expired reservation lapses by itself). The
 * workspace row is locked first, so concurrent reservations are counted one after another and cannot overrun it.
 * `excluding`: an upload whose own reservation is being renewed.
 */
export async function reserveStorage(tx: Sql, workspaceId: string, bytes: number, excluding?: string): Promise<string | undefined> {
  await tx`SELECT 1 FROM organizations WHERE id = ${workspaceId} FOR NO KEY UPDATE`;
  const { plan, limit, usage } = await storageInUse(tx, workspaceId, excluding);
  if (usage + bytes <= limit) return undefined;
  return (
    `The ${plan} plan allows ${count(limit, 'byte')} of storage; ${count(usage, 'byte')} are in use (uploads in progress included, ` +
    'and deleted ones until their signed URL expires), ' +
    `and this upload needs ${count(bytes, 'more byte')}. Delete media (DELETE /uploads/{uploadId}) or change plan`
  );
}

/** The workspace's plan, its storage allowance and the bytes in use: completed uploads and pending ones whose URL has not expired. */
export async function storageInUse(tx: Sql, workspaceId: string, excluding?: string): Promise<{ plan: string; limit: number; usage: number }> {
  const [state] = await tx<{ plan: string; storageBytes: string; used: string }[]>`
    SELECT o.plan, p.storage_bytes, (SELECT coalesce(sum(size), 0) FROM uploads
      WHERE organization_id = o.id AND (status = 'completed' OR expires_at > now()) AND id IS DISTINCT FROM ${excluding ?? null}::uuid) AS used
    FROM organizations o JOIN plans p ON p.name = o.plan WHERE o.id = ${workspaceId}`;
  return { plan: state!.plan, limit: Number(state!.storageBytes), usage: Number(state!.used) };
}

/** The image type of `bytes` as sharp reads it, with its size in pixels, or undefined when it is none we take. */
export async function imageOf(bytes: Buffer): Promise<{ type: ImageType; width: number; height: number } | undefined> {
  try {
    const { format, width, height } = await sharp(bytes).metadata();
    const type = (Object.keys(IMAGE_TYPES) as ImageType[]).find((candidate) => IMAGE_TYPES[candidate] === format);
    return type && width && height ? { type, width, height } : undefined;
  } catch {
    return undefined;
  }
}

/** The media of a verified upload, with its variants queued, in the transaction that completes the upload. */
export async function createMedia(
  tx: Sql,
  media: {
    workspaceId: string;
    uploadId: string;
    objectKey: string;
    size: number;
    image: { type: ImageType; width: number; height: number };
    /** A GIF picked from a provider: which, and its id there. */
    provider?: { name: string; id: string };
  },
): Promise<string> {
  const mediaId = randomUUID();
  await tx`
    INSERT INTO media (id, organization_id, upload_id, type, mime_type, object_key, size, width, height, provider, provider_id)
    VALUES (${mediaId}, ${media.workspaceId}, ${media.uploadId}, 'IMAGE', ${media.image.type}, ${media.objectKey}, ${media.size},
      ${media.image.width}, ${media.image.height}, ${media.provider?.name ?? null}, ${media.provider?.id ?? null})`;
  await enqueueVariants(tx, mediaId);
  return mediaId;
}

/** The file name as part of an object key: its letters, digits, dots, dashes and underscores, at most 100. */
export function keyName(fileName: string): string {
  const safe = fileName.normalize('NFKD').replace(/[^A-Za-z0-9._-]+/g, '-').replace(/^[-.]+/, '').slice(-100);
  return safe || 'file';
}
