import { insertApiKey } from '../../operations/api-keys/api-key.js';
import type { Database, Sql } from '../db/index.js';
import { OperationError } from '../registry/errors.js';
import { placeholderEmail } from '../auth/sessions.js';

export interface BootstrapOptions {
  plan?: string;
  subscription?: boolean;
  workspaceName?: string;
  ownerName?: string;
  ownerEmail?: string;
}

export interface Bootstrapped {
  workspaceId: string;
  userId: string;
  apiKey: string;
}

/** A new workspace with its owner and a first API key, in one transaction. */
export async function bootstrapWorkspace(db: Database, options: BootstrapOptions = {}): Promise<Bootstrapped> {
  return db.begin((tx) => createWorkspace(tx, options));
}

/** On the very first start only (no workspace exists yet), a workspace to begin with; safe when processes race. */
export async function bootstrapIfEmpty(db: Database): Promise<Bootstrapped | null> {
  return db.begin(async (tx) => {
    await tx`SELECT pg_advisory_xact_lock(hashtext('postwise:bootstrap'))`;
    const [any] = await tx`SELECT 1 FROM organizations LIMIT 1`;
    return any ? null : createWorkspace(tx, {});
  });
}

async function createWorkspace(tx: Sql, options: BootstrapOptions): Promise<Bootstrapped> {
  if (options.plan !== undefined && (await tx`SELECT 1 FROM plans WHERE name = ${options.plan}`).length === 0) {
    const plans = (await tx<{ name: string }[]>`SELECT name FROM plans ORDER BY name`).map((plan) => plan.name);
    throw new OperationError('NOT_FOUND', `No plan named "${options.plan}"; the plans are ${plans.join(', ')} (define one with define-plan)`);
  }
  const email = options.ownerEmail ?? placeholderEmail();
  const [workspace] = await tx<{ id: string }[]>`
    INSERT INTO organizations (name, plan, subscription_status)
    VALUES (${options.workspaceName ?? 'My workspace'}, ${options.plan ?? 'free'}, ${options.subscription === false ? 'none' : 'active'})
    RETURNING id`;
  const [user] = await tx<{ id: string }[]>`
    INSERT INTO users (name, email, default_organization_id) VALUES (${options.ownerName ?? 'Owner'}, ${email.toLowerCase()}, ${workspace!.id})
    RETURNING id`;
  await tx`INSERT INTO memberships (organization_id, user_id, role) VALUES (${workspace!.id}, ${user!.id}, 'owner')`;
  const key = await insertApiKey(tx, { workspaceId: workspace!.id, userId: user!.id, name: 'First key', expiresAt: null });
  return { workspaceId: workspace!.id, userId: user!.id, apiKey: key.key };
}
