import { createHash, randomBytes } from 'node:crypto';
import type { Sql } from '../db/index.js';
import type { Principal } from './principal.js';

/** Keys read `pw_` + 43 base64url characters (256 random bits); the prefix makes a leaked key easy to spot. */
const KEY_PREFIX = 'pw_';
const KEY_SHAPE = /^pw_[A-Za-z0-9_-]{43}$/;
/** How much of a key is kept in clear, for people to tell their keys apart. */
const VISIBLE_CHARS = 10;

const hashKey = (key: string): Buffer => createHash('sha256').update(key).digest();

export function newKey(): { key: string; prefix: string; hash: Buffer } {
  const key = KEY_PREFIX + randomBytes(32).toString('base64url');
  return { key, prefix: key.slice(0, VISIBLE_CHARS), hash: hashKey(key) };
}

/** The principal of an `x-api-key` value, or null for a missing, malformed, unknown, expired or revoked key. */
export type Authenticate = (header: string | undefined) => Promise<Principal | null>;

interface Waiter {
  resolve: (principal: Principal | null) => void;
  reject: (error: unknown) => void;
}

/**
 * Key authentication against the database on every call, with no cache, so a revocation, an expiry or a
 * member's removal counts from the very next request. The lookups of calls that arrive in the same turn of
 * the event loop share one query: under load that is one round trip for many requests rather than one each,
 * for the price of waiting until the end of the current turn.
 */
export function keyAuthenticator(db: Sql): Authenticate {
  let pending = new Map<string, Waiter[]>();

  const lookUp = async () => {
    const batch = pending;
    pending = new Map();
    try {
      const rows = await db<{ keyHash: string; id: string; name: string; userId: string; organizationId: string }[]>`
        SELECT encode(k.key_hash, 'hex') AS key_hash, k.id, k.name, k.user_id, k.organization_id
        FROM api_keys k
        JOIN memberships m ON m.organization_id = k.organization_id AND m.user_id = k.user_id
        WHERE k.key_hash IN (SELECT decode(hash, 'hex') FROM unnest(${[...batch.keys()]}::text[]) AS hash)
          AND k.revoked_at IS NULL AND (k.expires_at IS NULL OR k.expires_at > now())`;
      const found = new Map(rows.map((row) => [row.keyHash, row]));
      for (const [hash, waiters] of batch) {
        const row = found.get(hash);
        const principal: Principal | null = row
          ? { kind: 'apiKey', keyId: row.id, keyName: row.name, userId: row.userId, workspaceId: row.organizationId }
          : null;
        for (const waiter of waiters) waiter.resolve(principal);
      }
    } catch (error) {
      for (const waiters of batch.values()) for (const waiter of waiters) waiter.reject(error);
    }
  };

  return (header) => {
    if (header === undefined || !KEY_SHAPE.test(header)) return Promise.resolve(null);
    const hash = hashKey(header).toString('hex');
    return new Promise((resolve, reject) => {
      if (pending.size === 0) setImmediate(lookUp);
      const waiters = pending.get(hash);
      if (waiters) waiters.push({ resolve, reject });
      else pending.set(hash, [{ resolve, reject }]);
    });
  };
}

/** Whether the principal's user owns its workspace: what owner-only operations, key management and approval ask. */
export async function isOwner(db: Sql, { workspaceId, userId }: Pick<Principal, 'workspaceId' | 'userId'>): Promise<boolean> {
  const [member] = await db`SELECT 1 FROM memberships WHERE organization_id = ${workspaceId} AND user_id = ${userId} AND role = 'owner'`;
  return member !== undefined;
}
