import { z } from 'zod';
import { NOT_FOUND_MESSAGE } from '../../src/registry/errors.js';
import { success, uuid } from '../../src/registry/fields.js';
import { defineOperation } from '../../src/registry/operation.js';

export default defineOperation({
  id: 'revokeInvitation',
  method: 'DELETE',
  ownerOnly: true,
  path: '/invitations/{id}',
  summary: 'Withdraw an invitation: its link stops working at once',
  description: 'An invitation already accepted, withdrawn or expired is not found. Internal (dashboard, admin command).',
  input: { path: z.object({ id: uuid }) },
  output: success,
  errors: ['NOT_FOUND'],
  async handler({ id }, { db, auth, fail }) {
    const [withdrawn] = await db`
      UPDATE account_links SET revoked_at = now()
      WHERE id = ${id} AND organization_id = ${auth.workspaceId} AND purpose = 'invite'
        AND used_at IS NULL AND revoked_at IS NULL AND expires_at > now()
      RETURNING id`;
    return withdrawn ? { success: true } : fail('NOT_FOUND', NOT_FOUND_MESSAGE);
  },
});
