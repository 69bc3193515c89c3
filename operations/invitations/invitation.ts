import { z } from 'zod';
import { iso, timestamp, uuid } from '../../src/registry/fields.js';

export const Invitation = z
  .object({
    id: uuid,
    email: z.string(),
    invitedBy: z.object({ id: uuid, name: z.string() }).nullable().meta({ description: 'Who invited; null once that user is gone.' }),
    createdAt: timestamp,
    expiresAt: timestamp.meta({ description: 'The link works until then, once.' }),
  })
  .meta({ id: 'Invitation' });

export interface InvitationRow {
  id: string;
  email: string;
  creatorId: string | null;
  creatorName: string | null;
  createdAt: Date;
  expiresAt: Date;
}

export const toInvitation = (row: InvitationRow): z.input<typeof Invitation> => ({
  id: row.id,
  email: row.email,
  invitedBy: row.creatorId ? { id: row.creatorId, name: row.creatorName! } : null,
  createdAt: iso(row.createdAt),
  expiresAt: iso(row.expiresAt),
});
