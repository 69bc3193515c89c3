import { useRef, useState } from 'preact/hooks';
import { api, call, errorFor, formError, type Schema } from '../api.js';
import { CopyField } from '../components/copy-field.js';
import { Adder } from '../components/adder.js';
import { Dialog } from '../components/dialog.js';
import { ErrorMessage, Field, focusFirstInvalid, SubmitButton } from '../components/form.js';
import { Loading, Page, refocusIfLost, type PageProps } from '../components/page.js';
import { Table, type Column } from '../components/table.js';
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
  const memberColumns: Column<Member>[] = [
    {
      header: 'Name',
      cell: (member) => (
        <>
          {member.user.name}
          {member.userId === session.user.id && <span class="you"> (you)</span>}
        </>
      ),
    },
    { header: 'Email', cell: (member) => member.user.email },
    { header: 'Role', cell: (member) => (member.role === 'owner' ? 'Owner' : 'Member') },
    { header: 'Member since', cell: (member) => formatDate(member.createdAt) },
    {
      header: 'Actions',
      hiddenHeader: true,
      cell: (member) =>
        owner &&
        member.role !== 'owner' && (
          <button type="button" class="danger" onClick={() => setRemoving(member)}>
            Remove<span class="visually-hidden"> {member.user.name}</span>
          </button>
        ),
    },
  ];
  const invitationColumns: Column<Invitation>[] = [
    { header: 'Email', cell: (invitation) => invitation.email },
    { header: 'Invited by', cell: (invitation) => invitation.invitedBy?.name ?? 'A former member' },
    { header: 'Sent', cell: (invitation) => formatDateTime(invitation.createdAt) },
    { header: 'Expires', cell: (invitation) => formatDateTime(invitation.expiresAt) },
    {
      header: 'Actions',
      hiddenHeader: true,
      cell: (invitation) =>
        owner && (
          <button type="button" class="danger" onClick={() => setWithdrawing(invitation)}>
            Revoke<span class="visually-hidden"> the invitation of {invitation.email}</span>
          </button>
        ),
    },
  ];

  return (
    <Page title="Members" intro={`The people who can use ${session.workspace.name}, in the dashboard and with their own API keys.`}>
      <section aria-labelledby="members">
        <h2 id="members">Members</h2>
        <ErrorMessage message={members.error?.message} />
        {!members.data && !members.error && <Loading what="the members" />}
        {members.data && <Table caption="Members of the workspace" columns={memberColumns} rows={members.data.items} rowKey={(member) => member.userId} />}
      </section>

      <section aria-labelledby="invitations">
        <h2 id="invitations">Pending invitations</h2>
        {owner ? <Adder label="Invite someone">{() => <InviteForm onInvited={() => invitations.reload()} />}</Adder> : <p>Only the workspace's owner can invite and remove members.</p>}
        <ErrorMessage message={invitations.error?.message} />
        {!invitations.data && !invitations.error && <Loading what="the invitations" />}
        {invitations.data && (
          <Table
            caption="Invitations not accepted yet"
            columns={invitationColumns}
            rows={invitations.data.items}
            rowKey={(invitation) => invitation.id}
            empty="No invitation is waiting."
          />
        )}
      </section>

      <Dialog
        open={!!removing}
        title={`Remove ${removing?.user.name ?? ''} from ${session.workspace.name}?`}
        onClose={() => {
          remove.clearError();
          setRemoving(undefined);
        }}
        busy={remove.busy}
        returnFocus="members"
        confirm={{ label: 'Remove member', busyLabel: 'Removing…', error: remove.error?.message, onConfirm: confirmRemove }}
      >
        <p>{removing?.user.email} loses access to this workspace at once:</p>
        <ul>
          <li>every API key they hold for it is revoked, so programs using those keys stop working;</li>
          <li>their signed-in dashboard sessions end.</li>
        </ul>
        <p>They can join again only with a new invitation.</p>
      </Dialog>
      <Dialog
        open={!!withdrawing}
        title={`Revoke the invitation of ${withdrawing?.email ?? ''}?`}
        onClose={() => {
          withdraw.clearError();
          setWithdrawing(undefined);
        }}
        busy={withdraw.busy}
        returnFocus="invitations"
        confirm={{ label: 'Revoke invitation', busyLabel: 'Revoking…', error: withdraw.error?.message, onConfirm: confirmWithdraw }}
      >
        <p>The link stops working at once. You can invite them again later.</p>
      </Dialog>
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
