import type { Sql } from '../../src/db/index.js';
import type { Platform } from '../../src/platforms/index.js';

/** The first instant of the UTC calendar month of `at`, and of the next one (when a quota resets). */
export function utcMonth(at: Date): { start: Date; next: Date } {
  return { start: new Date(Date.UTC(at.getUTCFullYear(), at.getUTCMonth(), 1)), next: new Date(Date.UTC(at.getUTCFullYear(), at.getUTCMonth() + 1, 1)) };
}

export type QuotaSpend = { ok: true } | { ok: false; limit: number; used: number; resetsAt: Date };

/**
 * Spends `posts` of the workspace's monthly quota for `platform` (the plan's `plan_quotas`; 0 when the plan has
 * none), or nothing if that would pass the limit. One conditional UPSERT: it locks the month's counter row
 * until the transaction ends, so concurrent creates queue on it and each sees the count the previous left.
 */
export async function spendQuota(tx: Sql, workspace: { id: string; plan: string }, platform: Platform, posts: number): Promise<QuotaSpend> {
  const month = utcMonth(new Date());
  // As text: a Date would be cast to a date in the session's time zone.
  const monthStart = month.start.toISOString().slice(0, 10);
  const limit = tx`coalesce((SELECT monthly_posts FROM plan_quotas WHERE plan = ${workspace.plan} AND platform = ${platform}), 0)`;
  const [spent] = await tx`
    INSERT INTO post_quota_usage AS usage (organization_id, platform, month, used)
    SELECT ${workspace.id}, ${platform}, ${monthStart}::date, ${posts}::int WHERE ${posts}::int <= ${limit}
    ON CONFLICT (organization_id, platform, month) DO UPDATE SET used = usage.used + excluded.used
      WHERE usage.used + excluded.used <= ${limit}
    RETURNING used`;
  if (spent) return { ok: true };
  const [state] = await tx<{ limit: number; used: number }[]>`
    SELECT ${limit} AS limit, coalesce((SELECT used FROM post_quota_usage
      WHERE organization_id = ${workspace.id} AND platform = ${platform} AND month = ${monthStart}::date), 0) AS used`;
  return { ok: false, limit: state!.limit, used: state!.used, resetsAt: month.next };
}
