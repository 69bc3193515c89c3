import { randomUUID } from 'node:crypto';
import type { Sql } from './db/index.js';
import { platforms, PlatformError, type Platform } from './platforms/index.js';
import type { AppContext } from './registry/context.js';

/**
 * Connecting an account: the link a user follows (`POST /integrations/connect`), the state it carries, and the
 * integration a successful check creates or reconnects. The pages themselves are src/http/connect-pages.ts.
 */

/** How long a connect link works. */
export const STATE_TTL_MS = 15 * 60_000;

export interface ConnectState {
  nonce: string;
  workspaceId: string;
  userId: string;
  platform: Platform;
}

/**
 * A new link to the connect page of `platform`. Its state is `<payload>.<HMAC>`: the signature proves this service
 * made it (with a key derived from the encryption key), the expiry bounds it, and its nonce's row makes it single-use.
 */
export async function createConnectLink(app: AppContext, member: { workspaceId: string; userId: string }, platform: Platform): Promise<string> {
  const nonce = randomUUID();
  const expiresAt = new Date(Date.now() + STATE_TTL_MS);
  await app.db`
    INSERT INTO connect_states (nonce, organization_id, user_id, platform, expires_at)
    VALUES (${nonce}, ${member.workspaceId}, ${member.userId}, ${platform}, ${expiresAt})`;
  const payload = Buffer.from(JSON.stringify({ n: nonce, w: member.workspaceId, u: member.userId, p: platform, e: expiresAt.getTime() })).toString('base64url');
  const state = `${payload}.${app.secrets.sign(payload)}`;
  return `${app.publicUrl}/connect/${platform.toLowerCase()}?state=${encodeURIComponent(state)}`;
}

/** The state, when it is this service's, unexpired and unused; otherwise why not, for the page. */
export async function readState(app: AppContext, state: unknown, platform: Platform): Promise<ConnectState | { refused: string }> {
  const refused = { refused: 'This connect link is not valid. Ask for a new one (POST /integrations/connect).' };
  if (typeof state !== 'string' || state.length > 1000) return refused;
  const [payload, signature] = state.split('.');
  if (!payload || !signature || !app.secrets.verify(payload, signature)) return refused;
  let parsed: { n: string; w: string; u: string; p: Platform; e: number };
  try {
    parsed = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'));
  } catch {
    return refused;
  }
  if (parsed.p !== platform) return refused;
  if (parsed.e <= Date.now()) return { refused: 'This connect link has expired (links work for 15 minutes). Ask for a new one.' };
  const [row] = await app.db<{ usedAt: Date | null }[]>`
    SELECT used_at FROM connect_states WHERE nonce = ${parsed.n} AND organization_id = ${parsed.w} AND user_id = ${parsed.u}`;
  if (!row) return refused;
  if (row.usedAt) return { refused: 'This connect link has been used already. Ask for a new one.' };
  return { nonce: parsed.n, workspaceId: parsed.w, userId: parsed.u, platform: parsed.p };
}

export interface ConnectRequest {
  workspaceId: string;
  platform: Platform;
  identifier: string;
  password: string;
  serviceUrl: string;
  /** From a connect page: used up in the transaction that connects, so a replay connects nothing. */
  nonce?: string;
}

export type ConnectResult = { integrationId: string } | { refused: string };

/**
 * Checks the credentials against the platform, then creates the integration, or reconnects the workspace's
 * integration of the same account, ACTIVE with tokenStatus VALID and the credentials sealed. Wrong credentials
 * create nothing.
 */
export async function connectAccount(app: AppContext, request: ConnectRequest, signal: AbortSignal): Promise<ConnectResult> {
  const publisher = platforms[request.platform].publisher;
  if (!publisher) return { refused: `${platforms[request.platform].label} cannot be connected yet` };
  let connection;
  try {
    connection = await publisher.connect(
      { identifier: request.identifier, password: request.password, serviceUrl: request.serviceUrl },
      { signal, timeoutMs: app.config.platformTimeoutMs },
    );
  } catch (error) {
    if (!(error instanceof PlatformError)) throw error;
    if (error.kind === 'credentials') return { refused: 'That handle and app password were not accepted. Check them and try again.' };
    return { refused: `${platforms[request.platform].label} could not check them now (${error.message}). Try again in a moment.` };
  }
  const sealed = app.secrets.seal(Buffer.from(JSON.stringify(connection.credentials)));
  return app.db.begin(async (tx: Sql) => {
    if (request.nonce) {
      const [used] = await tx`UPDATE connect_states SET used_at = now() WHERE nonce = ${request.nonce} AND used_at IS NULL RETURNING nonce`;
      if (!used) return { refused: 'This connect link has been used already. Ask for a new one.' };
    }
    const [row] = await tx<{ id: string }[]>`
      INSERT INTO integrations (organization_id, platform, name, account_id, credentials, token_status, connect_status, last_validated_at)
      VALUES (${request.workspaceId}, ${request.platform}, ${connection.name}, ${connection.accountId}, ${sealed}, 'VALID', 'ACTIVE', now())
      ON CONFLICT (organization_id, platform, account_id) DO UPDATE SET
        name = EXCLUDED.name, credentials = EXCLUDED.credentials, token_status = 'VALID', connect_status = 'ACTIVE',
        connection_error_code = NULL, connection_error = NULL, last_validated_at = now(), updated_at = now()
      RETURNING id`;
    return { integrationId: row!.id };
  });
}
