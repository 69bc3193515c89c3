import type { PendingQuery, Row } from 'postgres';
import type { Sql } from '../db/index.js';
import { detectLanguage } from './languages.js';

/** How long a detection is kept: past the furthest a post is usually scheduled; one pruned is detected again at publish. */
export const DETECTION_RETENTION_DAYS = 400;

/**
 * The text a thread's language is detected from: its first post's text and then its replies', on one channel
 * (`root`: the SQL of the thread's first schedule's id). The claim and rememberThreadLanguages read it the same way,
 * so that the MD5 of one is the other's key.
 */
export function threadTextOf(db: Sql, root: PendingQuery<Row[]>): PendingQuery<Row[]> {
  return db`(SELECT string_agg(t.scheduled_content, E'\n\n' ORDER BY t.thread_order) FROM schedules t
    WHERE t.id = ${root} OR t.thread_root_schedule_id = ${root})`;
}

/**
 * Detects, once per text, the language of the Bluesky threads of the posts `postIds`, and keeps it in
 * detected_languages for the publishing engine (migrations/020). Called after a post's texts are written, outside
 * their transaction: detection is CPU work that holds no lock, and a text it misses is detected when published.
 */
export async function rememberThreadLanguages(db: Sql, postIds: string[]): Promise<void> {
  if (postIds.length === 0) return;
  const texts = await db<{ md5: string; text: string }[]>`
    SELECT DISTINCT md5(thread.text)::uuid AS md5, thread.text
    FROM schedules s JOIN integrations i ON i.id = s.integration_id
    CROSS JOIN LATERAL (SELECT ${threadTextOf(db, db`s.id`)} AS text) thread
    WHERE s.post_id = ANY(${postIds}::uuid[]) AND s.thread_order = 0 AND i.platform = 'BLUESKY'
      AND NOT EXISTS (SELECT 1 FROM detected_languages d WHERE d.text_md5 = md5(thread.text)::uuid)`;
  const rows = [];
  for (const { md5, text } of texts) rows.push({ textMd5: md5, language: (await detectLanguage(text)) ?? null });
  if (rows.length) await db`INSERT INTO detected_languages ${db(rows)} ON CONFLICT (text_md5) DO NOTHING`;
}
