import { z } from 'zod';
import { createAccountLink, LINK_TTL_HOURS } from '../../src/auth/sessions.js';
import { defineOperation } from '../../src/registry/operation.js';
import { Invitation, toInvitation } from './invitation.js';

export default defineOperation({
  id: 'createInvitation',
  method: 'POST',
  ownerOnly: true,
  path: '/invitations',
  summary: 'Invite a person to the workspace: a one-time link to hand them',
  description:
    `The answer's \`url\` is shown once (only its hash is kept) and works once, for ${LINK_TTL_HOURS.invite / 24} days: whoever opens it ` +
    'sets a name and a password (or, if that email already has an account, signs in with it) and becomes a member. The service sends no ' +
    'mail: pass the link on yourself. Internal (dashboard, admin command).',
  input: { body: z.strictObject({ email: z.email().transform((email) => email.toLowerCase()) }) },
  output: Invitation.extend({ url: z.string().meta({ description: 'The one-time link; never shown again.' }) }).meta({ id: 'CreatedInvitation' }),
  status: 201,
  errors: ['CONFLICT'],
  async handler({ email }, { db, auth, publicUrl, fail }) {
    const [member] = await db`
      SELECT 1 FROM memberships m JOIN users u ON u.id = m.user_id WHERE m.organization_id = ${auth.workspaceId} AND u.email = ${email}`;
    if (member) return fail('CONFLICT', `${email} is already a member of this workspace`);
    const link = await createAccountLink(db, publicUrl, { purpose: 'invite', workspaceId: auth.workspaceId, email, createdBy: auth.userId });
    const [creator] = await db<{ name: string }[]>`SELECT name FROM users WHERE id = ${auth.userId}`;
    return { ...toInvitation({ ...link, email, creatorId: auth.userId, creatorName: creator!.name }), url: link.url };
  },
});
