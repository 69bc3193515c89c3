import { useEffect, useId, useRef, useState } from 'preact/hooks';
import { api, call, errorFor, formError, type Schema } from '../api.js';
import { excerpt } from '../calendar/status.js';
import { channelLabel } from '../platforms.js';
import { followInApp } from '../calendar/schedule-dialog.js';
import { Adder } from '../components/adder.js';
import { Dialog } from '../components/dialog.js';
import { ErrorMessage, Field, focusFirstInvalid, IdChoices, SubmitButton, useFieldError } from '../components/form.js';
import { Loading, Page, refocusIfLost, type PageProps } from '../components/page.js';
import { Table, type Column } from '../components/table.js';
import { formatDateTime, formatNumber } from '../format.js';
import { useAction, useLoad } from '../hooks.js';
import { PostingWindowsEditor, type PostingWindow } from './posting-windows.js';

type Rule = Schema<'RecycleRule'>;
type RecycleEvent = Schema<'RecycleEvent'>;
type Integration = Schema<'Integration'>;
type Tag = Schema<'Tag'>;
type Frequency = Rule['frequency'];

const FREQUENCIES: [Frequency, string][] = [
  ['DAILY', 'Every day'],
  ['WEEKLY', 'Every week'],
];
const FREQUENCY_LABELS = Object.fromEntries(FREQUENCIES) as Record<Frequency, string>;
/** The fields the rule's form shows an error under; any other error is the form's. */
const FIELDS = ['name', 'integrationIds', 'tagIds', 'frequency', 'postsPerRun', 'minIntervalDays', 'maxRuns', 'postingWindows', 'linkedinVariations'];
/** A rule of its own starts from these windows when the workspace has none to copy. */
const DEFAULT_WINDOWS: PostingWindow[] = [{ weekdays: [1, 2, 3, 4, 5], times: ['09:00'] }];

const days = (count: number) => `${formatNumber(count)} ${count === 1 ? 'day' : 'days'}`;

/**
 * Recycling: the workspace's recycle rules, which schedule its evergreen posts again once they went out long enough ago
 * (operations/recycle-rules); a rule added, changed in a dialog, disabled or enabled, deleted (confirmed), and what each
 * run did with each post it picked (its recycle events).
 */
export function RecyclingPage(_props: PageProps) {
  const rules = useLoad(() => call(api.GET('/recycle-rules')));
  const channels = useLoad(() => call(api.GET('/integrations')));
  const tags = useLoad(() => call(api.GET('/tags', { params: { query: { limit: 100 } } })));
  const workspace = useLoad(() => call(api.GET('/workspace')));
  const [done, setDone] = useState('');
  const [editing, setEditing] = useState<Rule>();
  const [deleting, setDeleting] = useState<Rule>();
  const [viewing, setViewing] = useState<Rule>();
  const [toggling, setToggling] = useState<string>();
  const change = useAction();
  const remove = useAction();

  const loadError = rules.error ?? channels.error ?? tags.error ?? workspace.error;
  const ready = rules.data && channels.data && tags.data && workspace.data;
  const channelOf = (id: string) => channels.data?.find((channel) => channel.id === id);

  const toggle = async (rule: Rule) => {
    // The button keeps the focus (it is not disabled while the call runs): a second press meanwhile does nothing.
    if (toggling) return;
    setToggling(rule.id);
    setDone('');
    const result = await change.run(() => call(api.PATCH('/recycle-rules/{id}', { params: { path: { id: rule.id } }, body: { enabled: !rule.enabled } })));
    setToggling(undefined);
    if (!result.ok) return;
    await rules.reload();
    setDone(result.data.enabled ? `Enabled the rule “${rule.name}”: it runs now unless it already ran this ${rule.frequency === 'DAILY' ? 'day' : 'week'}.` : `Disabled the rule “${rule.name}”: it does not run until it is enabled.`);
  };
  const confirmDelete = async () => {
    if (!deleting) return;
    const result = await remove.run(() => call(api.DELETE('/recycle-rules/{id}', { params: { path: { id: deleting.id } } })));
    if (!result.ok) return;
    if (viewing?.id === deleting.id) setViewing(undefined);
    setDone(`Deleted the rule “${deleting.name}”. The schedules it made stay, as ordinary schedules.`);
    setDeleting(undefined);
    await rules.reload();
    refocusIfLost('rules');
  };
  // Each cell's content is one element: at a phone's width a cell is a grid of its label and its content.
  const columns: Column<Rule>[] = [
    {
      header: 'Name',
      cell: (rule) => (
        <div>
          {rule.name}
          {rule.tagIds.length > 0 && (
            <span class="hint">
              {' '}
              Only posts tagged {rule.tagIds.map((id) => tags.data!.items.find((tag) => tag.id === id)?.name ?? 'a deleted tag').join(', ')}
            </span>
          )}
        </div>
      ),
    },
    {
      header: 'Channels',
      cell: (rule) => (
        <div>
          <ul class="post-schedules">
            {rule.integrationIds.map((id) => {
              const channel = channelOf(id);
              return <li key={id}>{channel ? channelLabel(channel) : 'A channel no longer connected'}</li>;
            })}
          </ul>
          {rule.linkedinVariations.length > 0 && (
            <span class="hint">{rule.linkedinVariations.length === 1 ? '1 LinkedIn variation' : `${rule.linkedinVariations.length} LinkedIn variations`}</span>
          )}
        </div>
      ),
    },
    {
      header: 'Runs',
      cell: (rule) => (
        <div>
          {FREQUENCY_LABELS[rule.frequency]}, up to {rule.postsPerRun === 1 ? '1 post' : `${formatNumber(rule.postsPerRun)} posts`}
          <span class="hint"> at {rule.postingWindows ? 'its own posting windows' : 'the workspace’s posting windows'}</span>
        </div>
      ),
    },
    {
      header: 'Picks',
      cell: (rule) => (
        <div>
          Evergreen posts out {days(rule.minIntervalDays)} ago or more
          <span class="hint">
            {' '}
            {rule.maxRuns === null ? 'No limit of recycles per post' : `At most ${rule.maxRuns === 1 ? 'once' : `${formatNumber(rule.maxRuns)} times`} per post`}
          </span>
        </div>
      ),
    },
    {
      header: 'Status',
      cell: (rule) => (
        <div>
          <span class={`badge ${rule.enabled ? 'active' : 'revoked'}`}>{rule.enabled ? 'Enabled' : 'Disabled'}</span>
        </div>
      ),
    },
    { header: 'Last run', cell: (rule) => formatDateTime(rule.lastRunAt, 'Not yet') },
    {
      header: 'Actions',
      hiddenHeader: true,
      cell: (rule) => (
        <div class="row-actions">
          <button type="button" onClick={() => setViewing(rule)}>
            Events<span class="visually-hidden"> of {rule.name}</span>
          </button>
          <button type="button" onClick={() => setEditing(rule)}>
            Edit<span class="visually-hidden"> {rule.name}</span>
          </button>
          <button type="button" onClick={() => void toggle(rule)} aria-busy={toggling === rule.id ? 'true' : undefined}>
            {toggling === rule.id ? (rule.enabled ? 'Disabling…' : 'Enabling…') : rule.enabled ? 'Disable' : 'Enable'}
            <span class="visually-hidden"> {rule.name}</span>
          </button>
          <button type="button" class="danger" onClick={() => setDeleting(rule)}>
            Delete<span class="visually-hidden"> {rule.name}</span>
          </button>
        </div>
      ),
    },
  ];

  return (
    <Page
      title="Recycling"
      intro="A recycle rule gives evergreen posts another round: posts marked Evergreen in the composer that went out at least the rule’s minimum interval ago are scheduled again on its channels, at their next free posting slots, a few each day or week. Each recycle counts against the monthly quota like any post."
    >
      <p role="status" class="success">
        {done}
      </p>
      <ErrorMessage message={loadError?.message} />
      {!ready && !loadError && <Loading what="the recycle rules" />}
      {ready && (
        <>
          <section aria-labelledby="rules">
            <h2 id="rules">Rules</h2>
            <Adder label="Add a rule">
              {(close) => (
                <RuleForm
                  channels={channels.data!}
                  tags={tags.data!.items}
                  workspaceWindows={workspace.data!.postingWindows}
                  onSaved={async (rule) => {
                    await rules.reload();
                    close();
                    setDone(
                      rule.enabled
                        ? `Added the rule “${rule.name}”: its first run is under way; see its recycle events.`
                        : `Added the rule “${rule.name}”, disabled: it runs once it is enabled.`,
                    );
                  }}
                />
              )}
            </Adder>
            <ErrorMessage message={change.error?.message} />
            <Table
              caption="Recycle rules of the workspace, oldest first"
              class="recycle-rules"
              columns={columns}
              rows={rules.data!}
              rowKey={(rule) => rule.id}
              rowData={(rule) => ({ 'data-rule-id': rule.id })}
              empty="No recycle rules yet."
            />
          </section>
          {viewing && <Events key={viewing.id} rule={viewing} channels={channels.data!} onRefresh={() => void rules.reload()} />}
          <Dialog open={!!editing} title={`Edit the rule “${editing?.name ?? ''}”`} onClose={() => setEditing(undefined)} class="rule-dialog" returnFocus="rules">
            {editing && (
              <RuleForm
                key={editing.id}
                rule={editing}
                channels={channels.data!}
                tags={tags.data!.items}
                workspaceWindows={workspace.data!.postingWindows}
                onCancel={() => setEditing(undefined)}
                onSaved={async (rule) => {
                  setEditing(undefined);
                  await rules.reload();
                  if (viewing?.id === rule.id) setViewing(rule);
                  setDone(`Saved the rule “${rule.name}”.`);
                }}
              />
            )}
          </Dialog>
        </>
      )}
      <Dialog
        open={!!deleting}
        title="Delete this rule?"
        onClose={() => {
          remove.clearError();
          setDeleting(undefined);
        }}
        busy={remove.busy}
        returnFocus="rules"
        confirm={{ label: 'Delete rule', busyLabel: 'Deleting…', error: remove.error?.message, onConfirm: confirmDelete }}
      >
        <p>
          “{deleting?.name}” recycles nothing more. The schedules it already made stay, as ordinary schedules (delete them on the calendar if you
          wish), and its recycle events stay in the log.
        </p>
      </Dialog>
    </Page>
  );
}

interface RuleFormProps {
  /** The rule being changed; none: a new one. */
  rule?: Rule;
  channels: Integration[];
  tags: Tag[];
  workspaceWindows: PostingWindow[];
  onSaved: (rule: Rule) => Promise<void>;
  onCancel?: () => void;
}

/** A rule's fields: POST /recycle-rules for a new one, PATCH /recycle-rules/{id} to change one. */
function RuleForm({ rule, channels, tags, workspaceWindows, onSaved, onCancel }: RuleFormProps) {
  const form = useRef<HTMLFormElement>(null);
  const id = useId();
  const [name, setName] = useState(rule?.name ?? '');
  const [integrationIds, setIntegrationIds] = useState<string[]>(rule?.integrationIds ?? []);
  const [tagIds, setTagIds] = useState<string[]>(rule?.tagIds ?? []);
  const [frequency, setFrequency] = useState<Frequency>(rule?.frequency ?? 'DAILY');
  const [postsPerRun, setPostsPerRun] = useState(String(rule?.postsPerRun ?? 1));
  const [minIntervalDays, setMinIntervalDays] = useState(String(rule?.minIntervalDays ?? 30));
  const [maxRuns, setMaxRuns] = useState(rule?.maxRuns == null ? '' : String(rule.maxRuns));
  const [ownWindows, setOwnWindows] = useState(!!rule?.postingWindows);
  const [windows, setWindows] = useState<PostingWindow[]>(() => rule?.postingWindows ?? (workspaceWindows.length ? workspaceWindows : DEFAULT_WINDOWS));
  const [variations, setVariations] = useState(rule?.linkedinVariations.join('\n') ?? '');
  const [enabled, setEnabled] = useState(rule?.enabled ?? true);
  const [noChannel, setNoChannel] = useState(false);
  const save = useAction();

  // A channel that cannot be chosen any more (not connected) is still shown while the rule names it.
  const choosable = channels.filter((channel) => channel.connectStatus === 'ACTIVE' || integrationIds.includes(channel.id));
  const linkedIn = channels.some((channel) => channel.platform === 'LINKEDIN' && integrationIds.includes(channel.id));
  // The server's errors about the lists of choices and the variations go once they change (components/form.tsx).
  const [channelsRefused, channelsChanged] = useFieldError(errorFor(save.error, 'integrationIds'));
  const [tagsError, tagsChanged] = useFieldError(errorFor(save.error, 'tagIds'));
  const [variationsError, variationsChanged] = useFieldError(errorFor(save.error, 'linkedinVariations'));
  const channelError = noChannel ? 'Choose at least one channel.' : channelsRefused;

  const submit = async (event: Event) => {
    event.preventDefault();
    if (save.busy) return;
    if (integrationIds.length === 0) {
      save.clearError();
      setNoChannel(true);
      return focusFirstInvalid(form.current);
    }
    setNoChannel(false);
    const body = {
      name: name.trim(),
      integrationIds,
      tagIds,
      frequency,
      postsPerRun: Number(postsPerRun),
      minIntervalDays: Number(minIntervalDays),
      maxRuns: maxRuns.trim() ? Number(maxRuns) : null,
      postingWindows: ownWindows ? windows : null,
      linkedinVariations: variations
        .split('\n')
        .map((line) => line.trim())
        .filter(Boolean),
      enabled,
    };
    const result = await save.run(() =>
      call(rule ? api.PATCH('/recycle-rules/{id}', { params: { path: { id: rule.id } }, body }) : api.POST('/recycle-rules', { body })),
    );
    if (!result.ok) return focusFirstInvalid(form.current);
    if (!rule) {
      setName('');
      setIntegrationIds([]);
      setTagIds([]);
      setFrequency('DAILY');
      setPostsPerRun('1');
      setMinIntervalDays('30');
      setMaxRuns('');
      setOwnWindows(false);
      setVariations('');
      setEnabled(true);
    }
    await onSaved(result.data);
  };

  return (
    <form ref={form} class="rule-form" onSubmit={submit} aria-busy={save.busy ? 'true' : undefined}>
      <Field label="Name" name="name" value={name} onInput={setName} required hint="What the rule is for, for the people who read this page." error={errorFor(save.error, 'name')} />
      <fieldset aria-describedby={channelError ? `${id}-channels-error` : `${id}-channels-hint`} aria-invalid={channelError ? 'true' : undefined} tabIndex={channelError ? -1 : undefined}>
        <legend>Channels</legend>
        <p class="hint" id={`${id}-channels-hint`}>
          A post is recycled to those of these channels it was first published on.
        </p>
        {channelError && (
          <p class="field-error" id={`${id}-channels-error`}>
            {channelError}
          </p>
        )}
        {choosable.length === 0 && <p>No channel yet: connect one on the Channels page first.</p>}
        <IdChoices
          items={choosable}
          idOf={(channel) => channel.id}
          labelOf={channelLabel}
          chosen={integrationIds}
          name="integrationIds"
          onChange={(ids) => {
            setNoChannel(false);
            channelsChanged();
            setIntegrationIds(ids);
          }}
          after={(channel) => channel.tokenStatus !== 'VALID' && channel.tokenStatus !== 'EXPIRING' && <span class="hint"> not connected: skipped until it is</span>}
        />
      </fieldset>
      <fieldset>
        <legend>
          Tags<span class="optional"> (optional)</span>
        </legend>
        <p class="hint" id={`${id}-tags-hint`}>
          Only evergreen posts with one of the tags ticked; none ticked: every evergreen post.
        </p>
        {tags.length === 0 && <p class="hint">No tags yet.</p>}
        <IdChoices
          items={tags}
          idOf={(tag) => tag.id}
          labelOf={(tag) => `Tag: ${tag.name}`}
          chosen={tagIds}
          name="tagIds"
          onChange={(ids) => {
            tagsChanged();
            setTagIds(ids);
          }}
          describedBy={`${id}-tags-hint`}
        />
        {tagsError && <p class="field-error">{tagsError}</p>}
      </fieldset>
      <div class="field">
        <label for={`${id}-frequency`}>How often it runs</label>
        <p class="hint" id={`${id}-frequency-hint`}>
          Once each day or each week of the workspace’s time zone; the first run is as soon as the rule is saved enabled.
        </p>
        <select
          id={`${id}-frequency`}
          name="frequency"
          value={frequency}
          onChange={(event) => setFrequency(event.currentTarget.value as Frequency)}
          aria-describedby={`${id}-frequency-hint`}
        >
          {FREQUENCIES.map(([value, label]) => (
            <option key={value} value={value}>
              {label}
            </option>
          ))}
        </select>
      </div>
      <div class="number-fields">
        <NumberField label="Posts per run" name="postsPerRun" value={postsPerRun} onInput={setPostsPerRun} min={1} max={50} required hint="1 to 50." error={errorFor(save.error, 'postsPerRun')} />
        <NumberField
          label="Minimum interval in days"
          name="minIntervalDays"
          value={minIntervalDays}
          onInput={setMinIntervalDays}
          min={1}
          max={3650}
          required
          hint="Since the post last went out (published or recycled)."
          error={errorFor(save.error, 'minIntervalDays')}
        />
        <NumberField
          label="Recycles per post"
          name="maxRuns"
          value={maxRuns}
          onInput={setMaxRuns}
          min={1}
          max={1000}
          hint="How many times this rule recycles one post; empty: no limit."
          error={errorFor(save.error, 'maxRuns')}
        />
      </div>
      <div class="field">
        <label for={`${id}-variations`}>
          LinkedIn variations<span class="optional"> (optional)</span>
        </label>
        <p class="hint" id={`${id}-variations-hint`}>
          LinkedIn refuses a text it already has: one line per variation, appended in turn (after a blank line) to each LinkedIn recycle. With none, LinkedIn
          channels are skipped.{linkedIn && !variations.trim() ? ' A LinkedIn channel is ticked: add at least one line to recycle to it.' : ''}
        </p>
        <textarea
          id={`${id}-variations`}
          name="linkedinVariations"
          rows={3}
          value={variations}
          onInput={(event) => {
            variationsChanged();
            setVariations(event.currentTarget.value);
          }}
          aria-invalid={variationsError ? 'true' : undefined}
          aria-describedby={[`${id}-variations-hint`, variationsError && `${id}-variations-error`].filter(Boolean).join(' ')}
        />
        {variationsError && (
          <p class="field-error" id={`${id}-variations-error`}>
            {variationsError}
          </p>
        )}
      </div>
      <fieldset>
        <legend>When recycled posts go out</legend>
        <label class="radio">
          <input type="radio" name={`${id}-windows`} checked={!ownWindows} onChange={() => setOwnWindows(false)} />
          Use the workspace’s posting windows
        </label>
        <label class="radio">
          <input type="radio" name={`${id}-windows`} checked={ownWindows} onChange={() => setOwnWindows(true)} />
          Posting windows of this rule’s own
        </label>
        <p class="hint">Each recycled post takes the next free slot of these windows within a week (two for a weekly rule), on each channel.</p>
        {ownWindows && <PostingWindowsEditor windows={windows} onChange={setWindows} error={errorFor(save.error, 'postingWindows')} hint="A recycled post goes out at the next of these times that is free on its channel." />}
      </fieldset>
      <label class="checkbox">
        <input type="checkbox" name="enabled" checked={enabled} onChange={(event) => setEnabled(event.currentTarget.checked)} aria-describedby={`${id}-enabled-hint`} />
        Enabled
      </label>
      <p class="hint" id={`${id}-enabled-hint`}>
        A disabled rule does not run; enabled again, it runs at once unless it already ran this day or week.
      </p>
      <ErrorMessage message={formError(save.error, FIELDS)} />
      <div class="actions">
        {onCancel && (
          <button type="button" onClick={onCancel} disabled={save.busy}>
            Cancel
          </button>
        )}
        <SubmitButton busy={save.busy} busyLabel="Saving…">
          {rule ? 'Save rule' : 'Add rule'}
        </SubmitButton>
      </div>
    </form>
  );
}

interface NumberFieldProps {
  label: string;
  name: string;
  value: string;
  onInput: (value: string) => void;
  min: number;
  max: number;
  required?: boolean;
  hint: string;
  error: string | undefined;
}

/** A whole number, labelled, with its hint and the server's error, as Field is for text. */
function NumberField({ label, name, value, onInput, min, max, required, hint, error: given }: NumberFieldProps) {
  const id = useId();
  const [error, changed] = useFieldError(given);
  return (
    <div class="field">
      <label for={id}>
        {label}
        {!required && <span class="optional"> (optional)</span>}
      </label>
      <p class="hint" id={`${id}-hint`}>
        {hint}
      </p>
      <input
        id={id}
        name={name}
        type="number"
        inputMode="numeric"
        step={1}
        min={min}
        max={max}
        value={value}
        required={required}
        onInput={(event) => {
          changed();
          onInput(event.currentTarget.value);
        }}
        aria-invalid={error ? 'true' : undefined}
        aria-describedby={[`${id}-hint`, error && `${id}-error`].filter(Boolean).join(' ')}
      />
      {error && (
        <p class="field-error" id={`${id}-error`}>
          {error}
        </p>
      )}
    </div>
  );
}

const RESULT_LABELS: Record<RecycleEvent['status'], string> = { RECYCLED: 'Recycled', SKIPPED: 'Skipped' };

/** What a rule did, newest first: each post it picked, the schedules made or why none were, ten at a time. */
function Events({ rule, channels, onRefresh }: { rule: Rule; channels: Integration[]; onRefresh: () => void }) {
  const [items, setItems] = useState<RecycleEvent[]>();
  const [nextCursor, setNextCursor] = useState<string | null>(null);
  /** Each post's text, read once (null: the post is gone). */
  const [texts, setTexts] = useState<Record<string, string | null>>({});
  const asked = useRef(new Set<string>());
  const load = useAction();

  const fetchPage = async (cursor?: string) => {
    if (load.busy) return;
    const result = await load.run(() =>
      call(api.GET('/recycle-events', { params: { query: { ruleId: rule.id, limit: 10, ...(cursor && { cursor }) } } })),
    );
    if (!result.ok) return;
    setItems((list) => (cursor ? [...(list ?? []), ...result.data.items] : result.data.items));
    setNextCursor(result.data.nextCursor);
    if (!result.data.nextCursor) refocusIfLost('events');
  };
  useEffect(() => void fetchPage(), [rule.id]);

  // The events name their posts by id: each post's text is read once, for the rows to say which post it was.
  useEffect(() => {
    const missing = [...new Set((items ?? []).flatMap((event) => (event.postId && !asked.current.has(event.postId) ? [event.postId] : [])))];
    for (const postId of missing) {
      asked.current.add(postId);
      void call(api.GET('/posts/{id}', { params: { path: { id: postId } } })).then((result) =>
        setTexts((known) => ({ ...known, [postId]: result.ok ? result.data.content : result.error.status === 404 ? null : '' })),
      );
    }
  }, [items]);

  const channelName = (integrationId: string) => {
    const channel = channels.find((candidate) => candidate.id === integrationId);
    return channel ? channelLabel(channel) : 'A channel no longer connected';
  };
  const columns: Column<RecycleEvent>[] = [
    {
      header: 'Post',
      cell: (event) => {
        const text = event.postId ? texts[event.postId] : null;
        return (
          <div>
            {!event.postId || text === null ? (
              'A deleted post'
            ) : (
              <a href={`/posts/${event.postId}`} onClick={followInApp}>
                {text ? excerpt(text, 80) : `Post ${event.postId.slice(0, 8)}`}
              </a>
            )}
          </div>
        );
      },
    },
    {
      header: 'When',
      cell: (event) => (
        <div>
          {formatDateTime(event.createdAt)}
          {event.period && <span class="hint"> run of {event.period}</span>}
        </div>
      ),
    },
    {
      header: 'Result',
      cell: (event) => (
        <div>
          <span class={`badge ${event.status === 'RECYCLED' ? 'active' : 'warn'}`}>{RESULT_LABELS[event.status]}</span>
          {event.status === 'RECYCLED' && <span class="hint"> {event.scheduleIds.length === 1 ? '1 schedule made' : `${event.scheduleIds.length} schedules made`}</span>}
          {event.linkedinVariation && <span class="hint"> LinkedIn line: “{event.linkedinVariation}”</span>}
        </div>
      ),
    },
    {
      header: 'Channels left out',
      cell: (event) =>
        event.skipped.length === 0 ? (
          <span class="status-detail">None</span>
        ) : (
          <ul class="post-schedules">
            {event.skipped.map((skip) => (
              <li key={skip.integrationId}>
                <strong>{channelName(skip.integrationId)}</strong>: {skip.reason}
              </li>
            ))}
          </ul>
        ),
    },
  ];

  return (
    <section aria-labelledby="events">
      <h2 id="events">Recycle events of “{rule.name}”</h2>
      <p class="hint">Each post a run picked, newest first: the schedules made, or why a channel was left out.</p>
      <button
        type="button"
        onClick={() => {
          // The rules' "Last run" too: a run that wrote these events may have ended since the page was read.
          onRefresh();
          void fetchPage();
        }}
        aria-busy={load.busy ? 'true' : undefined}
      >
        Refresh<span class="visually-hidden"> the recycle events</span>
      </button>
      <ErrorMessage message={load.error?.message} />
      {!items && !load.error && <Loading what="the recycle events" />}
      {items && (
        <Table
          caption="Recycle events of the rule, newest first"
          class="recycle-events"
          columns={columns}
          rows={items}
          rowKey={(event) => event.id}
          rowData={(event) => ({ 'data-event-id': event.id })}
          empty="No recycle events yet: nothing was picked so far."
        />
      )}
      {nextCursor && (
        <button type="button" onClick={() => void fetchPage(nextCursor)} aria-busy={load.busy ? 'true' : undefined}>
          Older events
        </button>
      )}
    </section>
  );
}
