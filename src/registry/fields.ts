import { z } from 'zod';

/** Schemas and helpers that many operations share, so each contract rule is written once. */

export const uuid = z.uuid();
/** A path or body field naming one resource by id: described once, as every parameter is. */
export const idOf = (what: string) => uuid.meta({ description: `The ${what}'s id (a UUID).` });
/** Text that may reach the database: Postgres refuses the NUL character in text, so it is refused here first. */
export const text = z.string().regex(/^[^\0]*$/, 'must not contain the NUL character (\\u0000)');
export const timestamp = z.iso.datetime({ offset: true });

/** A database timestamp as the API writes it: ISO 8601, UTC. */
export const iso = (value: Date): string => value.toISOString();
export const isoOrNull = (value: Date | null): string | null => (value ? value.toISOString() : null);

export const success = z.object({ success: z.boolean() }).meta({ id: 'Success' });

/** `limit` for cursor lists (REST reads it from the query text; see text-input.ts). */
export const limit = (defaultValue = 50, max = 100) =>
  z
    .number()
    .int()
    .min(1)
    .max(max)
    .default(defaultValue)
    .meta({ description: `How many items to return, 1 to ${max}; ${defaultValue} unless given.` });

/**
 * An opaque cursor: the sort key of the last item (checked against `key`), base64url-encoded, so a client
 * passes it back untouched and the order can change without breaking the contract.
 */
export const cursor = <K extends z.ZodType<unknown[]>>(key: K) =>
  z
    .string()
    .transform((text, ctx): z.output<K> => {
      try {
        const parsed = key.safeParse(JSON.parse(Buffer.from(text, 'base64url').toString('utf8')));
        if (parsed.success) return parsed.data;
      } catch {
        // falls through to the issue below
      }
      ctx.addIssue({ code: 'custom', message: 'Not a cursor this API returned; pass nextCursor from the previous page' });
      return z.NEVER;
    })
    .optional()
    .meta({ description: 'The nextCursor of the previous page; omit it for the first page.' });

export const encodeCursor = (values: unknown[]): string => Buffer.from(JSON.stringify(values)).toString('base64url');

/** The contract's shape for lists that are item lists: `nextCursor` is null on the last page. */
export const itemList = <T extends z.ZodType>(item: T) => z.object({ items: z.array(item), nextCursor: z.string().nullable() });
