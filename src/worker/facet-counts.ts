import type { Task } from 'graphile-worker';
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
    await app.db`SELECT compact_post_facet_counts()`;
  };
}
