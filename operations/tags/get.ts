import { z } from 'zod';
import { NOT_FOUND_MESSAGE } from '../../src/registry/errors.js';
import { idOf } from '../../src/registry/fields.js';
import { defineOperation } from '../../src/registry/operation.js';
import { Tag, toTag, type TagRow } from './tag.js';

export default defineOperation({
  id: 'getTag',
  method: 'GET',
  path: '/tags/{id}',
  visibility: 'public',
  summary: 'One tag of the workspace',
  input: { path: z.object({ id: idOf('tag') }) },
  output: Tag,
  errors: ['NOT_FOUND'],
  async handler({ id }, { db, auth, fail }) {
    const [tag] = await db<TagRow[]>`SELECT * FROM tags WHERE id = ${id} AND organization_id = ${auth.workspaceId}`;
    return tag ? toTag(tag) : fail('NOT_FOUND', NOT_FOUND_MESSAGE);
  },
});
