import { useEffect, useRef, useState } from 'preact/hooks';
import { api, call, errorFor, formError, type ApiError } from '../api.js';
import { completeSetup, readSetupLink, type Session, type SetupLink } from '../auth.js';
import { ErrorMessage, Field, focusFirstInvalid, SubmitButton } from '../components/form.js';
import { Loading, Page } from '../components/page.js';
import { Link } from '../router.js';
import { NewPasswordFields, passwordMismatch } from './new-password.js';

/**
 * The workspace's time zone, at setup, is the browser's, unless someone chose one already (it is still the default,
 * UTC); changeable on the workspace's settings page. Best effort: a zone the server does not know leaves it as it is.
 */
async function adoptBrowserTimeZone() {
  const browserZone = Intl.DateTimeFormat().resolvedOptions().timeZone;
  const workspace = await call(api.GET('/workspace'));
  if (!browserZone || !workspace.ok || workspace.data.timeZone !== 'UTC' || browserZone === 'UTC') return;
  await call(api.PATCH('/workspace/settings', { body: { timeZone: browserZone } }));
}

/** First run: the owner opens the one-time link the start-up banner printed, and sets a name and a password. */
export function SetupPage({ token, onSignedIn }: { token: string; onSignedIn: (session: Session) => void }) {
  const [link, setLink] = useState<SetupLink>();
  const [linkError, setLinkError] = useState<string>();
  const form = useRef<HTMLFormElement>(null);
  const [name, setName] = useState('');
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const [confirmation, setConfirmation] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<ApiError>();

  useEffect(() => {
    if (!token) return void setLinkError('This link has no token. Open the whole link the start-up banner printed.');
    void readSetupLink(token).then((result) => {
      if (!result.ok) return setLinkError(result.error.message);
      setLink(result.data);
      setName(result.data.name);
      setEmail(result.data.email);
    });
  }, [token]);

  const mismatch = passwordMismatch(password, confirmation);
  const submit = async (event: Event) => {
    event.preventDefault();
    if (busy) return;
    // What the server said was about the last submit: a new one starts without it.
    setError(undefined);
    if (mismatch) return focusFirstInvalid(form.current);
    setBusy(true);
    const result = await completeSetup(token, { name: name.trim(), email: email.trim(), password });
    if (result.ok) await adoptBrowserTimeZone();
    setBusy(false);
    if (result.ok) return onSignedIn(result.data);
    setError(result.error);
    focusFirstInvalid(form.current);
  };

  if (linkError) {
    return (
      <Page title="Set up Postwise">
        <ErrorMessage message={linkError} />
        <p>
          Ask for a new link (<code>npm run admin -- set-password</code>), or <Link href="/login">sign in</Link>.
        </p>
      </Page>
    );
  }
  if (!link) {
    return (
      <Page title="Set up Postwise">
        <Loading what="the setup link" />
      </Page>
    );
  }
  return (
    <Page title="Set up Postwise" intro={`Choose your name, the email you sign in with, and a password for ${link.workspaceName}.`}>
      <form ref={form} onSubmit={submit} aria-busy={busy ? 'true' : undefined}>
        <Field label="Your name" name="name" value={name} onInput={setName} required autoComplete="name" error={errorFor(error, 'name')} />
        <Field label="Email" name="email" type="email" value={email} onInput={setEmail} required autoComplete="username" error={errorFor(error, 'email')} />
        <NewPasswordFields
          password={password}
          confirmation={confirmation}
          onPassword={setPassword}
          onConfirmation={setConfirmation}
          error={errorFor(error, 'password')}
          mismatch={mismatch}
        />
        <ErrorMessage message={formError(error, ['name', 'email', 'password'])} />
        <SubmitButton busy={busy}>Save and sign in</SubmitButton>
      </form>
    </Page>
  );
}
