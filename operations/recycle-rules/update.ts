import { z } from 'zod';
import { NOT_FOUND_MESSAGE } from '../../src/registry/errors.js';
import { idOf } from '../../src/registry/fields.js';
import { defineOperation } from '../../src/registry/operation.js';
import { cancelRecycle, enqueueRecycle } from '../../src/worker/queue.js';
import { missingReference, RecycleRule, ruleFields, selectRules } from './recycle-rule.js';

export default defineOperation({
  id: 'updateRecycleRule',
  method: 'PATCH',
  path: '/recycle-rules/{id}',
  summary: 'Change a recycle rule, or disable and enable it',
  description: [
    'Changes only the fields given (null clears `maxRuns` and `postingWindows`). `enabled: false` stops its runs (a queued run is',
    'removed); enabled again, it runs at once unless it already ran in the current period. Schedules it already made stay as they',
    'are: delete or reschedule them like any schedule. Internal (dashboard, command line with a session, admin).',
  ].join('\n'),
  input: {
    path: z.object({ id: idOf('recycle rule') }),
    body: z.strictObject({
      name: ruleFields.name.optional(),
      integrationIds: ruleFields.integrationIds.optional(),
      tagIds: ruleFields.tagIds.optional(),
      frequency: ruleFields.frequency.optional(),
      postsPerRun: ruleFields.postsPerRun.optional(),
      minIntervalDays: ruleFields.minIntervalDays.optional(),
      maxRuns: ruleFields.maxRuns.optional(),
      postingWindows: ruleFields.postingWindows.optional(),
      linkedinVariations: ruleFields.linkedinVariations.optional(),
      enabled: ruleFields.enabled.optional(),
    }),
  },
  output: RecycleRule,
  errors: ['VALIDATION_ERROR', 'NOT_FOUND'],
  async handler({ id, ...change }, { db, auth, fail }) {
    return db.begin(async (tx) => {
      const [rule] = await tx`SELECT id FROM recycle_rules WHERE id = ${id} AND organization_id = ${auth.workspaceId} FOR UPDATE`;
      if (!rule) return fail('NOT_FOUND', NOT_FOUND_MESSAGE);
      const missing = await missingReference(tx, auth.workspaceId, change);
      if (missing) return fail(missing.startsWith('body.') ? 'VALIDATION_ERROR' : 'NOT_FOUND', missing);
      const given = (value: unknown) => value !== undefined;
      await tx`
        UPDATE recycle_rules SET
          name = coalesce(${change.name ?? null}, name),
          integration_ids = coalesce(${change.integrationIds ?? null}::uuid[], integration_ids),
          tag_ids = coalesce(${change.tagIds ?? null}::uuid[], tag_ids),
          frequency = coalesce(${change.frequency ?? null}, frequency),
          posts_per_run = coalesce(${change.postsPerRun ?? null}::int, posts_per_run),
          min_interval_days = coalesce(${change.minIntervalDays ?? null}::int, min_interval_days),
          max_runs = CASE WHEN ${given(change.maxRuns)} THEN ${change.maxRuns ?? null}::int ELSE max_runs END,
          posting_windows = CASE WHEN ${given(change.postingWindows)} THEN ${change.postingWindows ? tx.json(change.postingWindows) : null}::jsonb
            ELSE posting_windows END,
          linkedin_variations = coalesce(${change.linkedinVariations ?? null}::text[], linkedin_variations),
          enabled = coalesce(${change.enabled ?? null}::boolean, enabled),
          updated_at = now()
        WHERE id = ${id}`;
      // A disabled rule has no job; an enabled one has its current period's (a changed frequency may make a new period).
      await cancelRecycle(tx, id);
      await enqueueRecycle(tx, id);
      const [updated] = await selectRules(tx, auth.workspaceId, id);
      return updated!;
    });
  },
});
