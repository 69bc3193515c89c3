import { hasDrafts, type Action, type ComposeState, type Dispatch, type Post } from './state.js';

const LIVE: [Action, string][] = [
  ['NEXT_WINDOW', 'Next free posting slot'],
  ['SCHEDULED_TIME', 'At a chosen time'],
  ['PUBLISH_NOW', 'Publish now'],
];

/** What a save may do: for a new post, a draft or one of the three ways live; when editing, keep, or make its drafts live. */
function choices(post: Post | undefined): [Action, string][] {
  if (!post) return [['DRAFT', 'Save as a draft'], ...LIVE];
  const drafts = hasDrafts(post);
  return [['KEEP', drafts ? 'Keep drafts as drafts' : 'Keep the schedule as it is'], ...(drafts ? LIVE : [])];
}

/** When: the choices, and for a chosen time its day and time, read in the workspace's zone (named beside them). */
export function WhenFields({ state, post, timeZone, dispatch }: { state: Pick<ComposeState, 'action' | 'date' | 'time'>; post: Post | undefined; timeZone: string; dispatch: Dispatch }) {
  const { action, date, time } = state;
  return (
    <fieldset class="when">
      <legend>When</legend>
      {choices(post).map(([value, label]) => (
        <label key={value} class="radio">
          <input type="radio" name="when" value={value} checked={action === value} onChange={() => dispatch({ type: 'set', change: { action: value } })} />
          {label}
        </label>
      ))}
      {action === 'SCHEDULED_TIME' && (
        <div class="when-time">
          <p class="hint" id="when-zone">
            In the workspace’s time zone, {timeZone.replaceAll('_', ' ')}.
          </p>
          <label>
            Date
            <input type="date" value={date} onInput={(event) => dispatch({ type: 'set', change: { date: event.currentTarget.value } })} aria-describedby="when-zone" />
          </label>
          <label>
            Time
            <input type="time" value={time} onInput={(event) => dispatch({ type: 'set', change: { time: event.currentTarget.value } })} aria-describedby="when-zone" />
          </label>
        </div>
      )}
      {action === 'NEXT_WINDOW' && <p class="hint">The earliest free slot of the posting windows, for each channel.</p>}
    </fieldset>
  );
}

export function submitLabel(action: Action, editing: boolean): string {
  if (editing) return action === 'KEEP' ? 'Save changes' : action === 'PUBLISH_NOW' ? 'Save and publish now' : 'Save and schedule';
  return { DRAFT: 'Save draft', NEXT_WINDOW: 'Schedule at the next free slot', SCHEDULED_TIME: 'Schedule', PUBLISH_NOW: 'Publish now', KEEP: 'Save' }[action];
}
