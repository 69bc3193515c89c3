import { createHash } from 'node:crypto';
import { z } from 'zod';
import type { Database } from '../db/index.js';

/** How long a key's answer is kept, and how long a claim may stay running before a crash is assumed. */
export const KEPT_HOURS = 24;
const RUNNING_MINUTES = 5;

/** The key a caller sends: in the `Idempotency-Key` header over REST, as `idempotencyKey` over MCP. */
export const idempotencyKey = z
  .string()
  .min(1)
  .max(255)
  .regex(/^[\x21-\x7e]+$/, 'must be visible ASCII characters, without spaces')
  .meta({
    description:
      `Makes a retry safe: the same key with the same request answers the first answer again, without doing the work twice, for ` +
      `${KEPT_HOURS} hours; with another request, 422 IDEMPOTENCY_KEY_REUSED; while the first runs, 409 IDEMPOTENCY_KEY_IN_PROGRESS. ` +
      `A failed attempt is not kept. Keys are the workspace's own.`,
  });

export type Claim =
  | { kind: 'claimed'; settle(status: number, body: unknown): Promise<void>; release(): Promise<void> }
  | { kind: 'replay'; status: number; body: unknown }
  | { kind: 'reused' }
  | { kind: 'in-progress' };

/**
 * Claims `key` for one request of a workspace, or says what became of an earlier claim. The claim is a row
 * committed before the work starts, so a concurrent request with the same key finds it running. A claim that
 * ends in a success keeps the answer; one that fails is released, so nothing is pinned to a failure.
 */
export async function claim(db: Database, workspaceId: string, key: string, operationId: string, input: unknown): Promise<Claim> {
  const fingerprint = createHash('sha256').update(JSON.stringify([operationId, input])).digest();
  await db`DELETE FROM idempotency_keys WHERE organization_id = ${workspaceId} AND created_at < now() - make_interval(hours => ${KEPT_HOURS})`;
  // A key expired, or a claim whose process died while running, is taken over.
  const [claimed] = await db<{ token: string }[]>`
    INSERT INTO idempotency_keys (organization_id, key, fingerprint)
    VALUES (${workspaceId}, ${key}, ${fingerprint})
    ON CONFLICT (organization_id, key) DO UPDATE SET token = gen_random_uuid(), fingerprint = excluded.fingerprint, status = 'running',
      response_status = NULL, response_body = NULL, created_at = now()
      WHERE idempotency_keys.created_at < now() - make_interval(hours => ${KEPT_HOURS})
        OR (idempotency_keys.status = 'running' AND idempotency_keys.created_at < now() - make_interval(mins => ${RUNNING_MINUTES}))
    RETURNING token`;
  if (claimed) {
    // The token tells this claim from a later one that took the key over.
    const mine = db`organization_id = ${workspaceId} AND key = ${key} AND token = ${claimed.token}`;
    return {
      kind: 'claimed',
      // As text into json: the answer's bytes are kept as they were sent (a jsonb parameter would reorder its keys).
      async settle(status, body) {
        await db`UPDATE idempotency_keys SET status = 'done', response_status = ${status}, response_body = ${JSON.stringify(body)}::text::json WHERE ${mine}`;
      },
      async release() {
        await db`DELETE FROM idempotency_keys WHERE ${mine}`;
      },
    };
  }
  const [earlier] = await db<{ fingerprint: Buffer; status: 'running' | 'done'; responseStatus: number; responseBodyText: string }[]>`
    SELECT fingerprint, status, response_status, response_body::text AS response_body_text
    FROM idempotency_keys WHERE organization_id = ${workspaceId} AND key = ${key}`;
  // Gone between the two statements (released by a failure): the caller may simply try again.
  if (!earlier) return { kind: 'in-progress' };
  if (!earlier.fingerprint.equals(fingerprint)) return { kind: 'reused' };
  if (earlier.status === 'running') return { kind: 'in-progress' };
  return { kind: 'replay', status: earlier.responseStatus, body: JSON.parse(earlier.responseBodyText) };
}
