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
  description:
    'A new person: the user is created with that email and name, without a password (they get one through `set-password`, ' +
    'or join by an invitation instead: `POST /invitations`, which the dashboard uses). An email that already has an account is ' +
    'refused (CONFLICT): people with an account join by invitation, so that nobody is added, nor their name shown, without them.',
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
        ON CONFLICT (email) DO NOTHING
        RETURNING id, name, email`;
      if (!user) return fail('CONFLICT', `${email} has an account already: invite them (POST /invitations), and they join with their own password`);
      const [membership] = await tx<{ createdAt: Date }[]>`
        INSERT INTO memberships (organization_id, user_id, role) VALUES (${auth.workspaceId}, ${user.id}, 'member') RETURNING created_at`;
      return { userId: user.id, role: 'member' as const, createdAt: iso(membership!.createdAt), user };
    });
  },
});
