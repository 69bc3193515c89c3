import { z } from 'zod';
import { defineOperation } from '../../src/registry/operation.js';
import { enqueueRecycle } from '../../src/worker/queue.js';
import { MAX_RULES, missingReference, RecycleRule, ruleFields, selectRules } from './recycle-rule.js';

export default defineOperation({
  id: 'createRecycleRule',
  method: 'POST',
  path: '/recycle-rules',
  summary: 'Add a recycle rule: evergreen posts scheduled again, oldest first',
  description: [
    'Each run (once a local day or ISO week, the first as soon as the rule is made) picks up to `postsPerRun` evergreen posts',
    '(`isEvergreen`) that were published on one of the rule\'s channels, are not waiting to publish, are not held for approval,',
    'were last published or recycled at least `minIntervalDays` ago and were recycled by this rule fewer than `maxRuns` times,',
    'least recently picked first; and schedules each again on those channels at their next free slots of the rule\'s posting',
    'windows within a week (two for WEEKLY). Each recycle spends the monthly quota like any post; each pick is a recycle event',
    '(GET /recycle-events) naming the schedules made or why none were (quota, storage, subscription, channel, LinkedIn\'s refusal',
    `of repeated text, no free slot). At most ${MAX_RULES} rules a workspace (409 INVALID_STATE). Internal (dashboard, command line`,
    'with a session, admin).',
  ].join('\n'),
  input: {
    body: z.strictObject({
      name: ruleFields.name,
      integrationIds: ruleFields.integrationIds,
      tagIds: ruleFields.tagIds.optional(),
      frequency: ruleFields.frequency.default('DAILY'),
      postsPerRun: ruleFields.postsPerRun.default(1),
      minIntervalDays: ruleFields.minIntervalDays.default(30),
      maxRuns: ruleFields.maxRuns.optional(),
      postingWindows: ruleFields.postingWindows.optional(),
      linkedinVariations: ruleFields.linkedinVariations.optional(),
      enabled: ruleFields.enabled.default(true),
    }),
  },
  output: RecycleRule,
  status: 201,
  errors: ['VALIDATION_ERROR', 'NOT_FOUND', 'INVALID_STATE'],
  async handler(rule, { db, auth, fail }) {
    return db.begin(async (tx) => {
      // The workspace row is locked, so two creates at once cannot both pass the count.
      const missing = await missingReference(tx, auth.workspaceId, rule);
      if (missing) return fail(missing.startsWith('body.') ? 'VALIDATION_ERROR' : 'NOT_FOUND', missing);
      await tx`SELECT 1 FROM organizations WHERE id = ${auth.workspaceId} FOR NO KEY UPDATE`;
      const [{ count }] = await tx<[{ count: number }]>`SELECT count(*)::int FROM recycle_rules WHERE organization_id = ${auth.workspaceId}`;
      if (count >= MAX_RULES) return fail('INVALID_STATE', `The workspace has ${MAX_RULES} recycle rules, the most it may have: delete one first`);
      const [created] = await tx<{ id: string }[]>`
        INSERT INTO recycle_rules (organization_id, name, integration_ids, tag_ids, frequency, posts_per_run, min_interval_days, max_runs,
          posting_windows, linkedin_variations, enabled)
        VALUES (${auth.workspaceId}, ${rule.name}, ${rule.integrationIds}, ${rule.tagIds ?? []}, ${rule.frequency}, ${rule.postsPerRun},
          ${rule.minIntervalDays}, ${rule.maxRuns ?? null}, ${rule.postingWindows ? tx.json(rule.postingWindows) : null},
          ${rule.linkedinVariations ?? []}, ${rule.enabled})
        RETURNING id`;
      await enqueueRecycle(tx, created!.id);
      const [made] = await selectRules(tx, auth.workspaceId, created!.id);
      return made!;
    });
  },
});
