import { z } from 'zod';
import { iso, timestamp, uuid } from '../../src/registry/fields.js';

export const User = z
  .object({
    id: uuid,
    name: z.string(),
    email: z.string(),
    image: z.string().nullable(),
    emailVerified: z.boolean(),
    createdAt: timestamp,
    updatedAt: timestamp,
    defaultOrganizationId: uuid.nullable(),
  })
  .meta({ id: 'User' });

export interface UserRow {
  id: string;
  name: string;
  email: string;
  image: string | null;
  emailVerified: boolean;
  createdAt: Date;
  updatedAt: Date;
  defaultOrganizationId: string | null;
}

export const toUser = (row: UserRow): z.input<typeof User> => ({ ...row, createdAt: iso(row.createdAt), updatedAt: iso(row.updatedAt) });
