import type { JobHelpers, Task } from 'graphile-worker';
import { availableParallelism } from 'node:os';
import pLimit from 'p-limit';
import sharp from 'sharp';
import type { Sharp } from 'sharp';
import { z } from 'zod';
import type { StoredVariant, VariantName } from '../../operations/media/media.js';
import type { AppContext } from '../registry/context.js';
import { TASK } from './queue.js';
import { defineTask } from './task.js';

/**
 * The media-variants task: the platform-ready versions of an uploaded image. Crops keep the centre of interest
 * (sharp's `attention` strategy) at each aspect ratio; nothing is enlarged. A run that finds the media gone or no
 * longer pending does nothing, so a job that runs twice is harmless; objects made for media deleted meanwhile are
 * removed again.
 */

const Payload = z.strictObject({ mediaId: z.uuid() });

/** Width over height, and the largest width made (the platforms' recommended sizes). */
const CROPS: Record<Exclude<VariantName, 'source'>, { ratio: number; maxWidth: number }> = {
  '1:1': { ratio: 1, maxWidth: 1080 },
  '4:5': { ratio: 4 / 5, maxWidth: 1080 },
  '9:16': { ratio: 9 / 16, maxWidth: 1080 },
  '1.91:1': { ratio: 1.91, maxWidth: 1200 },
};
/** The source variant: the long side at most this, and at most 1,000,000 bytes, Bluesky's blob limit. */
const SOURCE_MAX_SIDE = 2000;
export const SOURCE_MAX_BYTES = 1_000_000;

/** The crop of `ratio` that fits in width × height, scaled to at most `maxWidth` wide. */
export function cropSize(width: number, height: number, ratio: number, maxWidth: number): { width: number; height: number } {
  const cropWidth = Math.min(width, height * ratio);
  const outWidth = Math.max(1, Math.round(Math.min(cropWidth, maxWidth)));
  // Rounding must not ask for a row the source lacks (563 / (9/16) is 1000.9 for a 1000-pixel-high source).
  return { width: outWidth, height: Math.max(1, Math.min(Math.round(outWidth / ratio), height)) };
}

/** sharp could not decode or encode the image: retrying cannot help. */
class UnusableImage extends Error {}

interface Encoded {
  data: Buffer;
  width: number;
  height: number;
}

/** JPEG, or WebP where the image has transparency; the quality lowered until it fits `maxBytes`. */
async function encode(image: Sharp, transparent: boolean, maxBytes = Infinity): Promise<{ encoded: Encoded; extension: string; type: string }> {
  let encoded: Encoded | undefined;
  for (const quality of [85, 75, 65, 50, 35]) {
    const pipeline = image.clone();
    const { data, info } = await (transparent ? pipeline.webp({ quality }) : pipeline.jpeg({ quality, mozjpeg: true })).toBuffer({ resolveWithObject: true });
    encoded = { data, width: info.width, height: info.height };
    if (data.length <= maxBytes) break;
  }
  return transparent ? { encoded: encoded!, extension: 'webp', type: 'image/webp' } : { encoded: encoded!, extension: 'jpg', type: 'image/jpeg' };
}

/**
 * Images made at once by this process: one a core. Decoding and encoding take a core each and hold the decoded image
 * (up to hundreds of MB for a 20 MiB upload), and the worker runs WORKER_CONCURRENCY jobs at once (sized for
 * publishes that wait on a platform), so a burst of uploads waits here rather than running hundreds at once.
 */
const imageWork = pLimit(availableParallelism());

function mediaVariantsTask(app: AppContext): Task {
  return (payload, helpers: JobHelpers) => imageWork(() => makeVariants(app, payload, helpers));
}

async function makeVariants(app: AppContext, payload: unknown, helpers: JobHelpers): Promise<void> {
  const { mediaId } = Payload.parse(payload);
  const { db, storage } = app;
  const [media] = await db<{ objectKey: string; uploadId: string; variantsStatus: string }[]>`
    SELECT object_key, upload_id, variants_status FROM media WHERE id = ${mediaId}`;
  if (!media || media.variantsStatus !== 'pending') return;

  const made: StoredVariant[] = [];
  const variants: Partial<Record<VariantName, StoredVariant>> = {};
  try {
    const source = await storage.read(media.objectKey);
    let decoded: Sharp;
    let transparent: boolean;
    let width: number;
    let height: number;
    try {
      decoded = sharp(source).autoOrient(); // upright by its EXIF orientation, which the output drops
      const metadata = await decoded.metadata();
      transparent = metadata.hasAlpha === true;
      ({ width, height } = metadata.autoOrient);
    } catch (error) {
      return await failed(`The image could not be decoded: ${(error as Error).message}`);
    }
    const prefix = media.objectKey.replace(/[^/]+$/, 'variants/');
    const save = async (name: VariantName, image: Sharp, maxBytes?: number) => {
      const { encoded, extension, type } = await encode(image, transparent, maxBytes).catch((error: unknown) => {
        throw new UnusableImage((error as Error).message);
      });
      const objectKey = `${prefix}${name.replace(':', 'x')}.${extension}`;
      await storage.put(objectKey, encoded.data, type);
      const variant = { objectKey, width: encoded.width, height: encoded.height, sizeBytes: encoded.data.length };
      made.push(variant);
      variants[name] = variant;
    };
    for (const [name, { ratio, maxWidth }] of Object.entries(CROPS) as [Exclude<VariantName, 'source'>, (typeof CROPS)['1:1']][]) {
      const size = cropSize(width, height, ratio, maxWidth);
      await save(name, decoded.clone().resize({ ...size, fit: 'cover', position: sharp.strategy.attention }));
    }
    await save('source', decoded.clone().resize({ width: SOURCE_MAX_SIDE, height: SOURCE_MAX_SIDE, fit: 'inside', withoutEnlargement: true }), SOURCE_MAX_BYTES);
  } catch (error) {
    await storage.delete(made.map((variant) => variant.objectKey)).catch(() => {});
    if (error instanceof UnusableImage) return await failed(`The image could not be decoded: ${error.message}`);
    // The store may be down for a moment: retried, and failed for good on the last attempt.
    if (helpers.job.attempts < helpers.job.max_attempts) throw error;
    return await failed(`The variants could not be made: ${(error as Error).message}`);
  }
  const [updated] = await db`
    UPDATE media SET variants = ${db.json(variants as never)}, variants_status = 'ready', variants_error = NULL, updated_at = now()
    WHERE id = ${mediaId} AND variants_status = 'pending' RETURNING id`;
  if (!updated) await storage.delete(made.map((variant) => variant.objectKey));

  async function failed(reason: string) {
    app.logger.warn('media variants failed', { mediaId, reason });
    await db`UPDATE media SET variants_status = 'failed', variants_error = ${reason}, updated_at = now() WHERE id = ${mediaId} AND variants_status = 'pending'`;
  }
}

export default defineTask(TASK.mediaVariants, mediaVariantsTask);
