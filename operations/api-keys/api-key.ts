import { z } from 'zod';
import type { Sql } from '../../src/db/index.js';
import { newKey } from '../../src/auth.js';
import { iso, isoOrNull, timestamp, uuid } from '../../src/registry/fields.js';

export const ApiKey = z
  .object({
    id: uuid,
    name: z.string(),
    prefix: z.string().meta({ description: 'The first characters of the key, to tell keys apart; the rest is never shown again.' }),
    userId: uuid,
    expiresAt: timestamp.nullable(),
    revokedAt: timestamp.nullable(),
    createdAt: timestamp,
  })
  .meta({ id: 'ApiKey' });

export interface ApiKeyRow {
  id: string;
  name: string;
  prefix: string;
  userId: string;
  expiresAt: Date | null;
  revokedAt: Date | null;
  createdAt: Date;
}

export const toApiKey = (row: ApiKeyRow): z.input<typeof ApiKey> => ({
  id: row.id,
  name: row.name,
  prefix: row.prefix,
  userId: row.userId,
  expiresAt: isoOrNull(row.expiresAt),
  revokedAt: isoOrNull(row.revokedAt),
  createdAt: iso(row.createdAt),
});

/** Creates a key for a member of a workspace; the key itself is returned here once and stored only as a hash. */
export async function insertApiKey(
  db: Sql,
  key: { workspaceId: string; userId: string; name: string; expiresAt: Date | null },
): Promise<ApiKeyRow & { key: string }> {
  const { key: value, prefix, hash } = newKey();
  const [row] = await db<ApiKeyRow[]>`
    INSERT INTO api_keys (organization_id, user_id, name, prefix, key_hash, expires_at)
    VALUES (${key.workspaceId}, ${key.userId}, ${key.name}, ${prefix}, ${hash}, ${key.expiresAt})
    RETURNING id, name, prefix, user_id, expires_at, revoked_at, created_at`;
  return { ...row!, key: value };
}
