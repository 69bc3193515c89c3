import express, { type Request, type Response, type Router } from 'express';
import { completeMastodon, completeOAuth, connectAccount, mastodonConsentUrl, readSelection, readState, selectAccount } from '../channels/connect.js';
import { instanceHost } from '../channels/mastodon-instance.js';
import { platforms, PLATFORMS, type AccountChoice } from '../platforms/index.js';
import type { AppContext } from '../registry/context.js';

/**
 * The pages a user reaches from `POST /integrations/connect`: plain HTML, no script, outside /api/v1.
 * - Bluesky: `/connect/bluesky`. GET shows the form, POST (urlencoded, to the same URL) checks the credentials against
 *   the PDS and connects, or shows the form again with what went wrong.
 * - OAuth platforms (LinkedIn): `/oauth/linkedin/callback`, where the platform sends the member back, connects (or
 *   says why not); when the member may post as pages too, it shows the account picker, which posts to
 *   `/oauth/linkedin/select` (a radio field `account` per choice, valued by URN).
 * The signed, single-use state in the URL says for which workspace and user.
 */
export function connectPages(app: AppContext): Router {
  const router = express.Router();
  const readForm = express.urlencoded({ extended: false, limit: '16kb', parameterLimit: 10 });

  router.get('/connect/bluesky', async (req: Request, res: Response) => {
    const state = await readState(app, req.query.state, 'BLUESKY');
    if ('refused' in state) return void page(res, 400, 'Cannot connect', `<p>${escape(state.refused)}</p>`);
    page(res, 200, 'Connect a Bluesky account', form(req.originalUrl, app.config.blueskyServiceUrl));
  });

  router.post('/connect/bluesky', readForm, async (req: Request, res: Response) => {
    const state = await readState(app, req.query.state, 'BLUESKY');
    if ('refused' in state) return void page(res, 400, 'Cannot connect', `<p>${escape(state.refused)}</p>`);
    const body = (req.body ?? {}) as Record<string, unknown>;
    const handle = typeof body.handle === 'string' ? body.handle.trim().replace(/^@/, '') : '';
    const appPassword = typeof body.appPassword === 'string' ? body.appPassword.trim() : '';
    const serviceUrl = typeof body.serviceUrl === 'string' && body.serviceUrl.trim() ? body.serviceUrl.trim() : app.config.blueskyServiceUrl;
    const again = (message: string) =>
      page(res, 400, 'Connect a Bluesky account', `<p class="error">${escape(message)}</p>${form(req.originalUrl, serviceUrl, handle)}`);
    if (!handle || !appPassword) return void again('Both the handle and the app password are needed.');
    if (!/^https?:\/\/[^\s]+$/.test(serviceUrl) || !URL.canParse(serviceUrl)) return void again('The server must be an http(s) URL.');
    const result = await connectAccount(
      app,
      { workspaceId: state.workspaceId, platform: 'BLUESKY', identifier: handle, password: appPassword, serviceUrl, nonce: state.nonce },
      new AbortController().signal,
    );
    if ('refused' in result) return void again(result.refused);
    page(res, 200, 'Bluesky account connected', `<p>${escape(handle)} is connected. You can close this page.</p><p>Integration <code>${result.integrationId}</code></p>`);
  });

  // Mastodon: a link made without a server asks for it here; the member's server then has the consent page.
  router.get('/connect/mastodon', async (req: Request, res: Response) => {
    const state = await readState(app, req.query.state, 'MASTODON');
    if ('refused' in state) return void page(res, 400, 'Cannot connect', `<p>${escape(state.refused)}</p>`);
    page(res, 200, 'Connect a Mastodon account', mastodonForm(req.originalUrl));
  });

  router.post('/connect/mastodon', readForm, async (req: Request, res: Response) => {
    const state = await readState(app, req.query.state, 'MASTODON');
    if ('refused' in state) return void page(res, 400, 'Cannot connect', `<p>${escape(state.refused)}</p>`);
    const typed = typeof (req.body as Record<string, unknown> | undefined)?.instance === 'string' ? String((req.body as Record<string, unknown>).instance) : '';
    const again = (message: string) => page(res, 400, 'Connect a Mastodon account', `<p class="error">${escape(message)}</p>${mastodonForm(req.originalUrl, typed)}`);
    const host = instanceHost(typed);
    if (typeof host === 'object') return void again(host.refused);
    const consent = await mastodonConsentUrl(app, state, host, AbortSignal.timeout(60_000));
    if (typeof consent === 'object') return void again(consent.refused);
    // A page that goes on, not a redirect: the page's policy lets forms post to this service only, redirects included.
    page(res, 200, `Sign in on ${host}`, `<p><a href="${escape(consent)}">Continue to ${escape(host)}</a> to sign in and allow Postwise to post.</p>`, consent);
  });

  router.get('/oauth/mastodon/callback', async (req: Request, res: Response) => {
    const result = await completeMastodon(app, new URL(req.originalUrl, app.publicUrl), AbortSignal.timeout(60_000));
    if ('refused' in result) return void page(res, 400, 'Mastodon was not connected', `<p>${escape(result.refused)}</p>`);
    connected(res, 'Mastodon', result);
  });

  for (const platform of PLATFORMS.filter((p) => platforms[p].publisher?.oauth)) {
    const { label } = platforms[platform];
    const base = `/oauth/${platform.toLowerCase()}`;
    router.get(`${base}/callback`, async (req: Request, res: Response) => {
      const result = await completeOAuth(app, platform, new URL(req.originalUrl, app.publicUrl), AbortSignal.timeout(60_000));
      if ('refused' in result) return void page(res, 400, `${label} was not connected`, `<p>${escape(result.refused)}</p>`);
      if ('pending' in result) {
        return void page(res, 200, `Post to ${label} as…`, picker(`${base}/select`, result.pending.selection, result.pending.choices, result.integrationId));
      }
      connected(res, label, result);
    });
    router.post(`${base}/select`, readForm, async (req: Request, res: Response) => {
      const body = (req.body ?? {}) as Record<string, unknown>;
      const selection = readSelection(app, body.selection);
      if ('refused' in selection) return void page(res, 400, `${label} was not connected`, `<p>${escape(selection.refused)}</p>`);
      if (typeof body.account !== 'string') return void page(res, 400, `Post to ${label} as…`, '<p class="error">Choose one of the accounts. Go back and try again.</p>');
      const result = await selectAccount(app, selection.workspaceId, selection.integrationId, body.account);
      if ('refused' in result) return void page(res, 400, `${label} was not connected`, `<p>${escape(result.refused)}</p>`);
      connected(res, label, result);
    });
  }
  return router;
}

function connected(res: Response, label: string, result: { integrationId: string; name: string }) {
  page(res, 200, `${label} account connected`, `<p>${escape(result.name)} is connected. You can close this page, or go back to <a href="/channels">your channels</a>.</p>` +
      `<p>Integration <code>${result.integrationId}</code></p>`);
}

/** The account picker: one radio `account` per choice (the member first, then its pages), valued by the account's id. */
function picker(action: string, selection: string, choices: AccountChoice[], integrationId: string) {
  const options = choices
    .map((choice, index) => `<p><label><input type="radio" name="account" value="${escape(choice.accountId)}"${index === 0 ? ' checked' : ''} required> ${escape(choice.name)}</label> <small>${escape(choice.accountId)}</small></p>`)
    .join('\n');
  return `<p>Choose whom this channel posts as: yourself or one of the pages you administer.</p>
<form method="post" action="${escape(action)}">
<input type="hidden" name="selection" value="${escape(selection)}">
${options}
<p><button type="submit">Connect</button></p>
</form>
<p><small>Integration <code>${integrationId}</code>, pending selection.</small></p>`;
}

function form(action: string, serviceUrl: string, handle = '') {
  return `<form method="post" action="${escape(action)}">
<p><label>Handle, DID or e-mail <input name="handle" value="${escape(handle)}" required autocomplete="username"></label></p>
<p><label>App password <input name="appPassword" type="password" required autocomplete="current-password"></label>
<br><small>Made in Bluesky's settings under "App passwords"; never your account's own password.</small></p>
<p><label>Server (for accounts on a self-hosted PDS) <input name="serviceUrl" value="${escape(serviceUrl)}"></label></p>
<p><button type="submit">Connect</button></p>
</form>`;
}

function page(res: Response, status: number, title: string, body: string, goTo?: string) {
  const refresh = goTo ? `<meta http-equiv="refresh" content="0;url=${escape(goTo)}">` : '';
  res
    .status(status)
    .set('cache-control', 'no-store')
    // The state is in the URL: it must not leak to another site through the Referer header.
    .set('referrer-policy', 'no-referrer')
    .set('content-security-policy', "default-src 'none'; form-action 'self'")
    .type('html')
    .send(`<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${escape(title)}</title>${refresh}</head><body><h1>${escape(title)}</h1>${body}</body></html>`);
}

function mastodonForm(action: string, typed = '') {
  return `<form method="post" action="${escape(action)}">
<p><label>Your server <input name="instance" value="${escape(typed)}" placeholder="mastodon.social" required autocomplete="url"></label>
<br><small>Where your account is: mastodon.social, hachyderm.io, or your own. You then sign in there and allow Postwise to post.</small></p>
<p><button type="submit">Continue</button></p>
</form>`;
}

const escape = (text: string) => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
