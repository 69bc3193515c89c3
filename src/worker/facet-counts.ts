import type { Task } from 'graphile-worker';
import type { Database } from '../db/index.js';
import type { AppContext } from '../registry/context.js';
import { CronPayload } from './jobs.js';

/**
 * Sums the posts list's counters (queued each minute by the worker's crontab, src/worker/jobs.ts): every change of a
 * post's facets appends two rows to post_facet_counts, and the list's total reads them all, so they are folded into
 * one row per workspace and set of facets. Running it twice, or at once in two workers, changes no total.
 */
export function compactFacetCountsTask(app: AppContext): Task {
  return async (payload) => {
    CronPayload.parse(payload ?? {});
    await compactFacetCounts(app.db);
  };
}

/** A table of this many pages or fewer is left as it is, whatever its dead rows: a scan of it costs next to nothing. */
const SMALL_TABLE_PAGES = 100;

/**
 * Folds the counters' deltas into one row each, then, when a burst of changes (an import: a bulk insert appends two
 * deltas a post) left the table mostly dead space, rewrites it. Vacuum alone cannot shrink it, since the folded rows
 * are written after the dead ones; and a table and index of thousands of pages for a few live rows make Postgres read
 * every page of it for each list's total (2.5 ms at 300,000 deltas folded, instead of 0.1). The rewrite takes the
 * table's exclusive lock briefly; it waits for no writer longer than LOCK_WAIT, and is tried again the next minute.
 */
export async function compactFacetCounts(db: Database): Promise<void> {
  await db`SELECT compact_post_facet_counts()`;
  const [table] = await db<{ pages: number; rows: number }[]>`
    SELECT (pg_relation_size('post_facet_counts') / current_setting('block_size')::int)::int AS pages,
      (SELECT count(*) FROM post_facet_counts)::int AS rows`;
  // About 150 rows fill a page: ten times the pages the rows need is mostly dead space.
  if (table!.pages <= SMALL_TABLE_PAGES || table!.pages <= (table!.rows / 150) * 10) return;
  const connection = await db.reserve();
  try {
    await connection`SELECT set_config('lock_timeout', ${LOCK_WAIT}, false)`;
    await connection`VACUUM FULL post_facet_counts`.catch((error: { code?: string }) => {
      if (error.code !== LOCK_NOT_AVAILABLE) throw error;
    });
  } finally {
    await connection`RESET lock_timeout`.finally(() => connection.release());
  }
}

const LOCK_WAIT = '200ms';
const LOCK_NOT_AVAILABLE = '55P03';
