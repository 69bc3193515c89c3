import { useRef, useState } from 'preact/hooks';
import type { ApiError } from '../api.js';
import { signIn, type Session } from '../auth.js';
import { ErrorMessage, Field, focusFirstInvalid, SubmitButton } from '../components/form.js';
import { Page } from '../components/page.js';

/** Sign-in. A wrong email and a wrong password get the same answer from the server, which is shown as it is. */
export function LoginPage({ onSignedIn }: { onSignedIn: (session: Session) => void }) {
  const form = useRef<HTMLFormElement>(null);
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<ApiError>();

  const submit = async (event: Event) => {
    event.preventDefault();
    if (busy) return;
    setBusy(true);
    setError(undefined);
    const result = await signIn(email.trim(), password);
    setBusy(false);
    if (result.ok) return onSignedIn(result.data);
    setError(result.error);
    focusFirstInvalid(form.current);
  };

  return (
    <Page title="Sign in">
      <form ref={form} onSubmit={submit} aria-busy={busy ? 'true' : undefined}>
        <Field label="Email" type="email" name="email" value={email} onInput={setEmail} required autoComplete="username" />
        <Field label="Password" type="password" name="password" value={password} onInput={setPassword} required autoComplete="current-password" />
        <ErrorMessage message={error?.message} />
        <SubmitButton busy={busy} busyLabel="Signing in…">
          Sign in
        </SubmitButton>
      </form>
      <p class="hint">
        No password yet? The first start of the service prints a setup link, and an invitation link lets you set one. An operator can also set
        one with <code>npm run admin -- set-password</code>.
      </p>
    </Page>
  );
}
