import { createHash, randomBytes } from 'node:crypto';
import type { Sql } from './db/index.js';
import type { Principal } from './registry/context.js';

/** Keys read `pw_` + 43 base64url characters (256 random bits); the prefix makes a leaked key easy to spot. */
const KEY_PREFIX = 'pw_';
const KEY_SHAPE = /^pw_[A-Za-z0-9_-]{43}$/;
/** How much of a key is kept in clear, for people to tell their keys apart. */
const VISIBLE_CHARS = 10;

export const hashKey = (key: string): Buffer => createHash('sha256').update(key).digest();

export function newKey(): { key: string; prefix: string; hash: Buffer } {
  const key = KEY_PREFIX + randomBytes(32).toString('base64url');
  return { key, prefix: key.slice(0, VISIBLE_CHARS), hash: hashKey(key) };
}

/**
 * The principal of an `x-api-key` value, or null for a missing, malformed, unknown, expired or revoked key, or
 * one whose user is no longer a member of its workspace. One indexed query, no cache: a revocation counts from
 * the very next request.
 */
export async function authenticateKey(db: Sql, header: string | undefined): Promise<Principal | null> {
  if (header === undefined || !KEY_SHAPE.test(header)) return null;
  const [row] = await db<{ id: string; userId: string; organizationId: string }[]>`
    SELECT k.id, k.user_id, k.organization_id
    FROM api_keys k
    JOIN memberships m ON m.organization_id = k.organization_id AND m.user_id = k.user_id
    WHERE k.key_hash = ${hashKey(header)} AND k.revoked_at IS NULL AND (k.expires_at IS NULL OR k.expires_at > now())`;
  return row ? { kind: 'apiKey', keyId: row.id, userId: row.userId, workspaceId: row.organizationId } : null;
}
