import { randomBytes } from 'node:crypto';
import express, { type Request, type RequestHandler, type Response, type Router } from 'express';
import type { Database } from '../db/index.js';
import type { SessionPrincipal } from '../auth/sessions.js';
import { statusOf, type ErrorCode } from '../registry/errors.js';
import { CLI_CLIENT_ID, type AuthorizationServer } from '../oauth/provider.js';
import { resourceMetadata, resourcesOf } from '../oauth/resource.js';
import { isScope, SCOPE_NAMES, SCOPES, type Scope } from '../oauth/scopes.js';
import { sendJson } from './json.js';

/** Dynamic Client Registration (RFC 7591) is open to anyone: at most this many registrations an hour, per address and in all. */
export const REGISTRATION_LIMITS = { address: 10, total: 500 };

interface OAuthRouteOptions {
  db: Database;
  server: AuthorizationServer;
  publicUrl: () => string;
  sessionOf: (req: Request) => Promise<SessionPrincipal | null>;
  forgeryRefusal: (req: Request, session: SessionPrincipal) => string | null;
}

/**
 * OAuth outside the registry: the protected resources' metadata (RFC 9728), the authorization server's own routes
 * (src/oauth/provider.ts) behind the registration limit, and the JSON the consent page (the dashboard's
 * /authorize/:uid) reads and answers with the member's session.
 */
export function oauthRoutes({ db, server, publicUrl, sessionOf, forgeryRefusal }: OAuthRouteOptions): Router {
  const router = express.Router();

  // The resource's path after the well-known name (RFC 9728 §3.1); the bare name serves /mcp's, the one clients try first.
  router.get(['/.well-known/oauth-protected-resource', '/.well-known/oauth-protected-resource/mcp', '/.well-known/oauth-protected-resource/api/v1'], (req, res) => {
    const base = publicUrl();
    const resources = resourcesOf(base);
    res.set('access-control-allow-origin', '*').set('cache-control', 'public, max-age=3600');
    sendJson(res, 200, resourceMetadata(base, req.path.endsWith('/api/v1') ? resources.api : resources.mcp));
  });

  router.post('/oauth/register', async (req, res, next) => {
    const [counts] = await db<{ fromAddress: number; all: number }[]>`
      SELECT count(*) FILTER (WHERE registered_from = ${req.ip ?? 'unknown'})::int AS from_address, count(*)::int AS all
      FROM oauth_clients WHERE created_at > now() - interval '1 hour'`;
    if (counts!.fromAddress < REGISTRATION_LIMITS.address && counts!.all < REGISTRATION_LIMITS.total) return next();
    res.set('retry-after', '3600');
    sendJson(res, 429, { error: 'too_many_requests', error_description: 'Too many apps registered in the last hour; try again in an hour' });
  });
  router.use(server.handle);

  /**
   * What both consent calls need first: the member's session (with its csrf token, from this origin), the authorization
   * being answered, and its app. A request Postwise refuses (no state, openid) is answered at once with where the page
   * sends the browser back, the error with it.
   */
  const consentStep: RequestHandler[] = [express.json({ limit: '16kb' }), async (req, res, next) => {
    res.set('cache-control', 'no-store');
    const session = await sessionOf(req);
    if (!session) return void fail(res, 'UNAUTHORIZED', 'Sign in to the dashboard to connect an app');
    const forgery = forgeryRefusal(req, session);
    if (forgery) return void fail(res, 'CSRF_REJECTED', forgery);
    const provider = await server.provider();
    const details = await interactionOf(provider, req, res);
    if (!details) return;
    const finish = async (result: Parameters<typeof provider.interactionResult>[2]) =>
      sendJson(res, 200, { redirectTo: await provider.interactionResult(req, res, result, { mergeWithLastSubmission: false }) });
    const params = details.params as Record<string, string | undefined>;
    const refusal = requestRefusal(params);
    if (refusal) return void (await finish(refusal));
    const client = await provider.Client.find(params.client_id ?? '');
    if (!client) return void fail(res, 'NOT_FOUND', 'This app is no longer registered; start again from the app');
    const step: ConsentStep = { session, provider, params, client, finish };
    res.locals.consent = step;
    next();
  }];

  /** What the consent page shows: the app, where it sends the member back, the workspace, what it asks to do. */
  router.get('/authorize/:uid/request', consentStep, async (_req: Request, res: Response) => {
    const { session, params, client } = res.locals.consent as ConsentStep;
    const redirect = new URL(params.redirect_uri ?? '');
    const [known] = await db<{ count: number }[]>`
      SELECT count(*)::int AS count FROM oauth_connections WHERE organization_id = ${session.workspaceId} AND client_id = ${client.clientId}`;
    const [place] = await db<{ workspace: string; name: string; email: string }[]>`
      SELECT o.name AS workspace, u.name, u.email FROM organizations o, users u WHERE o.id = ${session.workspaceId} AND u.id = ${session.userId}`;
    const kind = client.clientId === CLI_CLIENT_ID ? 'command-line' : /^https:/.test(client.clientId) ? 'metadata-document' : 'registered';
    const warnings: string[] = [];
    if (kind === 'registered') warnings.push('This app registered itself moments ago: Postwise cannot confirm who made it. Connect it only if you started this from the app yourself.');
    else if (known!.count === 0) warnings.push('This app has never been connected to this workspace before. Make sure you trust it.');
    if (kind !== 'command-line' && redirect.protocol === 'http:') {
      warnings.push(`It sends you back to ${redirect.host}, an address on this computer: continue only if you started this from an app on this computer.`);
    }
    const asked = (params.scope ?? '').split(' ').filter(isScope);
    sendJson(res, 200, {
      app: {
        name: client.clientName ?? client.clientId,
        logoUri: typeof client.logoUri === 'string' && /^https:/.test(client.logoUri) ? client.logoUri : null,
        clientUri: client.clientUri ?? null,
        kind,
        documentHost: kind === 'metadata-document' ? new URL(client.clientId).host : null,
      },
      redirectHost: redirect.host,
      warnings,
      workspace: { name: place!.workspace },
      member: { name: place!.name, email: place!.email },
      resource: params.resource === resourcesOf(publicUrl()).api ? 'api' : 'mcp',
      scopes: SCOPE_NAMES.map((name) => ({ name, description: SCOPES[name], asked: asked.length === 0 || asked.includes(name) })),
    });
  });

  /** Allow (with the scopes ticked and the approval rule) or deny: the page then goes where this says. */
  router.post('/authorize/:uid/decision', consentStep, async (req: Request, res: Response) => {
    const { session, provider, params, client, finish } = res.locals.consent as ConsentStep;
    const body = (req.body ?? {}) as { allow?: unknown; scopes?: unknown; postsNeedApproval?: unknown };
    if (body.allow !== true) return void (await finish({ error: 'access_denied', error_description: 'The member did not allow the app' }));
    const scopes = Array.isArray(body.scopes) ? body.scopes.filter((scope): scope is Scope => typeof scope === 'string' && isScope(scope)) : [];
    if (scopes.length === 0) return void fail(res, 'VALIDATION_ERROR', 'Allow the app at least one thing, or deny it');
    const resources = resourcesOf(publicUrl());
    const resource = params.resource === resources.api ? resources.api : resources.mcp;
    const accountId = `${session.workspaceId}:${session.userId}`;
    const id = randomBytes(18).toString('base64url');
    await db`
      INSERT INTO oauth_connections (id, organization_id, user_id, client_id, client_name, logo_uri, redirect_host, resource, scopes, posts_need_approval, expires_at)
      VALUES (${id}, ${session.workspaceId}, ${session.userId}, ${client.clientId}, ${client.clientName ?? client.clientId},
        ${typeof client.logoUri === 'string' ? client.logoUri : null}, ${new URL(params.redirect_uri ?? '').host}, ${resource}, ${scopes},
        ${body.postsNeedApproval !== false}, now() + interval '1 year')`;
    const grant = new provider.Grant({ jti: id, accountId, clientId: client.clientId } as never);
    grant.addResourceScope(resource, scopes.join(' '));
    // What the app asked for and was not allowed is rejected, not left pending (the library would ask again).
    const rejected = SCOPE_NAMES.filter((scope) => !scopes.includes(scope));
    if (rejected.length > 0) grant.rejectResourceScope(resource, rejected.join(' '));
    if ((params.scope ?? '').split(' ').includes('offline_access')) grant.addOIDCScope('offline_access');
    await grant.save();
    await finish({ login: { accountId, remember: false }, consent: { grantId: id } });
  });
  return router;
}

type Provider = Awaited<ReturnType<AuthorizationServer['provider']>>;

interface ConsentStep {
  session: SessionPrincipal;
  provider: Provider;
  /** The authorization request's parameters, as the app sent them. */
  params: Record<string, string | undefined>;
  client: NonNullable<Awaited<ReturnType<Provider['Client']['find']>>>;
  /** Ends the authorization with `result` and answers where the browser goes next. */
  finish(result: Parameters<Provider['interactionResult']>[2]): Promise<void>;
}

/** Refusals the library leaves to the application: Postwise issues no ID tokens, and asks every client for `state`. */
function requestRefusal(params: Record<string, string | undefined>) {
  if ((params.scope ?? '').split(' ').includes('openid')) {
    return { error: 'invalid_scope', error_description: 'This server issues OAuth access tokens only, not OpenID Connect ID tokens (openid)' };
  }
  if (!params.state) return { error: 'invalid_request', error_description: 'state is required' };
  return undefined;
}

/** The authorization this consent answers, or a 404 answered when it has expired or its cookie is not this browser's. */
async function interactionOf(provider: Provider, req: Request, res: Response) {
  try {
    const details = await provider.interactionDetails(req, res);
    if (details.uid !== req.params.uid) throw new Error('another interaction');
    return details;
  } catch {
    fail(res, 'NOT_FOUND', 'This request to connect an app has expired or was opened in another browser; start again from the app');
    return undefined;
  }
}

function fail(res: Response, code: ErrorCode, message: string) {
  sendJson(res, statusOf(code), { code, message });
}
