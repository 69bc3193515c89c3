import { z } from 'zod';
import { iso } from '../../src/registry/fields.js';
import { defineOperation } from '../../src/registry/operation.js';
import { Member } from './member.js';

export default defineOperation({
  id: 'listMembers',
  method: 'GET',
  path: '/members',
  summary: 'The members of the workspace and their roles, the owner first, then by when they joined',
  description: 'Internal (dashboard, admin command). Invitations not yet accepted are listed by `GET /invitations`.',
  output: z.object({ items: z.array(Member) }),
  async handler(_input, { db, auth }) {
    const rows = await db<{ userId: string; role: 'owner' | 'member'; createdAt: Date; name: string; email: string }[]>`
      SELECT m.user_id, m.role, m.created_at, u.name, u.email FROM memberships m JOIN users u ON u.id = m.user_id
      WHERE m.organization_id = ${auth.workspaceId} ORDER BY m.role = 'owner' DESC, m.created_at, u.email`;
    return {
      items: rows.map((row) => ({ userId: row.userId, role: row.role, createdAt: iso(row.createdAt), user: { id: row.userId, name: row.name, email: row.email } })),
    };
  },
});
