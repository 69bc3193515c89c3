import { z } from 'zod';
import { timestamp, uuid } from '../../src/registry/fields.js';

/** A stored image or video. The uploads feature creates media; until then no post has any. */
export const Variant = z.object({ url: z.string(), width: z.number().int(), height: z.number().int(), sizeBytes: z.number(), objectKey: z.string() });

export const Media = z
  .object({
    id: uuid,
    url: z.string(),
    type: z.string().meta({ description: 'e.g. `IMAGE`' }),
    provider: z.string().nullable().meta({ description: 'e.g. `GIPHY`; null for an upload' }),
    size: z.number(),
    width: z.number().nullable(),
    height: z.number().nullable(),
    variants: z.object({
      '1:1': Variant.optional(),
      '4:5': Variant.optional(),
      '9:16': Variant.optional(),
      '1.91:1': Variant.optional(),
      source: Variant.optional(),
    }),
    variantsStatus: z.string().meta({ description: 'e.g. `pending`' }),
    createdAt: timestamp,
    updatedAt: timestamp,
  })
  .meta({ id: 'Media' });
