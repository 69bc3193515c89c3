import { z } from 'zod';
import { renewCredentials } from '../../src/channels/open-account.js';
import { PlatformError } from '../../src/platforms/index.js';
import { uuid } from '../../src/registry/fields.js';
import { defineOperation } from '../../src/registry/operation.js';
import { Integration, selectIntegrations, toIntegration } from './integration.js';

export default defineOperation({
  id: 'refreshIntegration',
  method: 'POST',
  path: '/integrations/{id}/refresh',
  summary: 'Refresh a channel\'s token now, or check it',
  description:
    'Where the platform gave a refresh token, gets a new access token now (the worker otherwise does it a week before expiry); where it did ' +
    'not, checks the token with the platform. Answers the channel: `lastValidatedAt` now when good; when the platform no longer accepts the ' +
    'token, `tokenStatus` EXPIRED or REVOKED with `connectionErrorCode` (e.g. REFRESH_TOKEN_REVOKED) and `connectionError`, and the channel ' +
    'must be connected again. A channel without credentials, or pending selection, answers 409 INVALID_STATE; a platform that does not ' +
    'answer, 502 PLATFORM_ERROR. Internal (dashboard).',
  input: { path: z.object({ id: uuid }) },
  output: Integration,
  errors: ['NOT_FOUND', 'INVALID_STATE', 'PLATFORM_ERROR'],
  async handler({ id }, context) {
    const { db, auth, fail } = context;
    const [integration] = await selectIntegrations(db, auth.workspaceId, id);
    if (!integration) return fail('NOT_FOUND', 'No such integration');
    try {
      await renewCredentials(context, id, AbortSignal.timeout(30_000));
    } catch (error) {
      if (!(error instanceof PlatformError)) throw error;
      if (error.kind === 'permanent') return fail('INVALID_STATE', error.message);
      if (error.kind !== 'credentials') return fail('PLATFORM_ERROR', error.message);
    }
    const [after] = await selectIntegrations(db, auth.workspaceId, id);
    return toIntegration(after!);
  },
});
