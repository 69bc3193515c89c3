import { z } from 'zod';
import type { Sql } from '../../src/db/index.js';
import { NOT_FOUND_MESSAGE } from '../../src/registry/errors.js';
import { text, timestamp, uuid } from '../../src/registry/fields.js';
import { PostingWindow } from '../workspace/settings.js';

/** A workspace has at most this many rules. */
export const MAX_RULES = 20;

const frequency = z.enum(['DAILY', 'WEEKLY']).meta({
  description: 'How often the rule runs: once each local day (`DAILY`) or ISO week (`WEEKLY`) of the workspace\'s time zone.',
});

export const ruleFields = {
  name: text.min(1).max(100).meta({ description: 'What the rule is for, for people.' }),
  integrationIds: z
    .array(uuid)
    .min(1)
    .max(20)
    .meta({ description: 'The channels it recycles to. A post is recycled to those of them it was published to.' }),
  tagIds: z.array(uuid).max(20).meta({ description: 'Only evergreen posts with one of these tags; none (the default): every evergreen post.' }),
  frequency,
  postsPerRun: z.number().int().min(1).max(50).meta({ description: 'How many posts a run recycles, at most.' }),
  minIntervalDays: z
    .number()
    .int()
    .min(1)
    .max(3650)
    .meta({ description: 'Days that must pass after a post was last published or recycled before it is recycled again.' }),
  maxRuns: z.number().int().min(1).max(1000).nullable().meta({ description: 'How many times this rule recycles one post at most; null: no limit.' }),
  postingWindows: z
    .array(PostingWindow)
    .min(1)
    .max(7)
    .nullable()
    .meta({ description: 'When recycled posts go out (local times on weekdays, as the workspace\'s setting); null: the workspace\'s posting windows.' }),
  linkedinVariations: z
    .array(text.min(1).max(200))
    .max(20)
    .meta({
      description:
        'LinkedIn refuses a text it already has (422). Lines appended in turn (after a blank line) to each LinkedIn recycle; none (the ' +
        'default): LinkedIn channels are skipped, with that reason on the recycle event.',
    }),
  enabled: z.boolean().meta({ description: 'False: the rule does not run.' }),
};

export const RecycleRule = z
  .object({
    id: uuid,
    ...ruleFields,
    lastRunAt: timestamp.nullable().meta({ description: 'When it last ran.' }),
    lastRunPeriod: z.string().nullable().meta({ description: 'The period it last ran for: a local date (DAILY) or ISO week such as 2026-W48 (WEEKLY).' }),
    createdAt: timestamp,
    updatedAt: timestamp,
  })
  .meta({ id: 'RecycleRule' });

export type RuleOutput = z.input<typeof RecycleRule>;

/**
 * The rules of the workspace (all, or the one `id`) as the API shows them, oldest first. A channel or tag deleted
 * since drops out. postgres.camel would rewrite the windows' keys, so they are read as text.
 */
export async function selectRules(db: Sql, workspaceId: string, id?: string): Promise<RuleOutput[]> {
  const rows = await db<(Omit<RuleOutput, 'postingWindows'> & { postingWindowsText: string | null })[]>`
    SELECT r.id, r.name, r.frequency, r.posts_per_run, r.min_interval_days, r.max_runs, r.linkedin_variations, r.enabled,
      r.posting_windows::text AS posting_windows_text,
      ARRAY(SELECT i.id FROM unnest(r.integration_ids) WITH ORDINALITY AS c(id, n) JOIN integrations i ON i.id = c.id ORDER BY c.n) AS integration_ids,
      ARRAY(SELECT t.id FROM unnest(r.tag_ids) WITH ORDINALITY AS c(id, n) JOIN tags t ON t.id = c.id ORDER BY c.n) AS tag_ids,
      api_time(last.created_at) AS last_run_at, last.period AS last_run_period,
      api_time(r.created_at) AS created_at, api_time(r.updated_at) AS updated_at
    FROM recycle_rules r
    LEFT JOIN LATERAL (SELECT created_at, period FROM recycle_runs WHERE rule_id = r.id ORDER BY created_at DESC LIMIT 1) last ON true
    WHERE r.organization_id = ${workspaceId} ${id ? db`AND r.id = ${id}` : db``}
    ORDER BY r.created_at, r.id`;
  return rows.map(({ postingWindowsText, ...rule }) => ({ ...rule, postingWindows: postingWindowsText ? JSON.parse(postingWindowsText) : null }));
}

/** The first channel or tag id of `rule` that is not the workspace's, as a message naming the field; else undefined. */
export async function missingReference(tx: Sql, workspaceId: string, rule: { integrationIds?: string[]; tagIds?: string[] }): Promise<string | undefined> {
  const lists = [
    ['integrationIds', rule.integrationIds ?? [], tx`SELECT id FROM integrations WHERE organization_id = ${workspaceId} AND id = ANY(${rule.integrationIds ?? []}::uuid[])`],
    ['tagIds', rule.tagIds ?? [], tx`SELECT id FROM tags WHERE organization_id = ${workspaceId} AND id = ANY(${rule.tagIds ?? []}::uuid[])`],
  ] as const;
  for (const [field, ids, query] of lists) {
    if (ids.length === 0) continue;
    const found = new Set((await query).map((row) => row.id as string));
    const index = ids.findIndex((id) => !found.has(id));
    if (index >= 0) return `${NOT_FOUND_MESSAGE}: body.${field}[${index}]`;
    const repeated = ids.findIndex((id, at) => ids.indexOf(id) !== at);
    if (repeated >= 0) return `body.${field}[${repeated}]: lists ${ids[repeated]} a second time`;
  }
  return undefined;
}

