import { defineOperation } from '../../src/registry/operation.js';
import { toUser, User, type UserRow } from './user.js';

export default defineOperation({
  id: 'getCurrentUser',
  method: 'GET',
  path: '/users/me',
  visibility: 'public',
  summary: 'The user the API key belongs to',
  output: User,
  async handler(_input, { db, auth }) {
    const [user] = await db<UserRow[]>`
      SELECT id, name, email, image, email_verified, created_at, updated_at, default_organization_id
      FROM users WHERE id = ${auth.userId}`;
    return toUser(user!);
  },
});
