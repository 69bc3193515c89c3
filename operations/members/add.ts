import { z } from 'zod';
import { iso, text } from '../../src/registry/fields.js';
import { defineOperation } from '../../src/registry/operation.js';
import { Member } from './member.js';

export default defineOperation({
  id: 'addMember',
  method: 'POST',
  ownerOnly: true,
  path: '/members',
  summary: 'Add a person to the workspace as a member',
  description: 'The user is found by email, or created with that email and name.',
  input: {
    body: z.strictObject({
      email: z.email().transform((email) => email.toLowerCase()),
      name: text.trim().min(1).max(200).optional(),
    }),
  },
  output: Member,
  status: 201,
  errors: ['CONFLICT'],
  async handler({ email, name }, { db, auth, fail }) {
    return db.begin(async (tx) => {
      const [user] = await tx<{ id: string; name: string; email: string }[]>`
        INSERT INTO users (name, email, default_organization_id) VALUES (${name ?? email.split('@')[0]!}, ${email}, ${auth.workspaceId})
        ON CONFLICT (email) DO UPDATE SET email = excluded.email
        RETURNING id, name, email`;
      const [membership] = await tx<{ createdAt: Date }[]>`
        INSERT INTO memberships (organization_id, user_id, role) VALUES (${auth.workspaceId}, ${user!.id}, 'member')
        ON CONFLICT DO NOTHING RETURNING created_at`;
      if (!membership) return fail('CONFLICT', `${email} is already a member of this workspace`);
      return { userId: user!.id, role: 'member' as const, createdAt: iso(membership.createdAt), user: user! };
    });
  },
});
