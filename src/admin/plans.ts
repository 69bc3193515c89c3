/**
 * Plans and subscriptions, set by the operator (`npm run admin -- define-plan | set-plan | set-subscription`).
 * Deliberately not registry operations: those are reachable by a workspace's own members (a browser session
 * reaches every operation), and no member may choose their own plan or subscription. A billing integration
 * would call these functions.
 */
import type { Database, Sql } from '../db/index.js';
import { PLATFORMS, type Platform } from '../platforms/index.js';
import { OperationError } from '../registry/errors.js';

export interface Plan {
  name: string;
  rateLimitPerMinute: number;
  storageBytes: number;
  /** Posts a month per platform; 0 where the plan does not include the platform. */
  monthlyPostQuotas: Record<Platform, number>;
}

export interface PlanChange {
  name: string;
  rateLimitPerMinute?: number;
  storageBytes?: number;
  monthlyPostQuotas?: Partial<Record<Platform, number>>;
}

/** Creates a plan, or changes the given numbers of an existing one. A new plan needs its rate limit and storage. */
export function definePlan(db: Database, change: PlanChange): Promise<Plan> {
  return db.begin((tx) => upsertPlan(tx, change));
}

async function upsertPlan(db: Sql, change: PlanChange): Promise<Plan> {
  const [existing] = await db`SELECT 1 FROM plans WHERE name = ${change.name} FOR UPDATE`;
  if (existing) {
    await db`UPDATE plans SET
      rate_limit_per_minute = coalesce(${change.rateLimitPerMinute ?? null}::integer, rate_limit_per_minute),
      storage_bytes = coalesce(${change.storageBytes ?? null}::bigint, storage_bytes),
      updated_at = now()
      WHERE name = ${change.name}`;
  } else {
    if (change.rateLimitPerMinute === undefined || change.storageBytes === undefined) {
      throw new OperationError('VALIDATION_ERROR', `A new plan needs its rate limit and storage allowance (--rate-limit N --storage-bytes N)`);
    }
    if (!/^[a-z0-9][a-z0-9_-]*$/.test(change.name)) {
      throw new OperationError('VALIDATION_ERROR', 'A plan name is lowercase letters, digits, "-" and "_"');
    }
    await db`INSERT INTO plans (name, rate_limit_per_minute, storage_bytes) VALUES (${change.name}, ${change.rateLimitPerMinute}, ${change.storageBytes})`;
  }
  for (const [platform, monthlyPosts] of Object.entries(change.monthlyPostQuotas ?? {})) {
    await db`INSERT INTO plan_quotas (plan, platform, monthly_posts) VALUES (${change.name}, ${platform}, ${monthlyPosts})
      ON CONFLICT (plan, platform) DO UPDATE SET monthly_posts = excluded.monthly_posts`;
  }
  return (await readPlan(db, change.name))!;
}

export async function readPlan(db: Sql, name: string): Promise<Plan | undefined> {
  const [plan] = await db<{ name: string; rateLimitPerMinute: number; storageBytes: string }[]>`
    SELECT name, rate_limit_per_minute, storage_bytes FROM plans WHERE name = ${name}`;
  if (!plan) return undefined;
  const quotas = await db<{ platform: Platform; monthlyPosts: number }[]>`SELECT platform, monthly_posts FROM plan_quotas WHERE plan = ${name}`;
  const monthlyPostQuotas = Object.fromEntries(
    PLATFORMS.map((platform) => [platform, quotas.find((quota) => quota.platform === platform)?.monthlyPosts ?? 0]),
  ) as Record<Platform, number>;
  return { name: plan.name, rateLimitPerMinute: plan.rateLimitPerMinute, storageBytes: Number(plan.storageBytes), monthlyPostQuotas };
}

export interface WorkspaceBilling {
  workspaceId: string;
  plan: string;
  subscriptionStatus: 'active' | 'none';
}

export async function setWorkspacePlan(db: Sql, workspaceId: string, plan: string): Promise<WorkspaceBilling> {
  if (!(await readPlan(db, plan))) throw new OperationError('NOT_FOUND', `No plan named "${plan}"`);
  return updateWorkspace(db, workspaceId, db`plan = ${plan}`);
}

export async function setSubscription(db: Sql, workspaceId: string, status: 'active' | 'none'): Promise<WorkspaceBilling> {
  return updateWorkspace(db, workspaceId, db`subscription_status = ${status}`);
}

async function updateWorkspace(db: Sql, workspaceId: string, set: ReturnType<Sql>): Promise<WorkspaceBilling> {
  const [workspace] = await db<{ id: string; plan: string; subscriptionStatus: 'active' | 'none' }[]>`
    UPDATE organizations SET ${set}, updated_at = now() WHERE id::text = ${workspaceId}
    RETURNING id, plan, subscription_status`;
  if (!workspace) throw new OperationError('NOT_FOUND', 'No such workspace');
  return { workspaceId: workspace.id, plan: workspace.plan, subscriptionStatus: workspace.subscriptionStatus };
}
