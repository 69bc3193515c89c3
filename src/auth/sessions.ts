import { createHash, randomBytes, randomUUID, timingSafeEqual } from 'node:crypto';
import type { Database, Sql } from '../db/index.js';
import type { Principal } from './principal.js';

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

/**
 * Starts a session (always a new id, so an id planted before sign-in is worth nothing after it), while the person is
 * still a member of the workspace (the membership is locked until the session is written, so a removal cannot slip
 * between); null when they are not.
 */
export async function startSession(db: Database, member: { userId: string; workspaceId: string }): Promise<{ token: string; expiresAt: Date } | null> {
  const token = newToken();
  return db.begin(async (tx) => {
    const [membership] = await tx`
      SELECT 1 FROM memberships WHERE organization_id = ${member.workspaceId} AND user_id = ${member.userId} FOR SHARE`;
    if (!membership) return null;
    const [row] = await tx<{ expiresAt: Date }[]>`
      INSERT INTO sessions (token_hash, user_id, organization_id, csrf_token, expires_at)
      VALUES (${hashOf(token)}, ${member.userId}, ${member.workspaceId}, ${newToken()}, now() + make_interval(days => ${ABSOLUTE_DAYS}))
      RETURNING expires_at`;
    return { token, expiresAt: row!.expiresAt };
  });
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
/**
 * The email a workspace's owner gets when none was given (the first start, `bootstrap` without --email): made up, on
 * the domain reserved for examples, so that setup asks for the real one instead of offering it.
 */
export const placeholderEmail = (): string => `owner-${randomBytes(4).toString('hex')}@example.com`;
export const isPlaceholderEmail = (email: string): boolean => /^owner-[0-9a-f]{8}@example\.com$/.test(email);

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

// Sign-in throttling, over a sliding window of 15 minutes: per account and address pair (a guesser is slowed where
// they are, without locking the owner out from everywhere else), per address (one address trying many accounts), and
// per account (many addresses trying one).

const WINDOW_MINUTES = 15;
export const SIGN_IN_LIMITS = { pair: 10, address: 50, account: 100 };

const scopesOf = (email: string, address: string) => ({ pair: `pair:${email} ${address}`, address: `address:${address}`, account: `account:${email}` });

/**
 * Starts a sign-in attempt: it is counted at once, before the password is checked, so that a burst of concurrent
 * attempts cannot all pass the check. Answers the attempt, or, when a limit is passed, the seconds until the oldest
 * failure counted leaves the window (the refused attempt itself is not kept, so waiting is enough).
 */
export async function beginSignIn(db: Sql, email: string, address: string): Promise<{ attempt: string } | { wait: number }> {
  const attempt = randomUUID();
  const scopes = scopesOf(email, address);
  await db`INSERT INTO sign_in_failures (attempt, scope) SELECT ${attempt}, unnest(${Object.values(scopes)}::text[])`;
  const counted = await db<{ scope: string; attempts: number; wait: number }[]>`
    SELECT scope, count(*)::int AS attempts,
      ceil(extract(epoch FROM min(failed_at) + make_interval(mins => ${WINDOW_MINUTES}) - now()))::int AS wait
    FROM sign_in_failures
    WHERE scope = ANY(${Object.values(scopes)}::text[]) AND failed_at > now() - make_interval(mins => ${WINDOW_MINUTES})
    GROUP BY scope`;
  const limitOf = (scope: string) => SIGN_IN_LIMITS[scope.slice(0, scope.indexOf(':')) as keyof typeof SIGN_IN_LIMITS];
  const over = counted.filter((row) => row.attempts > limitOf(row.scope));
  if (over.length === 0) return { attempt };
  await db`DELETE FROM sign_in_failures WHERE attempt = ${attempt}`;
  return { wait: Math.max(1, ...over.map((row) => row.wait)) };
}

/**
 * Ends an attempt: a right password takes back its own count and forgives the pair's earlier failures; a wrong one
 * stays counted. Rows older than the window are swept meanwhile, and so are ended sessions.
 */
export async function endSignIn(db: Sql, attempt: string, { right }: { right: boolean }): Promise<void> {
  if (right) {
    await db`
      DELETE FROM sign_in_failures WHERE attempt = ${attempt}
        OR scope = (SELECT scope FROM sign_in_failures WHERE attempt = ${attempt} AND scope LIKE 'pair:%')`;
    return;
  }
  await db`DELETE FROM sign_in_failures WHERE failed_at < now() - make_interval(mins => ${WINDOW_MINUTES})`;
  await db`DELETE FROM sessions WHERE expires_at < now() OR last_seen_at < now() - make_interval(hours => ${IDLE_HOURS})`;
}

export const tooManyAttempts = (wait: number) => `Too many failed sign-ins; try again in ${Math.ceil(wait / 60)} minute${wait > 60 ? 's' : ''}`;
