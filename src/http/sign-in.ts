import { parse as parseCookies } from 'cookie';
import express, { type Request, type Response, type Router } from 'express';
import type { Database } from '../db/index.js';
import { hashPassword, passwordProblem, verifyPassword } from '../auth/passwords.js';
import { statusOf, type ErrorCode } from '../registry/errors.js';
import {
  beginSignIn,
  csrfTokenMatches,
  endSession,
  endSignIn,
  isPlaceholderEmail,
  readAccountLink,
  readSession,
  SESSION_COOKIE,
  startSession,
  tooManyAttempts,
  useAccountLink,
  type SessionPrincipal,
} from '../auth/sessions.js';

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

  const cookieOptions = (req: Request) =>
    // Secure over HTTPS: as the request came (through a proxy TRUST_PROXY names), or as PUBLIC_URL says it is served.
    ({ httpOnly: true, sameSite: 'lax', path: '/', secure: req.secure || new URL(publicUrl()).protocol === 'https:' }) as const;

  /**
   * Signs a member in: a new session (never one the browser brought; the one it had ends), its cookie, and the
   * session's description. Null when the person is no longer a member (removed meanwhile).
   */
  const signIn = async (req: Request, res: Response, member: { userId: string; workspaceId: string }) => {
    const previous = await sessionOf(db, req);
    if (previous) await endSession(db, previous.sessionId);
    const started = await startSession(db, member);
    const session = started && (await readSession(db, started.token));
    if (!started || !session) return void fail(res, 'INVALID_CREDENTIALS', 'The email or password is not right');
    res.cookie(SESSION_COOKIE, started.token, cookieOptions(req));
    await describe(res, session);
  };

  /** Checks a password under the sign-in limits (src/auth/sessions.ts), whatever asks for it: sign-in, or an invitation. */
  const throttled = async (res: Response, email: string, address: string, check: () => Promise<boolean>): Promise<boolean | undefined> => {
    const begun = await beginSignIn(db, email, address);
    if ('wait' in begun) {
      res.set('retry-after', String(begun.wait));
      fail(res, 'TOO_MANY_ATTEMPTS', tooManyAttempts(begun.wait));
      return undefined;
    }
    const right = await check();
    await endSignIn(db, begun.attempt, { right });
    return right;
  };

  router.get('/auth/session', async (req, res) => {
    const session = await sessionOf(db, req);
    if (!session) return void fail(res, 'UNAUTHORIZED', 'Not signed in');
    await describe(res, session);
  });

  router.post('/auth/login', async (req, res) => {
    const fieldsSent = fields(req, ['email', 'password']);
    const email = fieldsSent.email.trim().toLowerCase();
    // No account can have such an email, so refusing it at once tells nothing (and keeps it out of the database).
    if (emailProblem(email, false)) return void fail(res, 'INVALID_CREDENTIALS', 'The email or password is not right');
    // The workspace signed in to: the member's default one if still a member there, else their oldest membership.
    const [user] = await db<{ id: string; passwordHash: string | null; workspaceId: string | null }[]>`
      SELECT u.id, u.password_hash,
        (SELECT m.organization_id FROM memberships m WHERE m.user_id = u.id
         ORDER BY m.organization_id = u.default_organization_id DESC, m.created_at LIMIT 1) AS workspace_id
      FROM users u WHERE u.email = ${email}`;
    // Checked whether or not the account exists, so the time taken does not tell.
    const right = await throttled(res, email, req.ip ?? 'unknown', async () =>
      (await verifyPassword(fieldsSent.password, user?.passwordHash ?? null)) && Boolean(user?.workspaceId));
    if (right === undefined) return;
    if (!right) return void fail(res, 'INVALID_CREDENTIALS', 'The email or password is not right');
    await signIn(req, res, { userId: user!.id, workspaceId: user!.workspaceId! });
  });

  router.post('/auth/logout', async (req, res) => {
    const session = await sessionOf(db, req);
    if (session) {
      const refusal = forgeryRefusal(req, publicUrl(), session);
      if (refusal) return void fail(res, 'CSRF_REJECTED', refusal);
      await endSession(db, session.sessionId);
    }
    res.clearCookie(SESSION_COOKIE, cookieOptions(req));
    res.status(204).end();
  });

  router.get('/auth/setup', async (req, res) => {
    const link = await readAccountLink(db, 'setup', req.query.token);
    if (!link) return void fail(res, 'INVALID_LINK', LINK_GONE);
    const [user] = await db<{ name: string }[]>`SELECT name FROM users WHERE id = ${link.userId}`;
    // A made-up email is not offered: setup is where the owner gives the one they sign in with.
    res.json({ email: isPlaceholderEmail(link.email) ? '' : link.email, name: user?.name ?? '', workspaceName: link.workspaceName });
  });

  router.post('/auth/setup', async (req, res) => {
    const { token, password, name, email } = fields(req, ['token', 'password', 'name', 'email']);
    // The link first: hashing (32 MiB, tens of milliseconds) is not for whoever posts any token.
    if (!(await readAccountLink(db, 'setup', token))) return void fail(res, 'INVALID_LINK', LINK_GONE);
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

  /**
   * Joining by invitation. The link is handed over by the inviter, not mailed, so it proves nothing about the email:
   * a new person chooses a password; somebody with an account proves it is them with theirs (under the sign-in
   * limits); an account without a password yet (made by add-member) cannot be claimed by a link at all.
   */
  router.post('/auth/invitation', async (req, res) => {
    const { token, password, name } = fields(req, ['token', 'password', 'name']);
    const link = await readAccountLink(db, 'invite', token);
    if (!link) return void fail(res, 'INVALID_LINK', LINK_GONE);
    const [existing] = await db<{ passwordHash: string | null }[]>`SELECT password_hash FROM users WHERE email = ${link.email}`;
    if (existing && !existing.passwordHash) return void fail(res, 'INVALID_LINK', NO_PASSWORD_YET);
    let hash: string | null = null;
    if (existing) {
      const right = await throttled(res, link.email, req.ip ?? 'unknown', () => verifyPassword(password, existing.passwordHash));
      if (right === undefined) return;
      if (!right) return void fail(res, 'INVALID_CREDENTIALS', 'password: is not the password of this account');
    } else {
      const problem = fieldProblems({ name: nameProblem(name, false), password: passwordProblem(password) });
      if (problem) return void fail(res, 'VALIDATION_ERROR', problem);
      hash = await hashPassword(password);
    }
    const member = await db.begin(async (tx) => {
      const claimed = await readAccountLink(tx, 'invite', token, { lock: true });
      if (!claimed) return LINK_GONE;
      // Read again under a lock: the account must be as it was when the password was checked (or still not exist).
      const [user] = await tx<{ id: string; passwordHash: string | null }[]>`SELECT id, password_hash FROM users WHERE email = ${claimed.email} FOR UPDATE`;
      if (user && !user.passwordHash) return NO_PASSWORD_YET;
      // The account appeared, or went, since the password was checked or chosen.
      if (Boolean(user) !== (hash === null)) return 'The account changed meanwhile; open the link again.';
      const userId =
        user?.id ??
        (await tx<{ id: string }[]>`
          INSERT INTO users (name, email, password_hash, default_organization_id) VALUES (${name.trim()}, ${claimed.email}, ${hash}, ${claimed.workspaceId})
          ON CONFLICT (email) DO NOTHING RETURNING id`)[0]?.id;
      if (!userId) return LINK_GONE;
      await tx`INSERT INTO memberships (organization_id, user_id, role) VALUES (${claimed.workspaceId}, ${userId}, 'member') ON CONFLICT DO NOTHING`;
      // This link and any other open invitation of the same person to the same workspace are spent.
      await tx`UPDATE account_links SET used_at = now()
        WHERE purpose = 'invite' AND organization_id = ${claimed.workspaceId} AND email = ${claimed.email} AND used_at IS NULL AND revoked_at IS NULL`;
      return { userId, workspaceId: claimed.workspaceId };
    });
    if (typeof member === 'string') return void fail(res, 'INVALID_LINK', member);
    await signIn(req, res, member);
  });

  return router;
}

const LINK_GONE = 'This link is not valid: it may have been used already, withdrawn, or have expired. Ask for a new one.';
const NO_PASSWORD_YET =
  'This email has an account without a password yet, which a link cannot claim: its password is set from a shell ' +
  '(npm run admin -- set-password), after which this link asks for it.';

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
  return /^[^\s@\0]+@[^\s@\0]+\.[^\s@\0]+$/.test(email) && email.length <= 254 ? null : 'must be an email address';
}
