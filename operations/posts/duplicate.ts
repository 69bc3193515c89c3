import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import { rememberThreadLanguages } from '../../src/platforms/detected-languages.js';
import { NOT_FOUND_MESSAGE } from '../../src/registry/errors.js';
import { idOf, uuid } from '../../src/registry/fields.js';
import { defineOperation } from '../../src/registry/operation.js';
import { recordPostEvents } from '../events/event.js';
import { writtenBy } from './post.js';

export default defineOperation({
  id: 'duplicatePost',
  method: 'POST',
  path: '/posts/{id}/duplicate',
  status: 201,
  summary: 'Copy a post into a new draft: its text, media, tags and channels',
  description:
    'The way to say something again, or differently, once a post has gone out (what was published is never rewritten). The new ' +
    'post is a draft by the caller with the same text, media and alt text, tags and evergreen flag, and one DRAFT schedule without ' +
    'a date per channel of the original, each with that channel\'s text, first comment, settings and thread parts. Nothing is ' +
    'scheduled and no quota is spent: schedule it with PATCH /posts/{id} (postAction).',
  input: { path: z.object({ id: idOf('post') }) },
  output: z.object({ postId: uuid, message: z.string() }),
  errors: ['NOT_FOUND'],
  async handler({ id }, { db, storage, auth, fail }) {
    const postId = randomUUID();
    const author = writtenBy(auth.principal);
    const copied = await db.begin(async (tx) => {
      const [post] = await tx`
        INSERT INTO posts (id, organization_id, user_id, created_by_kind, api_key_id, api_key_name, oauth_connection_id, app_name, content, is_evergreen)
        SELECT ${postId}, organization_id, ${auth.userId}, ${author.createdByKind}, ${author.apiKeyId}, ${author.apiKeyName},
          ${author.oauthConnectionId}, ${author.appName}, content, is_evergreen
        FROM posts WHERE id = ${id} AND organization_id = ${auth.workspaceId}
        RETURNING id`;
      if (!post) return fail('NOT_FOUND', NOT_FOUND_MESSAGE);
      await tx`
        INSERT INTO post_tags (post_id, tag_id, organization_id)
        SELECT ${postId}, tag_id, organization_id FROM post_tags WHERE post_id = ${id}`;
      await tx`
        INSERT INTO attachments (post_id, organization_id, media_id, "order", alt_text)
        SELECT ${postId}, organization_id, media_id, "order", alt_text FROM attachments WHERE post_id = ${id}`;
      // Each schedule a new id; a thread part points at its thread's new first schedule.
      const schedules = await tx<{ id: string }[]>`
        WITH source AS (SELECT s.*, gen_random_uuid() AS copy_id FROM schedules s WHERE s.post_id = ${id})
        INSERT INTO schedules (id, organization_id, post_id, integration_id, user_id, status, scheduled_content, first_comment, settings,
          thread_root_schedule_id, thread_order)
        SELECT s.copy_id, s.organization_id, ${postId}, s.integration_id, ${auth.userId}, 'DRAFT', s.scheduled_content,
          CASE WHEN s.thread_order = 0 THEN s.first_comment END, s.settings, root.copy_id, s.thread_order
        FROM source s LEFT JOIN source root ON root.id = s.thread_root_schedule_id
        RETURNING id`;
      await recordPostEvents(tx, storage, auth.workspaceId, 'post.created', [postId]);
      return schedules.length;
    });
    await rememberThreadLanguages(db, [postId]);
    return { postId, message: `Draft created: a copy of the post with ${copied} draft schedule${copied === 1 ? '' : 's'}; nothing is scheduled` };
  },
});
