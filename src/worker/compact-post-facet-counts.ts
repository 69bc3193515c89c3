import type { Task } from 'graphile-worker';
import type { Database } from '../db/index.js';
import type { AppContext } from '../registry/context.js';
import { CronPayload, TASK } from './queue.js';
import { defineTask } from './task.js';

/**
 * Folds the posts list's counters (queued each minute by the worker's crontab, src/worker/queue.ts): every change of a
 * post's facets appends two rows to post_facet_counts, every post made or deleted one to post_day_counts, and the
 * list reads them all, so they are folded into one row per workspace and set of facets, or day. Running it twice, or
 * at once in two workers, changes no total.
 */
function compactPostFacetCountsTask(app: AppContext): Task {
  return async (payload) => {
    CronPayload.parse(payload ?? {});
    await compactPostCounts(app.db);
  };
}

/** Each counters table, and the function that folds its deltas (migrations/015_post_facets.sql, 024_post_day_counts.sql). */
const COUNTERS = [
  { table: 'post_facet_counts', fold: 'compact_post_facet_counts' },
  { table: 'post_day_counts', fold: 'compact_post_day_counts' },
];

/** A table of this many pages or fewer is left as it is, whatever its dead rows: a scan of it costs next to nothing. */
const SMALL_TABLE_PAGES = 100;
/** About this many counter rows fill a page. */
const ROWS_A_PAGE = 150;
const LOCK_WAIT = '200ms';
const LOCK_NOT_AVAILABLE = '55P03';

/**
 * Folds the counters' deltas into one row each, then, when a burst of changes (an import: a bulk insert appends
 * deltas for every post) left a table mostly dead space, rewrites it. Vacuum alone cannot shrink it, since the folded
 * rows are written after the dead ones; and a table and index of thousands of pages for a few live rows make Postgres
 * read every page of it for each list's total (docs/benchmarks.md#lists-at-the-scale-of-a-large-workspace). The
 * rewrite takes the table's exclusive lock briefly; it waits for no writer longer than LOCK_WAIT, and is tried again
 * the next minute.
 */
export async function compactPostCounts(db: Database): Promise<void> {
  for (const { table, fold } of COUNTERS) {
    await db`SELECT ${db(fold)}()`;
    // Its rows are counted only when it is not small: every minute, a workspace's days add up.
    const [size] = await db<{ pages: number; rows: number | null }[]>`
      SELECT pages, CASE WHEN pages > ${SMALL_TABLE_PAGES} THEN (SELECT count(*) FROM ${db(table)})::int END AS rows
      FROM (SELECT (pg_relation_size(${table}::regclass) / current_setting('block_size')::int)::int AS pages) AS relation`;
    // Ten times the pages its rows need is mostly dead space.
    if (size!.rows === null || size!.pages <= (size!.rows / ROWS_A_PAGE) * 10) continue;
    const connection = await db.reserve();
    try {
      await connection`SELECT set_config('lock_timeout', ${LOCK_WAIT}, false)`;
      await connection`VACUUM FULL ${db(table)}`.catch((error: { code?: string }) => {
        if (error.code !== LOCK_NOT_AVAILABLE) throw error;
      });
    } finally {
      await connection`RESET lock_timeout`.finally(() => connection.release());
    }
  }
}

export default defineTask(TASK.compactPostFacetCounts, compactPostFacetCountsTask);
