import { z } from 'zod';
import { defineOperation } from '../../src/registry/operation.js';
import { Invitation, toInvitation, type InvitationRow } from './invitation.js';

export default defineOperation({
  id: 'listInvitations',
  method: 'GET',
  path: '/invitations',
  summary: 'The invitations still open (not accepted, withdrawn or expired), newest first',
  description: 'Internal (dashboard, admin command).',
  output: z.object({ items: z.array(Invitation) }),
  async handler(_input, { db, auth }) {
    const rows = await db<InvitationRow[]>`
      SELECT l.id, l.email, c.id AS creator_id, c.name AS creator_name, l.created_at, l.expires_at
      FROM account_links l LEFT JOIN users c ON c.id = l.created_by
      WHERE l.organization_id = ${auth.workspaceId} AND l.purpose = 'invite'
        AND l.used_at IS NULL AND l.revoked_at IS NULL AND l.expires_at > now()
      ORDER BY l.created_at DESC, l.id`;
    return { items: rows.map(toInvitation) };
  },
});
