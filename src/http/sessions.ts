import { parse as parseCookies } from 'cookie';
import express, { type Request, type Response, type Router } from 'express';
import type { Database } from '../db/index.js';
import { hashPassword, passwordProblem, verifyPassword } from '../passwords.js';
import { statusOf, type ErrorCode } from '../registry/errors.js';
import {
  clearSignInFailures,
  csrfTokenMatches,
  endSession,
  readAccountLink,
  readSession,
  recordSignInFailure,
  SESSION_COOKIE,
  signInWait,
  startSession,
  useAccountLink,
  type SessionPrincipal,
} from '../sessions.js';

/** The session a request's cookie names, if alive. */
export function sessionOf(db: Database, req: Request): Promise<SessionPrincipal | null> {
  const token = req.headers.cookie ? parseCookies(req.headers.cookie)[SESSION_COOKIE] : undefined;
  return readSession(db, token);
}

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * Why a request may not act for the session it carries, or null. SameSite=Lax keeps the cookie off other sites'
 * POSTs, but not off those of another port of the same host (same site, other origin), nor off old browsers:
 * so a state-changing request must also come from this origin (`Sec-Fetch-Site`, `Origin`) and carry the
 * session's own token in `x-csrf-token`, which another origin cannot read.
 */
export function forgeryRefusal(req: Request, publicUrl: string, session?: SessionPrincipal): string | null {
  if (SAFE_METHODS.has(req.method)) return null;
  const site = req.header('sec-fetch-site');
  if (site !== undefined && site !== 'same-origin' && site !== 'none') return `A ${site} request may not act for a dashboard session`;
  const origin = req.header('origin');
  if (origin !== undefined && origin !== `${req.protocol}://${req.host}` && origin !== new URL(publicUrl).origin) {
    return `Requests from ${origin} may not act for a dashboard session`;
  }
  if (session && !csrfTokenMatches(session, req.header('x-csrf-token'))) {
    return 'The x-csrf-token header is missing or is not this session\'s; reload the page and try again';
  }
  return null;
}

/**
 * The dashboard's own JSON endpoints, outside /api/v1 and the registry because they come before anybody is signed
 * in: the session, sign-in and sign-out, and the pages a one-time link opens (first-run setup and invitations).
 * What a signed-in member does after that goes through the registry's REST routes like every other client.
 */
export function sessionRoutes({ db, publicUrl }: { db: Database; publicUrl: () => string }): Router {
  const router = express.Router();
  router.use('/auth', express.json({ limit: '16kb' }));
  router.use('/auth', (req, res, next) => {
    res.set('cache-control', 'no-store');
    const refusal = forgeryRefusal(req, publicUrl());
    if (refusal) return void fail(res, 'CSRF_REJECTED', refusal);
    next();
  });

  /** Answers who is signed in, with what the page needs to act (its csrf token). */
  const describe = async (res: Response, session: SessionPrincipal) => {
    const [row] = await db<{ name: string; email: string; workspaceName: string; role: 'owner' | 'member' }[]>`
      SELECT u.name, u.email, o.name AS workspace_name, m.role FROM users u
      JOIN memberships m ON m.user_id = u.id AND m.organization_id = ${session.workspaceId}
      JOIN organizations o ON o.id = m.organization_id WHERE u.id = ${session.userId}`;
    res.json({
      user: { id: session.userId, name: row!.name, email: row!.email },
      workspace: { id: session.workspaceId, name: row!.workspaceName },
      role: row!.role,
      csrfToken: session.csrfToken,
      expiresAt: session.expiresAt.toISOString(),
    });
  };

  /** Signs a member in: a new session (never one the browser brought), its cookie, and the session's description. */
  const signIn = async (req: Request, res: Response, member: { userId: string; workspaceId: string }) => {
    const { token } = await startSession(db, member);
    res.cookie(SESSION_COOKIE, token, { httpOnly: true, sameSite: 'lax', secure: req.secure, path: '/' });
    await describe(res, (await readSession(db, token))!);
  };

  router.get('/auth/session', async (req, res) => {
    const session = await sessionOf(db, req);
    if (!session) return void fail(res, 'UNAUTHORIZED', 'Not signed in');
    await describe(res, session);
  });

  router.post('/auth/login', async (req, res) => {
    const { email, password } = fields(req, ['email', 'password']);
    const address = req.ip ?? 'unknown';
    const wait = await signInWait(db, email.toLowerCase(), address);
    if (wait > 0) {
      res.set('retry-after', String(wait));
      return void fail(res, 'TOO_MANY_ATTEMPTS', `Too many failed sign-ins; try again in ${Math.ceil(wait / 60)} minute${wait > 60 ? 's' : ''}`);
    }
    // The workspace signed in to: the member's default one if still a member there, else their oldest membership.
    const [user] = await db<{ id: string; passwordHash: string | null; workspaceId: string | null }[]>`
      SELECT u.id, u.password_hash,
        (SELECT m.organization_id FROM memberships m WHERE m.user_id = u.id
         ORDER BY m.organization_id = u.default_organization_id DESC, m.created_at LIMIT 1) AS workspace_id
      FROM users u WHERE u.email = ${email.toLowerCase()}`;
    // Checked whether or not the account exists, so the time taken does not tell.
    const right = await verifyPassword(password, user?.passwordHash ?? null);
    if (!right || !user?.workspaceId) {
      await recordSignInFailure(db, email.toLowerCase(), address);
      return void fail(res, 'INVALID_CREDENTIALS', 'The email or password is not right');
    }
    await clearSignInFailures(db, email.toLowerCase());
    await signIn(req, res, { userId: user.id, workspaceId: user.workspaceId });
  });

  router.post('/auth/logout', async (req, res) => {
    const session = await sessionOf(db, req);
    if (session) {
      const refusal = forgeryRefusal(req, publicUrl(), session);
      if (refusal) return void fail(res, 'CSRF_REJECTED', refusal);
      await endSession(db, session.sessionId);
    }
    res.clearCookie(SESSION_COOKIE, { httpOnly: true, sameSite: 'lax', secure: req.secure, path: '/' });
    res.status(204).end();
  });

  router.get('/auth/setup', async (req, res) => {
    const link = await readAccountLink(db, 'setup', req.query.token);
    if (!link) return void fail(res, 'INVALID_LINK', LINK_GONE);
    const [user] = await db<{ name: string }[]>`SELECT name FROM users WHERE id = ${link.userId}`;
    res.json({ email: link.email, name: user?.name ?? '', workspaceName: link.workspaceName });
  });

  router.post('/auth/setup', async (req, res) => {
    const { token, password, name, email } = fields(req, ['token', 'password', 'name', 'email']);
    const problem = fieldProblems({ name: nameProblem(name, true), email: emailProblem(email, true), password: passwordProblem(password) });
    if (problem) return void fail(res, 'VALIDATION_ERROR', problem);
    const hash = await hashPassword(password);
    const member = await db.begin(async (tx) => {
      const link = await readAccountLink(tx, 'setup', token, { lock: true });
      if (!link?.userId) return null;
      const taken = email && (await tx`SELECT 1 FROM users WHERE email = ${email.toLowerCase()} AND id <> ${link.userId}`).length > 0;
      if (taken) return 'taken' as const;
      await tx`UPDATE users SET password_hash = ${hash}, name = coalesce(${name.trim() || null}, name),
        email = coalesce(${email.toLowerCase() || null}, email), updated_at = now() WHERE id = ${link.userId}`;
      await useAccountLink(tx, link.id);
      return { userId: link.userId, workspaceId: link.workspaceId };
    });
    if (member === 'taken') return void fail(res, 'VALIDATION_ERROR', 'email: belongs to another account; choose another');
    if (!member) return void fail(res, 'INVALID_LINK', LINK_GONE);
    await signIn(req, res, member);
  });

  router.get('/auth/invitation', async (req, res) => {
    const link = await readAccountLink(db, 'invite', req.query.token);
    if (!link) return void fail(res, 'INVALID_LINK', LINK_GONE);
    const [user] = await db<{ passwordHash: string | null }[]>`SELECT password_hash FROM users WHERE email = ${link.email}`;
    res.json({ email: link.email, workspaceName: link.workspaceName, invitedBy: link.createdBy?.name ?? null, hasPassword: Boolean(user?.passwordHash) });
  });

  router.post('/auth/invitation', async (req, res) => {
    const { token, password, name } = fields(req, ['token', 'password', 'name']);
    const link = await readAccountLink(db, 'invite', token);
    if (!link) return void fail(res, 'INVALID_LINK', LINK_GONE);
    const [existing] = await db<{ id: string; passwordHash: string | null }[]>`SELECT id, password_hash FROM users WHERE email = ${link.email}`;
    // Somebody who already has a password proves it is them; a new person chooses one.
    let hash: string | null = null;
    if (existing?.passwordHash) {
      if (!(await verifyPassword(password, existing.passwordHash))) return void fail(res, 'INVALID_CREDENTIALS', 'password: is not the password of this account');
    } else {
      const problem = fieldProblems({ name: nameProblem(name, false), password: passwordProblem(password) });
      if (problem) return void fail(res, 'VALIDATION_ERROR', problem);
      hash = await hashPassword(password);
    }
    const member = await db.begin(async (tx) => {
      const claimed = await readAccountLink(tx, 'invite', token, { lock: true });
      if (!claimed) return null;
      const [user] = await tx<{ id: string }[]>`
        INSERT INTO users (name, email, password_hash, default_organization_id) VALUES (${name.trim()}, ${claimed.email}, ${hash}, ${claimed.workspaceId})
        ON CONFLICT (email) DO UPDATE SET
          password_hash = coalesce(users.password_hash, excluded.password_hash),
          name = CASE WHEN users.password_hash IS NULL THEN excluded.name ELSE users.name END,
          default_organization_id = coalesce(users.default_organization_id, excluded.default_organization_id), updated_at = now()
        RETURNING id`;
      await tx`INSERT INTO memberships (organization_id, user_id, role) VALUES (${claimed.workspaceId}, ${user!.id}, 'member') ON CONFLICT DO NOTHING`;
      await useAccountLink(tx, claimed.id);
      return { userId: user!.id, workspaceId: claimed.workspaceId };
    });
    if (!member) return void fail(res, 'INVALID_LINK', LINK_GONE);
    await signIn(req, res, member);
  });

  return router;
}

const LINK_GONE = 'This link is not valid: it may have been used already, withdrawn, or have expired. Ask for a new one.';

function fail(res: Response, code: ErrorCode, message: string) {
  res.status(statusOf(code)).json({ code, message });
}

/** The named string fields of a JSON body ('' for a missing one), so a bad body is judged by the rules, not thrown. */
function fields<K extends string>(req: Request, names: readonly K[]): Record<K, string> {
  const body = (req.body ?? {}) as Record<string, unknown>;
  return Object.fromEntries(names.map((name) => [name, typeof body[name] === 'string' ? body[name] : ''])) as Record<K, string>;
}

/** The broken rules as the registry words them (`field: rule; field: rule`), so a page can show each by its field; or null. */
function fieldProblems(problems: Record<string, string | null>): string | null {
  const broken = Object.entries(problems).filter(([, problem]) => problem !== null);
  return broken.length ? broken.map(([field, problem]) => `${field}: ${problem}`).join('; ') : null;
}

function nameProblem(name: string, optional: boolean): string | null {
  if (optional && name.trim() === '') return null;
  return name.trim().length < 1 || name.trim().length > 200 ? 'must be 1 to 200 characters' : null;
}

function emailProblem(email: string, optional: boolean): string | null {
  if (optional && email === '') return null;
  return /^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(email) && email.length <= 254 ? null : 'must be an email address';
}
