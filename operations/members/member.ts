import { z } from 'zod';
import { timestamp, uuid } from '../../src/registry/fields.js';

export const Member = z
  .object({
    userId: uuid,
    role: z.enum(['owner', 'member']),
    createdAt: timestamp,
    user: z.object({ id: uuid, name: z.string(), email: z.string() }),
  })
  .meta({ id: 'Member' });
