import { z } from 'zod';
import { selectAccount } from '../../src/channels/connect.js';
import { PENDING_SELECTION_TTL_HOURS } from './integration.js';
import { text, uuid } from '../../src/registry/fields.js';
import { defineOperation } from '../../src/registry/operation.js';
import { Integration, selectIntegrations, toIntegration } from './integration.js';

export default defineOperation({
  id: 'selectIntegrationAccount',
  method: 'POST',
  path: '/integrations/{id}/select-account',
  summary: 'Pick the account a PENDING_SELECTION channel posts as',
  description:
    'What the account picker after a LinkedIn connect does: `account` is one of the choices offered (the member\'s `urn:li:person:…` or ' +
    'a page\'s `urn:li:organization:…`). The channel becomes ACTIVE; when the workspace already has a channel for that account, that ' +
    'channel is reconnected with the new token instead and this one removed (the answer is the channel that remains). A channel whose ' +
    `account is chosen already, or that holds no connection any more (disconnected, or not picked within ${PENDING_SELECTION_TTL_HOURS} hours of connecting, ` +
    '`connectionErrorCode` SELECTION_EXPIRED), answers 409 INVALID_STATE. Internal (dashboard, admin command select-account).',
  input: { path: z.object({ id: uuid }), body: z.strictObject({ account: text.min(1).max(200) }) },
  output: Integration,
  errors: ['NOT_FOUND', 'INVALID_STATE', 'VALIDATION_ERROR'],
  async handler({ id, account }, context) {
    const { db, auth, fail } = context;
    const result = await selectAccount(context, auth.workspaceId, id, account);
    if ('refused' in result) return fail(result.code, result.refused);
    const [integration] = await selectIntegrations(db, auth.workspaceId, result.integrationId);
    return toIntegration(integration!);
  },
});
