import { useRef, useState } from 'preact/hooks';
import { api, call, errorFor, formError, type Schema } from '../api.js';
import type { PageProps } from '../app.js';
import { CopyField } from '../components/copy-field.js';
import { ConfirmDialog } from '../components/dialog.js';
import { ErrorMessage, Field, focusFirstInvalid, SubmitButton } from '../components/form.js';
import { Loading, Page, refocusIfLost } from '../components/page.js';
import { formatDate, formatDateTime } from '../format.js';
import { useAction, useLoad } from '../hooks.js';

type Member = Schema<'Member'>;
type Invitation = Schema<'Invitation'>;

/** The workspace's members and pending invitations. No mail is sent: an invitation is a link to hand over. */
export function MembersPage({ session }: PageProps) {
  const members = useLoad(() => call(api.GET('/members')));
  const invitations = useLoad(() => call(api.GET('/invitations')));
  const [removing, setRemoving] = useState<Member>();
  const [withdrawing, setWithdrawing] = useState<Invitation>();
  const remove = useAction();
  const withdraw = useAction();
  // Managing members is the owner's (the API answers FORBIDDEN to anybody else), so only the owner is offered it.
  const owner = session.role === 'owner';

  const confirmRemove = async () => {
    if (!removing) return;
    const result = await remove.run(() => call(api.DELETE('/members/{userId}', { params: { path: { userId: removing.userId } } })));
    if (!result.ok) return;
    setRemoving(undefined);
    await members.reload();
    refocusIfLost('members');
  };
  const confirmWithdraw = async () => {
    if (!withdrawing) return;
    const result = await withdraw.run(() => call(api.DELETE('/invitations/{id}', { params: { path: { id: withdrawing.id } } })));
    if (!result.ok) return;
    setWithdrawing(undefined);
    await invitations.reload();
    refocusIfLost('invitations');
  };

  return (
    <Page title="Members" intro={`The people who can use ${session.workspace.name}, in the dashboard and with their own API keys.`}>
      <section aria-labelledby="members">
        <h2 id="members">Members</h2>
        <ErrorMessage message={members.error?.message} />
        {!members.data && !members.error && <Loading what="the members" />}
        {members.data && (
          <table class="responsive">
            <caption class="visually-hidden">Members of the workspace</caption>
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Email</th>
                <th scope="col">Role</th>
                <th scope="col">Member since</th>
                <th scope="col">
                  <span class="visually-hidden">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {members.data.items.map((member) => (
                <tr key={member.userId}>
                  <th scope="row" data-label="Name">
                    {member.user.name}
                    {member.userId === session.user.id && <span class="you"> (you)</span>}
                  </th>
                  <td data-label="Email">{member.user.email}</td>
                  <td data-label="Role">{member.role === 'owner' ? 'Owner' : 'Member'}</td>
                  <td data-label="Member since">{formatDate(member.createdAt)}</td>
                  <td data-label="Actions">
                    {owner && member.role !== 'owner' && (
                      <button
                        type="button"
                        class="danger"
                        onClick={() => {
                          remove.clearError();
                          setRemoving(member);
                        }}
                      >
                        Remove<span class="visually-hidden"> {member.user.name}</span>
                      </button>
                    )}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </section>

      <section aria-labelledby="invite">
        <h2 id="invite">Invite someone</h2>
        {owner ? <InviteForm onInvited={() => invitations.reload()} /> : <p>Only the workspace's owner can invite and remove members.</p>}
      </section>

      <section aria-labelledby="invitations">
        <h2 id="invitations">Pending invitations</h2>
        <ErrorMessage message={invitations.error?.message} />
        {!invitations.data && !invitations.error && <Loading what="the invitations" />}
        {invitations.data && invitations.data.items.length === 0 && <p>No invitation is waiting.</p>}
        {invitations.data && invitations.data.items.length > 0 && (
          <table class="responsive">
            <caption class="visually-hidden">Invitations not accepted yet</caption>
            <thead>
              <tr>
                <th scope="col">Email</th>
                <th scope="col">Invited by</th>
                <th scope="col">Sent</th>
                <th scope="col">Expires</th>
                <th scope="col">
                  <span class="visually-hidden">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {invitations.data.items.map((invitation) => (
                <tr key={invitation.id}>
                  <th scope="row" data-label="Email">
                    {invitation.email}
                  </th>
                  <td data-label="Invited by">{invitation.invitedBy?.name ?? 'A former member'}</td>
                  <td data-label="Sent">{formatDateTime(invitation.createdAt)}</td>
                  <td data-label="Expires">{formatDateTime(invitation.expiresAt)}</td>
                  <td data-label="Actions">
                    {owner && (
                      <button
                        type="button"
                        class="danger"
                        onClick={() => {
                          withdraw.clearError();
                          setWithdrawing(invitation);
                        }}
                      >
                        Revoke<span class="visually-hidden"> the invitation of {invitation.email}</span>
                      </button>
                    )}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </section>

      <ConfirmDialog
        open={!!removing}
        title={`Remove ${removing?.user.name ?? ''} from ${session.workspace.name}?`}
        confirmLabel="Remove member"
        busyLabel="Removing…"
        busy={remove.busy}
        error={remove.error?.message}
        fallbackFocus="members"
        onConfirm={confirmRemove}
        onCancel={() => setRemoving(undefined)}
      >
        <p>{removing?.user.email} loses access to this workspace at once:</p>
        <ul>
          <li>every API key they hold for it is revoked, so programs using those keys stop working;</li>
          <li>their signed-in dashboard sessions end.</li>
        </ul>
        <p>They can join again only with a new invitation.</p>
      </ConfirmDialog>
      <ConfirmDialog
        open={!!withdrawing}
        title={`Revoke the invitation of ${withdrawing?.email ?? ''}?`}
        confirmLabel="Revoke invitation"
        busyLabel="Revoking…"
        busy={withdraw.busy}
        error={withdraw.error?.message}
        fallbackFocus="invitations"
        onConfirm={confirmWithdraw}
        onCancel={() => setWithdrawing(undefined)}
      >
        <p>The link stops working at once. You can invite them again later.</p>
      </ConfirmDialog>
    </Page>
  );
}

function InviteForm({ onInvited }: { onInvited: () => Promise<void> }) {
  const form = useRef<HTMLFormElement>(null);
  const [email, setEmail] = useState('');
  const [link, setLink] = useState<{ email: string; url: string }>();
  const invite = useAction();

  const submit = async (event: Event) => {
    event.preventDefault();
    if (invite.busy) return;
    const result = await invite.run(() => call(api.POST('/invitations', { body: { email: email.trim() } })));
    if (!result.ok) return focusFirstInvalid(form.current);
    setLink({ email: result.data.email, url: result.data.url });
    setEmail('');
    await onInvited();
  };

  return (
    <>
      <form ref={form} onSubmit={submit} aria-busy={invite.busy ? 'true' : undefined}>
        <Field label="Email" type="email" name="email" value={email} onInput={setEmail} required autoComplete="off" error={errorFor(invite.error, 'email')} />
        <ErrorMessage message={formError(invite.error, ['email'])} />
        <SubmitButton busy={invite.busy} busyLabel="Inviting…">
          Invite
        </SubmitButton>
      </form>
      {link && (
        <div class="callout">
          <p class="warning">
            <strong>Postwise sends no email: send this link to {link.email} yourself.</strong> It works once, for 7 days, and is not shown again.
          </p>
          <CopyField label={`Invitation link for ${link.email}`} value={link.url} autoFocus />
        </div>
      )}
    </>
  );
}
