import { z } from 'zod';
import { text } from '../../src/registry/fields.js';
import { defineOperation } from '../../src/registry/operation.js';
import { Tag, toTag, type TagRow } from './tag.js';

export default defineOperation({
  id: 'createTag',
  method: 'POST',
  path: '/tags',
  summary: 'Create a tag',
  description: 'The slug is derived from the name; a second tag with the same slug is a CONFLICT.',
  input: { body: z.strictObject({ name: text.trim().min(1).max(100) }) },
  output: Tag,
  status: 201,
  errors: ['CONFLICT', 'VALIDATION_ERROR'],
  async handler({ name }, { db, auth, fail }) {
    const slug = name
      .normalize('NFKD')
      .replace(/[\u0300-\u036f]/g, '')
      .toLowerCase()
      .replace(/[^a-z0-9]+/g, '-')
      .replace(/^-|-$/g, '');
    if (!slug) fail('VALIDATION_ERROR', 'name: must contain at least one letter or digit');
    const [tag] = await db<TagRow[]>`
      INSERT INTO tags (organization_id, name, slug) VALUES (${auth.workspaceId}, ${name}, ${slug})
      ON CONFLICT (organization_id, slug) DO NOTHING RETURNING *`;
    return tag ? toTag(tag) : fail('CONFLICT', `A tag with the slug "${slug}" already exists`);
  },
});
