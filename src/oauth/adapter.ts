import { createHash } from 'node:crypto';
import type { Adapter, AdapterPayload } from 'oidc-provider';
import type { Database } from '../db/index.js';

/** A registration that no connection uses is forgotten after this long (RFC 7591 clients come and go). */
export const UNUSED_REGISTRATION_HOURS = 24;

/** What the adapter stores of each kind oidc-provider keeps; anything else is configured off (src/oauth/provider.ts). */
const ARTIFACTS = new Set(['AccessToken', 'AuthorizationCode', 'RefreshToken', 'Session', 'Interaction']);

const sha256 = (value: string): Buffer => createHash('sha256').update(value).digest();

/**
 * oidc-provider's storage in Postgres (migration 028). A registered client is a row of oauth_clients; a Grant is the
 * connection row the consent step wrote (src/oauth/consent.ts), so a grant only ever comes from a member's consent;
 * everything else is an artifact kept by the SHA-256 of its value, its own copy of the value (`jti`) dropped.
 *
 * Payloads are read as text: the service's connection turns JSON keys to camelCase (src/db/index.ts), and these
 * are the library's own.
 *
 * `consume` is atomic: of two requests presenting the same code or refresh token at once, one consumes it and the
 * other finds it consumed and revokes the whole connection, as the library does for a replay that comes later.
 */
export function postgresAdapter(db: Database, options: { requestAddress: () => string | undefined; InvalidGrant: new (detail: string) => Error }) {
  return class PostgresAdapter implements Adapter {
    constructor(private readonly name: string) {}

    async upsert(id: string, payload: AdapterPayload, expiresIn?: number): Promise<void> {
      const expiresAt = new Date(Date.now() + (expiresIn ?? 0) * 1000);
      if (this.name === 'Client') {
        await db`
          INSERT INTO oauth_clients (client_id, metadata, registered_from)
          VALUES (${id}, ${db.json(payload as never)}, ${options.requestAddress() ?? 'unknown'})
          ON CONFLICT (client_id) DO UPDATE SET metadata = excluded.metadata`;
        return;
      }
      if (this.name === 'Grant') {
        const [connection] = await db`
          UPDATE oauth_connections SET grant_payload = ${db.json(payload as never)}, expires_at = ${expiresAt} WHERE id = ${id} RETURNING id`;
        // A grant is only ever the connection its consent made: none left means it was ended meanwhile (a replay, a disconnect).
        if (!connection) throw new options.InvalidGrant('the connection was ended');
        return;
      }
      if (!ARTIFACTS.has(this.name)) throw new Error(`oidc-provider model ${this.name} is not stored (its feature is off)`);
      const { jti: _value, ...stored } = payload;
      try {
        await db`
          INSERT INTO oauth_artifacts (id_hash, kind, connection_id, session_uid, payload, expires_at)
          VALUES (${sha256(id)}, ${this.name}, ${payload.grantId ?? null}, ${this.name === 'Session' ? (payload.uid ?? null) : null},
            ${db.json(stored as never)}, ${expiresAt})
          ON CONFLICT (id_hash) DO UPDATE SET payload = excluded.payload, expires_at = excluded.expires_at, session_uid = excluded.session_uid`;
      } catch (error) {
        // A token of a connection ended while it was being issued (the losing side of a replay race ended it): refused.
        if ((error as { code?: string }).code === '23503') throw new options.InvalidGrant('the connection was ended');
        throw error;
      }
    }

    async find(id: string): Promise<AdapterPayload | undefined> {
      if (this.name === 'Client') {
        const [row] = await db<{ metadata: string }[]>`
          SELECT metadata::text FROM oauth_clients k
          WHERE client_id = ${id}
            AND (created_at > now() - make_interval(hours => ${UNUSED_REGISTRATION_HOURS})
              OR EXISTS (SELECT 1 FROM oauth_connections c WHERE c.client_id = k.client_id))`;
        return row && (JSON.parse(row.metadata) as AdapterPayload);
      }
      if (this.name === 'Grant') {
        const [row] = await db<{ grantPayload: string | null }[]>`
          SELECT grant_payload::text FROM oauth_connections WHERE id = ${id} AND expires_at > now()`;
        return row?.grantPayload ? (JSON.parse(row.grantPayload) as AdapterPayload) : undefined;
      }
      const [row] = await db<{ payload: string; consumedAt: Date | null }[]>`
        SELECT payload::text, consumed_at FROM oauth_artifacts WHERE id_hash = ${sha256(id)} AND kind = ${this.name} AND expires_at > now()`;
      if (!row) return undefined;
      return { ...(JSON.parse(row.payload) as AdapterPayload), jti: id, ...(row.consumedAt ? { consumed: Math.floor(row.consumedAt.getTime() / 1000) } : {}) };
    }

    async findByUid(uid: string): Promise<AdapterPayload | undefined> {
      const [row] = await db<{ idHash: Buffer; payload: string }[]>`
        SELECT id_hash, payload::text FROM oauth_artifacts WHERE session_uid = ${uid} AND kind = 'Session' AND expires_at > now()`;
      // Its value (the cookie) is not kept: a session found by uid is only read, never saved under its jti.
      return row ? { ...(JSON.parse(row.payload) as AdapterPayload), jti: `hashed:${row.idHash.toString('hex')}` } : undefined;
    }

    async findByUserCode(): Promise<undefined> {
      return undefined; // the device flow is off
    }

    async consume(id: string): Promise<void> {
      const [consumed] = await db`
        UPDATE oauth_artifacts SET consumed_at = now() WHERE id_hash = ${sha256(id)} AND consumed_at IS NULL RETURNING 1 AS one`;
      if (consumed) return;
      // Another request consumed it between this one's find and now: a replay racing the first use ends the connection.
      await db`DELETE FROM oauth_connections WHERE id = (SELECT connection_id FROM oauth_artifacts WHERE id_hash = ${sha256(id)})`;
      throw new options.InvalidGrant('grant request already used');
    }

    async destroy(id: string): Promise<void> {
      if (this.name === 'Client') await db`DELETE FROM oauth_clients WHERE client_id = ${id}`;
      else if (this.name === 'Grant') await db`DELETE FROM oauth_connections WHERE id = ${id}`;
      else await db`DELETE FROM oauth_artifacts WHERE id_hash = ${sha256(id)}`;
    }

    async revokeByGrantId(grantId: string): Promise<void> {
      await db`DELETE FROM oauth_artifacts WHERE connection_id = ${grantId} AND kind = ${this.name}`;
    }
  };
}
