import { ListPlus } from 'lucide';
import { STATUS_LABELS } from '../calendar/status.js';
import { Icon } from '../components/icon.js';
import { listed, platformsWhere, rules } from '../platforms.js';
import { isEditable, MAX_THREAD_PARTS, partsAt, type Channel, type Dispatch, type Post, type Where } from './state.js';
import { countersOf, TextArea } from './text-field.js';

/**
 * The thread's parts after the post, each counted for the channels that publish it: added and removed while a post is
 * written; when editing, rewritten while not published (a published one is shown as it is).
 */
export function ThreadFields({ thread, post, chosen, dispatch, errorAt, refusalAt }: {
  thread: string[];
  post: Post | undefined;
  chosen: Channel[];
  dispatch: Dispatch;
  errorAt: (where: Where) => string | undefined;
  refusalAt: (where: Where) => string | undefined;
}) {
  const field = (index: number, part: string, channels: Channel[]) => (
    <TextArea label={`Thread part ${index + 2}`} value={part} onInput={(value) => dispatch({ type: 'part', index, value })} rows={3} counters={countersOf(channels, part)} error={errorAt(`part:${index}`)} refusal={refusalAt(`part:${index}`)} />
  );
  // Folded until used: a new post offers its button; a post without parts has nothing to show.
  if (!thread.length) {
    return post ? null : (
      <span>
        <button type="button" class="compose-adder" onClick={() => dispatch({ type: 'addPart' })} aria-describedby="thread-hint">
          <Icon icon={ListPlus} />
          Add a thread part
        </button>
        <span class="visually-hidden" id="thread-hint">{`Replies published under the post, in order: ${whoHasThreads()}.`}</span>
      </span>
    );
  }
  return (
    <fieldset class="compose-section">
      <legend>Thread</legend>
      {(errorAt('thread') || refusalAt('thread')) && <p class="field-error">{[errorAt('thread'), refusalAt('thread')].filter(Boolean).join(' ')}</p>}
      {post ? (
        thread.length ? (
          <>
            <p class="hint">A part is changed here while it is not published; it is removed by deleting its schedule in the calendar.</p>
            {thread.map((part, index) => {
              const schedules = partsAt(post, index + 1);
              return schedules.some(isEditable) ? (
                <div key={index} class="thread-part">
                  {field(index, part, schedules.filter(isEditable).map((schedule) => schedule.integration))}
                </div>
              ) : (
                <p key={index} class="thread-readonly">
                  <strong>Thread part {index + 2}</strong> ({STATUS_LABELS[schedules[0]!.status]}): {part}
                </p>
              );
            })}
          </>
        ) : null
      ) : (
        <>
          <p class="hint">{`Replies published under the post, in order: ${whoHasThreads()}.`}</p>
          {thread.map((part, index) => (
            <div key={index} class="thread-part">
              {field(index, part, chosen.filter((channel) => rules[channel.platform].threads))}
              <button type="button" onClick={() => dispatch({ type: 'removePart', index })}>
                Remove thread part {index + 2}
              </button>
            </div>
          ))}
          {thread.length < MAX_THREAD_PARTS && (
            <button type="button" onClick={() => dispatch({ type: 'addPart' })}>
              Add a thread part
            </button>
          )}
        </>
      )}
    </fieldset>
  );
}

/** "Bluesky only (LinkedIn has no threads)", from the platforms' rules. */
function whoHasThreads(): string {
  const none = platformsWhere((platform) => !platform.threads);
  if (!none.length) return 'on every platform';
  return `${listed(platformsWhere((platform) => platform.threads))} only (${listed(none)} ${none.length === 1 ? 'has' : 'have'} no threads)`;
}
