import { z } from 'zod';
import { iso, timestamp, uuid } from '../../src/registry/fields.js';

export const Tag = z
  .object({ id: uuid, organizationId: uuid, name: z.string(), slug: z.string(), createdAt: timestamp, updatedAt: timestamp })
  .meta({ id: 'Tag' });

export interface TagRow {
  id: string;
  organizationId: string;
  name: string;
  slug: string;
  createdAt: Date;
  updatedAt: Date;
}

export const toTag = (row: TagRow): z.input<typeof Tag> => ({ ...row, createdAt: iso(row.createdAt), updatedAt: iso(row.updatedAt) });
