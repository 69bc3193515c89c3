import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Database, Sql } from './db/index.js';
import type { Principal } from './registry/context.js';

/**
 * Dashboard sessions, kept in Postgres: the cookie carries 256 random bits and the table only their SHA-256, so
 * neither a copy of the table nor a log line signs anybody in. A session ends after IDLE_HOURS without a request,
 * after ABSOLUTE_DAYS whatever happens, at sign-out, and when its member leaves the workspace.
 */
export const SESSION_COOKIE = 'postwise_session';
export const IDLE_HOURS = 12;
export const ABSOLUTE_DAYS = 7;
/** last_seen_at is written at most this often, so a busy page does not write on every request. */
const SEEN_RESOLUTION = '1 minute';

const hashOf = (token: string) => createHash('sha256').update(token).digest();
const newToken = () => randomBytes(32).toString('base64url');
const TOKEN_SHAPE = /^[A-Za-z0-9_-]{43}$/;

export type SessionPrincipal = Extract<Principal, { kind: 'session' }> & { csrfToken: string; expiresAt: Date };

/** Starts a session (always a new id, so an id planted before sign-in is worth nothing after it). */
export async function startSession(db: Sql, member: { userId: string; workspaceId: string }): Promise<{ token: string; expiresAt: Date }> {
  const token = newToken();
  const [row] = await db<{ expiresAt: Date }[]>`
    INSERT INTO sessions (token_hash, user_id, organization_id, csrf_token, expires_at)
    VALUES (${hashOf(token)}, ${member.userId}, ${member.workspaceId}, ${newToken()}, now() + make_interval(days => ${ABSOLUTE_DAYS}))
    RETURNING expires_at`;
  return { token, expiresAt: row!.expiresAt };
}

/**
 * The session a cookie names, while it is alive and its user still a member of its workspace; it is touched
 * (idle expiry pushed back) as a side effect, at most once a minute.
 */
export async function readSession(db: Sql, token: string | undefined): Promise<SessionPrincipal | null> {
  if (!token || !TOKEN_SHAPE.test(token)) return null;
  const [row] = await db<{ id: string; userId: string; organizationId: string; csrfToken: string; expiresAt: Date }[]>`
    WITH alive AS (
      SELECT s.id, s.user_id, s.organization_id, s.csrf_token, s.expires_at, s.last_seen_at FROM sessions s
      JOIN memberships m ON m.organization_id = s.organization_id AND m.user_id = s.user_id
      WHERE s.token_hash = ${hashOf(token)} AND s.expires_at > now()
        AND s.last_seen_at > now() - make_interval(hours => ${IDLE_HOURS})
    ), touched AS (
      UPDATE sessions SET last_seen_at = now() FROM alive
      WHERE sessions.id = alive.id AND alive.last_seen_at < now() - ${SEEN_RESOLUTION}::interval
    )
    SELECT id, user_id, organization_id, csrf_token, expires_at FROM alive`;
  return row ? { kind: 'session', sessionId: row.id, userId: row.userId, workspaceId: row.organizationId, csrfToken: row.csrfToken, expiresAt: row.expiresAt } : null;
}

export async function endSession(db: Sql, sessionId: string): Promise<void> {
  await db`DELETE FROM sessions WHERE id = ${sessionId}`;
}

/** Ends every session a member holds in a workspace (on removal, in the removal's transaction). */
export async function endMemberSessions(db: Sql, workspaceId: string, userId: string): Promise<void> {
  await db`DELETE FROM sessions WHERE organization_id = ${workspaceId} AND user_id = ${userId}`;
}

/** Compares a request's x-csrf-token with the session's, in constant time. */
export function csrfTokenMatches(session: SessionPrincipal, sent: string | undefined): boolean {
  if (!sent) return false;
  const a = Buffer.from(sent);
  const b = Buffer.from(session.csrfToken);
  return a.length === b.length && timingSafeEqual(a, b);
}

// One-time links: the first-run password setup, and invitations.

export type LinkPurpose = 'setup' | 'invite';
export const LINK_TTL_HOURS: Record<LinkPurpose, number> = { setup: 24, invite: 7 * 24 };
/** Where each link's page is, below the public URL. */
const LINK_PATH: Record<LinkPurpose, string> = { setup: '/setup', invite: '/invite' };

export interface AccountLink {
  id: string;
  purpose: LinkPurpose;
  workspaceId: string;
  workspaceName: string;
  userId: string | null;
  email: string;
  createdBy: { id: string; name: string } | null;
  createdAt: Date;
  expiresAt: Date;
}

/** Makes a one-time link; its token is in the returned URL only, and stored as a hash. */
export async function createAccountLink(
  db: Sql,
  publicUrl: string,
  link: { purpose: LinkPurpose; workspaceId: string; email: string; userId?: string; createdBy?: string },
): Promise<{ id: string; url: string; createdAt: Date; expiresAt: Date }> {
  const token = newToken();
  const [row] = await db<{ id: string; createdAt: Date; expiresAt: Date }[]>`
    INSERT INTO account_links (purpose, token_hash, organization_id, user_id, email, created_by, expires_at)
    VALUES (${link.purpose}, ${hashOf(token)}, ${link.workspaceId}, ${link.userId ?? null}, ${link.email}, ${link.createdBy ?? null},
      now() + make_interval(hours => ${LINK_TTL_HOURS[link.purpose]}))
    RETURNING id, created_at, expires_at`;
  const url = new URL(LINK_PATH[link.purpose], publicUrl);
  url.searchParams.set('token', token);
  return { ...row!, url: url.href };
}

/** The unused, unexpired, unrevoked link a token names; with `lock`, locked until the caller's transaction ends. */
export async function readAccountLink(db: Sql, purpose: LinkPurpose, token: unknown, { lock = false } = {}): Promise<AccountLink | null> {
  if (typeof token !== 'string' || !TOKEN_SHAPE.test(token)) return null;
  const [row] = await db<(Omit<AccountLink, 'createdBy' | 'workspaceId'> & { organizationId: string; creatorId: string | null; creatorName: string | null })[]>`
    SELECT l.id, l.purpose, l.organization_id, o.name AS workspace_name, l.user_id, l.email, l.created_at, l.expires_at,
      c.id AS creator_id, c.name AS creator_name
    FROM account_links l JOIN organizations o ON o.id = l.organization_id LEFT JOIN users c ON c.id = l.created_by
    WHERE l.token_hash = ${hashOf(token)} AND l.purpose = ${purpose}
      AND l.used_at IS NULL AND l.revoked_at IS NULL AND l.expires_at > now()
    ${lock ? db`FOR UPDATE OF l` : db``}`;
  if (!row) return null;
  const { organizationId, creatorId, creatorName, ...rest } = row;
  return { ...rest, workspaceId: organizationId, createdBy: creatorId ? { id: creatorId, name: creatorName! } : null };
}

export async function useAccountLink(db: Sql, id: string): Promise<void> {
  await db`UPDATE account_links SET used_at = now() WHERE id = ${id}`;
}

/**
 * The first-run link: when the workspace has no member with a password yet, a new setup link for its owner
 * (earlier unused ones are withdrawn, so only the link last printed works); otherwise null.
 */
export async function firstRunSetupLink(db: Database, publicUrl: string): Promise<string | null> {
  return db.begin(async (tx) => {
    await tx`SELECT pg_advisory_xact_lock(hashtext('postwise:setup-link'))`;
    const [owner] = await tx<{ userId: string; organizationId: string; email: string }[]>`
      SELECT m.user_id, m.organization_id, u.email FROM memberships m JOIN users u ON u.id = m.user_id
      WHERE m.role = 'owner' AND NOT EXISTS (SELECT 1 FROM users p JOIN memberships pm ON pm.user_id = p.id WHERE p.password_hash IS NOT NULL)
      ORDER BY m.created_at LIMIT 1`;
    if (!owner) return null;
    await tx`UPDATE account_links SET revoked_at = now() WHERE purpose = 'setup' AND used_at IS NULL AND revoked_at IS NULL`;
    const link = await createAccountLink(tx, publicUrl, { purpose: 'setup', workspaceId: owner.organizationId, userId: owner.userId, email: owner.email });
    return link.url;
  });
}

// Sign-in throttling: failures are counted per account and per address over a sliding window.

const WINDOW_MINUTES = 15;
export const MAX_FAILURES = { account: 10, address: 50 };

/** Seconds until a sign-in may be tried again for this email or from this address, or 0 when it may now. */
export async function signInWait(db: Sql, email: string, address: string): Promise<number> {
  const rows = await db<{ scope: string; failures: number; wait: number }[]>`
    SELECT scope, count(*)::int AS failures,
      ceil(extract(epoch FROM min(failed_at) + make_interval(mins => ${WINDOW_MINUTES}) - now()))::int AS wait
    FROM sign_in_failures
    WHERE scope IN (${'email:' + email}, ${'address:' + address}) AND failed_at > now() - make_interval(mins => ${WINDOW_MINUTES})
    GROUP BY scope`;
  const limitOf = (scope: string) => (scope.startsWith('email:') ? MAX_FAILURES.account : MAX_FAILURES.address);
  return Math.max(0, ...rows.filter((row) => row.failures >= limitOf(row.scope)).map((row) => row.wait));
}

export async function recordSignInFailure(db: Sql, email: string, address: string): Promise<void> {
  await db`INSERT INTO sign_in_failures (scope) VALUES (${'email:' + email}), (${'address:' + address})`;
  // Old rows serve no window; a failed sign-in is rare enough to carry the sweep.
  await db`DELETE FROM sign_in_failures WHERE failed_at < now() - make_interval(mins => ${WINDOW_MINUTES})`;
}

/** A right password forgives the account's earlier failures (not the address's). */
export async function clearSignInFailures(db: Sql, email: string): Promise<void> {
  await db`DELETE FROM sign_in_failures WHERE scope = ${'email:' + email}`;
}
