import { useEffect, useId, useRef, useState } from 'preact/hooks';
import { callJson, inWords, type ApiError, type Result } from '../api.js';
import { getSession } from '../auth.js';
import { ErrorMessage, focusFirstInvalid, useFieldError } from '../components/form.js';
import { Loading, Page } from '../components/page.js';
import { consentView, decisionBody, initialChoice, isRedirect, sentence, withScope, type Choice, type ConsentRequest, type Redirect, type RequestAnswer } from '../consent.js';
import { useLoad } from '../hooks.js';
import { Link } from '../router.js';

/** The title while there is no app to name yet (loading, an expired request, going back). */
const PLAIN_TITLE = 'Connect an app';

/**
 * The OAuth consent page (`/authorize/:uid`, signed in, in the focused frame without the navigation): which app asks
 * for which workspace, where the member goes back to, what it may do, and whether its posts wait for approval; Allow
 * or Deny. The server (src/http/oauth.ts) answers both calls under this page's own path, and each ends with the
 * browser sent on with `location.assign` (a navigation: the shell's CSP allows no form posted elsewhere).
 *
 * `uid` is the path's segment as it is in the address; `onSignedOut` sends the browser to sign-in and back here.
 */
export function AuthorizePage({ uid, onSignedOut }: { uid: string; onSignedOut: () => void }) {
  const base = `/authorize/${uid}`;
  const answer = useLoad(() => callJson<RequestAnswer>('GET', `${base}/request`), [base]);
  const redirectTo = answer.data && isRedirect(answer.data) ? answer.data.redirectTo : undefined;

  // A request refused before the member is asked (no state, or openid) goes straight back to the app, with its error.
  useEffect(() => {
    if (redirectTo) location.assign(redirectTo);
  }, [redirectTo]);
  // Loading the page without a session goes to sign-in, as every page does.
  useEffect(() => {
    if (answer.error?.status === 401) onSignedOut();
  }, [answer.error]);

  if (answer.error) {
    return (
      <Page title={PLAIN_TITLE}>
        <ErrorMessage message={sentence(answer.error.message)} />
        <p>
          Nothing was connected. Start again from the app, or go to the <Link href="/channels">dashboard</Link>.
        </p>
      </Page>
    );
  }
  if (!answer.data) {
    return (
      <Page title={PLAIN_TITLE}>
        <Loading what="the app’s request" />
      </Page>
    );
  }
  if (isRedirect(answer.data)) {
    return (
      <Page title={PLAIN_TITLE}>
        <p class="loading" role="status">
          <progress aria-label="Going back to the app" /> Postwise cannot accept this request; going back to the app…
        </p>
      </Page>
    );
  }
  return <Consent key={base} base={base} request={answer.data} />;
}

const SIGNED_OUT = 'You are signed out (the session has ended). Sign in again in another tab, then choose here again.';

function Consent({ base, request }: { base: string; request: ConsentRequest }) {
  const id = useId();
  const form = useRef<HTMLFormElement>(null);
  const scopeList = useRef<HTMLFieldSetElement>(null);
  const view = consentView(request);
  const [choice, setChoice] = useState<Choice>(() => initialChoice(request));
  const [sending, setSending] = useState<'allow' | 'deny'>();
  const [error, setError] = useState<ApiError>();
  const [logoFailed, setLogoFailed] = useState(false);
  // Nothing ticked (the server's 400) is the scopes' error, shown in their fieldset until a box changes.
  const [scopeError, scopesChanged] = useFieldError(error?.code === 'VALIDATION_ERROR' ? error.message : undefined);
  const otherError = error && error.code !== 'VALIDATION_ERROR' ? (error.status === 401 ? SIGNED_OUT : sentence(error.message)) : undefined;
  const busy = sending !== undefined;

  const decide = async (allow: boolean) => {
    if (busy) return;
    setSending(allow ? 'allow' : 'deny');
    setError(undefined);
    const result = await sendDecision(`${base}/decision`, decisionBody(allow, choice));
    // The buttons stay disabled while the browser leaves.
    if (result.ok) return location.assign(result.data.redirectTo);
    setSending(undefined);
    setError(result.error);
    if (result.error.code === 'VALIDATION_ERROR') requestAnimationFrame(() => scopeList.current?.querySelector<HTMLInputElement>('input')?.focus());
    else focusFirstInvalid(form.current);
  };
  const submit = (event: Event) => {
    event.preventDefault();
    void decide(true);
  };

  const scopeErrorId = `${id}-scopes-error`;
  const approvalHintId = `${id}-approval-hint`;
  return (
    <Page title={view.title}>
      <div class="consent-app">
        {request.app.logoUri && !logoFailed && (
          <img
            class="consent-logo"
            src={request.app.logoUri}
            alt={`Logo of ${request.app.name}`}
            width={48}
            height={48}
            referrerpolicy="no-referrer"
            onError={() => setLogoFailed(true)}
          />
        )}
        <p class="consent-identity">{view.identity}</p>
      </div>
      {view.warnings.length > 0 && (
        <div class="callout consent-warnings" role="alert">
          {view.warnings.map((warning) => (
            <p key={warning}>{warning}</p>
          ))}
        </div>
      )}
      <ul class="consent-facts">
        <li class="consent-return">{view.returnTo}</li>
        <li>{view.through}</li>
        <li>{view.signedInAs}</li>
      </ul>
      <form ref={form} onSubmit={submit} aria-busy={busy ? 'true' : undefined}>
        <fieldset ref={scopeList} aria-describedby={scopeError ? scopeErrorId : undefined}>
          <legend>What it may do</legend>
          <ul class="scope-choices">
            {request.scopes.map((scope) => {
              const nameId = `${id}-scope-${scope.name.replace(/\W/g, '-')}`;
              return (
                <li key={scope.name}>
                  <label class="checkbox">
                    <input
                      type="checkbox"
                      name="scope"
                      value={scope.name}
                      checked={choice.scopes.includes(scope.name)}
                      aria-describedby={nameId}
                      onChange={(event) => {
                        scopesChanged();
                        setChoice(withScope(request, choice, scope.name, event.currentTarget.checked));
                      }}
                    />
                    {scope.description}
                  </label>
                  <span class="scope-name" id={nameId}>
                    <code>{scope.name}</code>
                    {!scope.asked && ', not asked for by the app'}
                  </span>
                </li>
              );
            })}
          </ul>
          {scopeError && (
            <p class="error" role="alert" id={scopeErrorId}>
              {sentence(inWords(scopeError))}
            </p>
          )}
        </fieldset>
        <div class="field">
          <label class="checkbox">
            <input
              type="checkbox"
              name="postsNeedApproval"
              checked={choice.postsNeedApproval}
              aria-describedby={approvalHintId}
              onChange={(event) => setChoice({ ...choice, postsNeedApproval: event.currentTarget.checked })}
            />
            Posts from this app wait for approval
          </label>
          <p class="hint" id={approvalHintId}>
            Its posts wait on the Approvals page until an approver approves them; only then are they published.
          </p>
        </div>
        <ErrorMessage message={otherError} />
        <div class="actions">
          <button type="submit" class="primary" disabled={busy} aria-busy={sending === 'allow' ? 'true' : undefined}>
            {sending === 'allow' ? 'Allowing…' : 'Allow'}
          </button>
          <button type="button" disabled={busy} aria-busy={sending === 'deny' ? 'true' : undefined} onClick={() => void decide(false)}>
            {sending === 'deny' ? 'Denying…' : 'Deny'}
          </button>
        </div>
      </form>
    </Page>
  );
}

/**
 * The decision, sent once more with a fresh anti-forgery token if the member signed in again meanwhile (in another
 * tab: the cookie is the new session's, the token still the old one's), as the REST client does (api.ts).
 */
async function sendDecision(path: string, body: ReturnType<typeof decisionBody>): Promise<Result<Redirect>> {
  const first = await callJson<Redirect>('POST', path, body);
  if (first.ok || first.error.code !== 'CSRF_REJECTED') return first;
  const session = await getSession(); // keeps the new session's token for the call that follows
  return session.ok ? callJson<Redirect>('POST', path, body) : first;
}
