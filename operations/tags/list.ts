import { z } from 'zod';
import { cursor, encodeCursor, itemList, limit, text } from '../../src/registry/fields.js';
import { defineOperation } from '../../src/registry/operation.js';
import { Tag, toTag, type TagRow } from './tag.js';

export default defineOperation({
  id: 'listTags',
  method: 'GET',
  path: '/tags',
  visibility: 'public',
  summary: 'The tags of the workspace, in slug order',
  description:
    'Ordered by slug (the name in lowercase ASCII, so `Été` sorts as `ete`). Pages of `{ items, nextCursor }`: ' +
    'pass `nextCursor` back as `cursor` for the next page; it is null on the last.',
  input: { query: z.object({ limit: limit(), cursor: cursor(z.tuple([text])) }) },
  output: itemList(Tag),
  async handler({ limit, cursor }, { db, auth }) {
    const after = cursor ? db`AND slug > ${cursor[0]}` : db``;
    const rows = await db<TagRow[]>`
      SELECT * FROM tags WHERE organization_id = ${auth.workspaceId} ${after}
      ORDER BY slug LIMIT ${limit + 1}`;
    const items = rows.slice(0, limit);
    const last = items.at(-1);
    return { items: items.map(toTag), nextCursor: rows.length > limit && last ? encodeCursor([last.slug]) : null };
  },
});
