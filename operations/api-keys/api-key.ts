import { z } from 'zod';
import type { Sql } from '../../src/db/index.js';
import { newKey } from '../../src/auth/api-keys.js';
import { iso, isoOrNull, timestamp, uuid } from '../../src/registry/fields.js';

export const ApiKey = z
  .object({
    id: uuid,
    name: z.string(),
    prefix: z.string().meta({ description: 'The first characters of the key, to tell keys apart; the rest is never shown again.' }),
    userId: uuid,
    createdBy: z.object({ id: uuid, name: z.string() }).nullable().meta({ description: 'The member the key acts for; null once that user is gone.' }),
    status: z.enum(['active', 'expired', 'revoked']).meta({ description: 'revoked wins over expired.' }),
    expiresAt: timestamp.nullable(),
    revokedAt: timestamp.nullable(),
    lastUsedAt: timestamp.nullable().meta({ description: 'The key\'s latest call, to within a few seconds (usage is written in batches); null when never used.' }),
    postsNeedApproval: z.boolean().meta({
      description: 'Whether the live posts written with this key wait for a person\'s approval (approvalStatus pending_review) before they publish.',
    }),
    createdAt: timestamp,
  })
  .meta({ id: 'ApiKey' });

export interface ApiKeyRow {
  id: string;
  name: string;
  prefix: string;
  userId: string;
  creatorName: string | null;
  expiresAt: Date | null;
  revokedAt: Date | null;
  lastUsedAt: Date | null;
  postsNeedApproval: boolean;
  createdAt: Date;
  /** Whether expires_at has passed, by the database's clock. */
  expired: boolean;
}

/** The columns of `ApiKeyRow`, from `api_keys k` joined to its user as `u`. */
export const API_KEY_COLUMNS =
  'k.id, k.name, k.prefix, k.user_id, u.name AS creator_name, k.expires_at, k.revoked_at, k.last_used_at, k.posts_need_approval, k.created_at, ' +
  'coalesce(k.expires_at <= now(), false) AS expired';

export const toApiKey = (row: ApiKeyRow): z.input<typeof ApiKey> => ({
  id: row.id,
  name: row.name,
  prefix: row.prefix,
  userId: row.userId,
  createdBy: row.creatorName === null ? null : { id: row.userId, name: row.creatorName },
  status: row.revokedAt ? 'revoked' : row.expired ? 'expired' : 'active',
  expiresAt: isoOrNull(row.expiresAt),
  revokedAt: isoOrNull(row.revokedAt),
  lastUsedAt: isoOrNull(row.lastUsedAt),
  postsNeedApproval: row.postsNeedApproval,
  createdAt: iso(row.createdAt),
});

/** Creates a key for a member of a workspace; the key itself is returned here once and stored only as a hash. */
export async function insertApiKey(
  db: Sql,
  key: { workspaceId: string; userId: string; name: string; expiresAt: Date | null; postsNeedApproval?: boolean },
): Promise<ApiKeyRow & { key: string }> {
  const { key: value, prefix, hash } = newKey();
  const [row] = await db<ApiKeyRow[]>`
    WITH k AS (
      INSERT INTO api_keys (organization_id, user_id, name, prefix, key_hash, expires_at, posts_need_approval)
      VALUES (${key.workspaceId}, ${key.userId}, ${key.name}, ${prefix}, ${hash}, ${key.expiresAt}, ${key.postsNeedApproval ?? false})
      RETURNING *
    )
    SELECT ${db.unsafe(API_KEY_COLUMNS)} FROM k LEFT JOIN users u ON u.id = k.user_id`;
  return { ...row!, key: value };
}

/** The field that sets a key's approval rule, on create and update. */
export const postsNeedApproval = z.boolean().meta({
  description:
    'The live posts written with the key wait for approval by the workspace\'s approvers before they publish: the safe way to hand a ' +
    'key to an AI agent. Posts already waiting stay waiting when it is turned off.',
});

/**
 * Whether `userId` may manage the key `id` of the workspace (revoke it, change it): its own member, or the owner.
 * Undefined when the workspace has no such key.
 */
export async function mayManageKey(db: Sql, workspaceId: string, userId: string, id: string): Promise<boolean | undefined> {
  const [key] = await db<{ mayManage: boolean }[]>`
    SELECT k.user_id = ${userId} OR EXISTS (
      SELECT 1 FROM memberships m WHERE m.organization_id = k.organization_id AND m.user_id = ${userId} AND m.role = 'owner'
    ) AS may_manage
    FROM api_keys k WHERE k.id = ${id} AND k.organization_id = ${workspaceId}`;
  return key?.mayManage;
}
