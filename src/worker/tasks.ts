import type { TaskList } from 'graphile-worker';
import type { AppContext } from '../registry/context.js';
import { COMPACT_POST_COUNTS_TASK, DELIVER_TASK, EXPIRING_TOKENS_TASK, PENDING_SELECTION_EXPIRY_TASK, PRUNE_EVENTS_TASK, PUBLISH_TASK, RECYCLE_SWEEP_TASK, RECYCLE_TASK, REFRESH_TASK, UPLOAD_EXPIRY_TASK, VARIANTS_TASK } from './jobs.js';
import { deliverWebhookTask } from './deliver-webhook.js';
import { warnExpiringTokensTask } from './expiring-tokens.js';
import { compactPostCountsTask } from './post-counts.js';
import { pendingSelectionExpiryTask } from './pending-selection.js';
import { pruneEventsTask } from './prune-events.js';
import { publishScheduleTask } from './publish.js';
import { recycleRuleTask, recycleSweepTask } from './recycle.js';
import { refreshCredentialsTask } from './refresh.js';
import { uploadExpiryTask } from './upload-expiry.js';
import { variantsTask } from './variants.js';

/**
 * The worker's tasks by name. Each task lives in its own file beside this one, validates its payload with zod
 * first, and is idempotent (a job runs at least once).
 */
export const tasks = (app: AppContext): TaskList => ({
  [PUBLISH_TASK]: publishScheduleTask(app),
  [REFRESH_TASK]: refreshCredentialsTask(app),
  [VARIANTS_TASK]: variantsTask(app),
  [UPLOAD_EXPIRY_TASK]: uploadExpiryTask(app),
  [PENDING_SELECTION_EXPIRY_TASK]: pendingSelectionExpiryTask(app),
  [COMPACT_POST_COUNTS_TASK]: compactPostCountsTask(app),
  [PRUNE_EVENTS_TASK]: pruneEventsTask(app),
  [DELIVER_TASK]: deliverWebhookTask(app),
  [EXPIRING_TOKENS_TASK]: warnExpiringTokensTask(app),
  [RECYCLE_SWEEP_TASK]: recycleSweepTask(app),
  [RECYCLE_TASK]: recycleRuleTask(app),
});
