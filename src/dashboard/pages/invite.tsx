import { useEffect, useRef, useState } from 'preact/hooks';
import { errorFor, formError, type ApiError } from '../api.js';
import { acceptInvitation, readInvitation, type InvitationLink, type Session } from '../auth.js';
import { ErrorMessage, Field, focusFirstInvalid, SubmitButton } from '../components/form.js';
import { Loading, Page } from '../components/page.js';
import { Link } from '../router.js';
import { NewPasswordFields, passwordMismatch } from './new-password.js';

/**
 * Accepting an invitation: a new person sets a name and a password; someone who already has a password (a member of
 * another workspace) confirms with it instead.
 */
export function InvitePage({ token, onSignedIn }: { token: string; onSignedIn: (session: Session) => void }) {
  const [invitation, setInvitation] = useState<InvitationLink>();
  const [linkError, setLinkError] = useState<string>();
  const form = useRef<HTMLFormElement>(null);
  const [name, setName] = useState('');
  const [password, setPassword] = useState('');
  const [confirmation, setConfirmation] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<ApiError>();

  useEffect(() => {
    if (!token) return void setLinkError('This link has no token. Open the whole link you were sent.');
    void readInvitation(token).then((result) => (result.ok ? setInvitation(result.data) : setLinkError(result.error.message)));
  }, [token]);

  const existing = invitation?.hasPassword ?? false;
  const mismatch = existing ? undefined : passwordMismatch(password, confirmation);
  const submit = async (event: Event) => {
    event.preventDefault();
    if (busy) return;
    if (mismatch) return focusFirstInvalid(form.current);
    setBusy(true);
    setError(undefined);
    const result = await acceptInvitation(token, password, existing ? undefined : name.trim());
    setBusy(false);
    if (result.ok) return onSignedIn(result.data);
    setError(result.error);
    focusFirstInvalid(form.current);
  };

  if (linkError) {
    return (
      <Page title="Join a workspace">
        <ErrorMessage message={linkError} />
        <p>
          Ask whoever invited you for a new link, or <Link href="/login">sign in</Link>.
        </p>
      </Page>
    );
  }
  if (!invitation) {
    return (
      <Page title="Join a workspace">
        <Loading what="the invitation" />
      </Page>
    );
  }
  const intro = `${invitation.invitedBy ?? 'A member'} invited ${invitation.email} to ${invitation.workspaceName} on Postwise.`;
  return (
    <Page title={`Join ${invitation.workspaceName}`} intro={intro}>
      <form ref={form} onSubmit={submit} aria-busy={busy ? 'true' : undefined}>
        <input type="hidden" name="username" autoComplete="username" value={invitation.email} />
        {existing ? (
          <Field
            label="Your password"
            type="password"
            name="password"
            value={password}
            onInput={setPassword}
            required
            autoComplete="current-password"
            hint={`${invitation.email} already has a Postwise password: enter it to join.`}
            error={errorFor(error, 'password')}
          />
        ) : (
          <>
            <Field label="Your name" name="name" value={name} onInput={setName} required autoComplete="name" error={errorFor(error, 'name')} />
            <NewPasswordFields
              password={password}
              confirmation={confirmation}
              onPassword={setPassword}
              onConfirmation={setConfirmation}
              error={errorFor(error, 'password')}
              mismatch={mismatch}
            />
          </>
        )}
        <ErrorMessage message={formError(error, ['name', 'password'])} />
        <SubmitButton busy={busy} busyLabel="Joining…">
          Join {invitation.workspaceName}
        </SubmitButton>
      </form>
    </Page>
  );
}
