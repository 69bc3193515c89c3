import { z } from 'zod';
import { NOT_FOUND_MESSAGE } from '../../src/registry/errors.js';
import { success, uuid } from '../../src/registry/fields.js';
import { defineOperation } from '../../src/registry/operation.js';
import { endMemberSessions } from '../../src/auth/sessions.js';

export default defineOperation({
  id: 'removeMember',
  method: 'DELETE',
  ownerOnly: true,
  path: '/members/{userId}',
  summary: 'Remove a member from the workspace',
  description:
    'Revokes, in the same transaction, every API key the member holds for this workspace, ends their dashboard sessions in it ' +
    'and withdraws any invitation of theirs still open, ' +
    'both from the very next request. The owner cannot be removed.',
  input: { path: z.object({ userId: uuid }) },
  output: success,
  errors: ['NOT_FOUND', 'CONFLICT'],
  async handler({ userId }, { db, auth, fail }) {
    return db.begin(async (tx) => {
      const [member] = await tx<{ role: 'owner' | 'member' }[]>`
        SELECT role FROM memberships WHERE organization_id = ${auth.workspaceId} AND user_id = ${userId} FOR UPDATE`;
      if (!member) return fail('NOT_FOUND', NOT_FOUND_MESSAGE);
      if (member.role === 'owner') return fail('CONFLICT', 'The owner of a workspace cannot be removed from it');
      await tx`UPDATE api_keys SET revoked_at = now()
        WHERE organization_id = ${auth.workspaceId} AND user_id = ${userId} AND revoked_at IS NULL`;
      await endMemberSessions(tx, auth.workspaceId, userId);
      // An invitation still open would let them straight back in.
      await tx`UPDATE account_links SET revoked_at = now()
        WHERE purpose = 'invite' AND organization_id = ${auth.workspaceId} AND used_at IS NULL AND revoked_at IS NULL
          AND email = (SELECT email FROM users WHERE id = ${userId})`;
      await tx`DELETE FROM memberships WHERE organization_id = ${auth.workspaceId} AND user_id = ${userId}`;
      await tx`UPDATE users SET default_organization_id = NULL, updated_at = now()
        WHERE id = ${userId} AND default_organization_id = ${auth.workspaceId}`;
      return { success: true };
    });
  },
});
