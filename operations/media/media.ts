import { z } from 'zod';
import type { Sql } from '../../src/db/index.js';
import { iso, timestamp, uuid } from '../../src/registry/fields.js';
import type { Storage } from '../../src/storage/index.js';

/** A stored image or video, created by completing an upload (operations/uploads/complete.ts). */
export const Variant = z
  .object({ url: z.string(), width: z.number().int(), height: z.number().int(), sizeBytes: z.number(), objectKey: z.string() })
  .meta({ id: 'Variant' });

export const VARIANT_NAMES = ['1:1', '4:5', '9:16', '1.91:1', 'source'] as const;
export type VariantName = (typeof VARIANT_NAMES)[number];

export const Variants = z
  .object({
    '1:1': Variant.optional(),
    '4:5': Variant.optional(),
    '9:16': Variant.optional(),
    '1.91:1': Variant.optional(),
    source: Variant.optional(),
  })
  .meta({
    id: 'Variants',
    description:
      'Made by the worker once the upload completes (empty until `variantsStatus` is `ready`): centre-of-interest crops to each aspect ' +
      'ratio, at most 1080 px wide (1200 for 1.91:1) and never enlarged, and `source`, the whole image at most 2000 px on its long side ' +
      'in at most 1,000,000 bytes. JPEG, or WebP where the image has transparency.',
  });

export const variantsStatus = z.enum(['pending', 'ready', 'failed']).meta({
  description: '`pending` until the worker has made the variants, then `ready`, or `failed` (see the upload\'s media for the reason).',
});

export const Media = z
  .object({
    id: uuid,
    url: z.string(),
    type: z.string().meta({ description: 'e.g. `IMAGE`' }),
    provider: z.string().nullable().meta({ description: 'e.g. `GIPHY`; null for an upload' }),
    size: z.number(),
    width: z.number().nullable(),
    height: z.number().nullable(),
    variants: Variants,
    variantsStatus,
    createdAt: timestamp,
    updatedAt: timestamp,
  })
  .meta({ id: 'Media' });

/** A variant as stored in media.variants; its URL is made when read, so a new S3_PUBLIC_URL applies to old media too. */
export interface StoredVariant {
  objectKey: string;
  width: number;
  height: number;
  sizeBytes: number;
}

export interface MediaRow {
  id: string;
  type: string;
  provider: string | null;
  mimeType: string;
  objectKey: string;
  size: string;
  width: number | null;
  height: number | null;
  /** As text: the client's camelCase transform would rewrite JSON keys. */
  variantsText: string;
  variantsStatus: 'pending' | 'ready' | 'failed';
  variantsError: string | null;
  createdAt: Date;
  updatedAt: Date;
}

export const storedVariants = (row: Pick<MediaRow, 'variantsText'>): Partial<Record<VariantName, StoredVariant>> => JSON.parse(row.variantsText);

export function toVariants(storage: Storage, row: Pick<MediaRow, 'variantsText'>): z.input<typeof Variants> {
  return Object.fromEntries(Object.entries(storedVariants(row)).map(([name, variant]) => [name, { ...variant, url: storage.publicUrl(variant.objectKey) }]));
}

export function toMedia(storage: Storage, row: MediaRow): z.input<typeof Media> {
  return {
    id: row.id,
    url: storage.publicUrl(row.objectKey),
    type: row.type,
    provider: row.provider,
    size: Number(row.size),
    width: row.width,
    height: row.height,
    variants: toVariants(storage, row),
    variantsStatus: row.variantsStatus,
    createdAt: iso(row.createdAt),
    updatedAt: iso(row.updatedAt),
  };
}

/** The columns of MediaRow, for queries that select media (aliased `m`). */
export const mediaColumns = (db: Sql) =>
  db`m.id, m.type, m.provider, m.mime_type, m.object_key, m.size, m.width, m.height, m.variants::text AS variants_text, m.variants_status,
    m.variants_error, m.created_at, m.updated_at`;
