import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { api, call, errorFor, errorPartsFor, formError, type Schema } from '../api.js';
import { ErrorMessage, Field, focusFirstInvalid, IdChoices, SubmitButton, useFieldError } from '../components/form.js';
import { LanguagePicker } from '../components/language-picker.js';
import { Loading, Page, type PageProps } from '../components/page.js';
import { useAction, useLoad } from '../hooks.js';
import { listed, platformsWhere } from '../platforms.js';
import { PostingWindowsEditor, type PostingWindow } from './posting-windows.js';

type Workspace = Schema<'Workspace'>;

const FIELDS = ['name', 'timeZone', 'postingWindows', 'languages', 'postsNeedApproval', 'approverIds'];
type Member = Schema<'Member'>;

/** The workspace's name, time zone, posting windows (the slots NEXT_WINDOW fills), default languages and approval rule. */
export function WorkspacePage({ session, updateSession }: PageProps) {
  const workspace = useLoad(() => call(api.GET('/workspace')));
  const members = useLoad(() => call(api.GET('/members')));
  return (
    <Page title="Workspace settings">
      {session.role !== 'owner' && <p>Only the workspace's owner can change these settings.</p>}
      <ErrorMessage message={workspace.error?.message ?? members.error?.message} />
      {(!workspace.data || !members.data) && !workspace.error && !members.error && <Loading what="the settings" />}
      {workspace.data && members.data && (
        <SettingsForm
          workspace={workspace.data}
          members={members.data.items}
          readOnly={session.role !== 'owner'}
          onSaved={(name) => updateSession({ ...session, workspace: { ...session.workspace, name } })}
        />
      )}
    </Page>
  );
}

function SettingsForm({ workspace, members, readOnly, onSaved }: { workspace: Workspace; members: Member[]; readOnly: boolean; onSaved: (name: string) => void }) {
  const form = useRef<HTMLFormElement>(null);
  const [name, setName] = useState(workspace.name);
  const [timeZone, setTimeZone] = useState(workspace.timeZone);
  const [windows, setWindows] = useState<PostingWindow[]>(workspace.postingWindows);
  const [languages, setLanguages] = useState(workspace.languages);
  const [needApproval, setNeedApproval] = useState(workspace.postsNeedApproval);
  const [approverIds, setApproverIds] = useState(workspace.approverIds);
  const [saved, setSaved] = useState('');
  const save = useAction();
  const [approversError, approversChanged] = useFieldError(errorFor(save.error, 'approverIds'));
  const zones = useMemo(() => timeZones(workspace.timeZone), [workspace.timeZone]);

  // A change after a save makes "Saved" untrue.
  useEffect(() => setSaved(''), [name, timeZone, windows, languages, needApproval, approverIds]);

  const submit = async (event: Event) => {
    event.preventDefault();
    if (save.busy) return;
    const body = {
      name: name.trim(),
      timeZone,
      postingWindows: windows,
      languages,
      postsNeedApproval: needApproval,
      approverIds,
    };
    const result = await save.run(() => call(api.PATCH('/workspace/settings', { body })));
    if (!result.ok) return focusFirstInvalid(form.current);
    onSaved(result.data.name);
    setSaved('Settings saved.');
  };

  return (
    <form ref={form} onSubmit={submit} aria-busy={save.busy ? 'true' : undefined}>
      {/* A member sees the settings; a disabled fieldset keeps every control from changing them. */}
      <fieldset class="bare" disabled={readOnly}>
        <Field label="Workspace name" name="name" value={name} onInput={setName} required error={errorFor(save.error, 'name')} />
        <TimeZoneSelect value={timeZone} zones={zones} onChange={setTimeZone} error={errorFor(save.error, 'timeZone')} />
        <PostingWindowsEditor windows={windows} onChange={setWindows} error={errorFor(save.error, 'postingWindows')} />
        <LanguagePicker
          legend={`Default languages of ${listed(platformsWhere((platform) => platform.languages))} posts`}
          hint="Up to 3, named in your browser's language and saved as language tags. With none, Postwise detects each post's language."
          value={languages}
          onChange={setLanguages}
          max={3}
          error={errorPartsFor(save.error, 'languages')}
        />
        <fieldset>
          <legend>Approval</legend>
          <label class="checkbox">
            <input type="checkbox" name="postsNeedApproval" checked={needApproval} onChange={(event) => setNeedApproval(event.currentTarget.checked)} />
            Every live post needs approval before it publishes
          </label>
          <p class="hint">
            Posts wait on the Approvals page until an approver approves them. A single API key can require approval on its own (Developer API).
          </p>
          <p class="hint" id="approvers-hint">
            Who approves: the members ticked here, or the owners when none is. Owners may always approve.
          </p>
          <IdChoices
            items={members}
            idOf={(member) => member.userId}
            labelOf={(member) => `Approver: ${member.user.name}`}
            chosen={approverIds}
            name="approverIds"
            onChange={(ids) => {
              approversChanged();
              setApproverIds(ids);
            }}
            describedBy="approvers-hint"
          />
          {approversError && <p class="field-error">{approversError}</p>}
        </fieldset>
        <ErrorMessage message={formError(save.error, FIELDS)} />
        <SubmitButton busy={save.busy}>Save settings</SubmitButton>
      </fieldset>
      <p role="status" class="success">
        {saved}
      </p>
    </form>
  );
}

function TimeZoneSelect({ value, zones, onChange, error: given }: { value: string; zones: string[]; onChange: (zone: string) => void; error: string | undefined }) {
  const id = 'time-zone';
  const [error, changed] = useFieldError(given);
  return (
    <div class="field">
      <label for={id}>Time zone</label>
      <p class="hint" id={`${id}-hint`}>
        Posting windows and calendar days are read in this zone.
      </p>
      <select
        id={id}
        name="timeZone"
        value={value}
        onChange={(event) => {
          changed();
          onChange(event.currentTarget.value);
        }}
        aria-invalid={error ? 'true' : undefined}
        aria-describedby={error ? `${id}-hint ${id}-error` : `${id}-hint`}
      >
        {zones.map((zone) => (
          <option key={zone} value={zone}>
            {zone.replaceAll('_', ' ')}
          </option>
        ))}
      </select>
      {error && (
        <p class="field-error" id={`${id}-error`}>
          {error}
        </p>
      )}
    </div>
  );
}

/** The browser's IANA zones, with UTC and the current one even where the browser's list leaves them out. */
function timeZones(current: string): string[] {
  const known = typeof Intl.supportedValuesOf === 'function' ? Intl.supportedValuesOf('timeZone') : [];
  return [...new Set(['UTC', current, ...known])].sort((a, b) => (a === 'UTC' ? -1 : b === 'UTC' ? 1 : a.localeCompare(b)));
}
