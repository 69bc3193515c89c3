import type { TaskList } from 'graphile-worker';
import type { AppContext } from '../registry/context.js';
import compactPostFacetCounts from './compact-post-facet-counts.js';
import deliverWebhook from './deliver-webhook.js';
import expirePendingSelections from './expire-pending-selections.js';
import mediaVariants from './media-variants.js';
import pruneEvents from './prune-events.js';
import pruneOAuth from './prune-oauth.js';
import refreshInstanceLimits from './refresh-instance-limits.js';
import publishSchedule from './publish-schedule.js';
import recycleEvergreen from './recycle-evergreen.js';
import recycleRule from './recycle-rule.js';
import refreshCredentials from './refresh-credentials.js';
import uploadExpiry from './upload-expiry.js';
import warnExpiringTokens from './warn-expiring-tokens.js';

/** Every task of the worker, each in the file named by its id (src/worker/<id>.ts); jobs are queued by ./queue.ts. */
const TASKS = [
  publishSchedule,
  refreshCredentials,
  mediaVariants,
  uploadExpiry,
  expirePendingSelections,
  compactPostFacetCounts,
  pruneEvents,
  pruneOAuth,
  refreshInstanceLimits,
  deliverWebhook,
  warnExpiringTokens,
  recycleEvergreen,
  recycleRule,
];

/** The task list graphile-worker runs, by task id. */
export const tasks = (app: AppContext): TaskList => Object.fromEntries(TASKS.map((task) => [task.id, task.make(app)]));
