import { useId } from 'preact/hooks';
import { useFieldError } from '../components/form.js';

export interface PostingWindow {
  weekdays: number[];
  times: string[];
}

/** ISO weekdays, as the API counts them: 1 is Monday. */
const WEEKDAYS = [
  [1, 'Monday'],
  [2, 'Tuesday'],
  [3, 'Wednesday'],
  [4, 'Thursday'],
  [5, 'Friday'],
  [6, 'Saturday'],
  [7, 'Sunday'],
] as const;
const MAX_WINDOWS = 7;
const MAX_TIMES = 48;

interface EditorProps {
  windows: PostingWindow[];
  onChange: (windows: PostingWindow[]) => void;
  error: string | undefined;
  /** What the windows are for, under the legend. */
  hint?: string;
}

/**
 * The posting windows: groups of weekdays, each with the local times a NEXT_WINDOW post may go out. Plain checkboxes and
 * time inputs, each labelled, so that it works by keyboard and screen reader as any form does.
 */
export function PostingWindowsEditor({ windows, onChange: setWindows, error: given, hint = 'When a post asks for the next window, it goes out at the next of these times that is free.' }: EditorProps) {
  const id = useId();
  // The server's error goes once the windows change (components/form.tsx).
  const [error, changed] = useFieldError(given);
  const onChange = (next: PostingWindow[]) => {
    changed();
    setWindows(next);
  };
  const update = (index: number, change: Partial<PostingWindow>) => onChange(windows.map((group, i) => (i === index ? { ...group, ...change } : group)));
  return (
    <fieldset class="posting-windows" aria-describedby={error ? `${id}-error` : `${id}-hint`} aria-invalid={error ? 'true' : undefined} tabIndex={error ? -1 : undefined}>
      <legend>Posting windows</legend>
      <p class="hint" id={`${id}-hint`}>
        {hint}
      </p>
      {error && (
        <p class="field-error" id={`${id}-error`}>
          {error}
        </p>
      )}
      {windows.map((group, index) => (
        <fieldset class="posting-window" key={index}>
          <legend>Window {index + 1}</legend>
          <div class="weekdays">
            {WEEKDAYS.map(([day, label]) => (
              <label key={day} class="checkbox">
                <input
                  type="checkbox"
                  checked={group.weekdays.includes(day)}
                  onChange={(event) =>
                    update(index, {
                      weekdays: event.currentTarget.checked ? [...group.weekdays, day].sort((a, b) => a - b) : group.weekdays.filter((d) => d !== day),
                    })
                  }
                />
                {label}
              </label>
            ))}
          </div>
          <ul class="times">
            {group.times.map((time, timeIndex) => (
              <li key={timeIndex}>
                <label>
                  <span class="visually-hidden">
                    Window {index + 1}, time {timeIndex + 1}
                  </span>
                  <input
                    type="time"
                    value={time}
                    required
                    onInput={(event) => update(index, { times: group.times.map((t, i) => (i === timeIndex ? event.currentTarget.value : t)) })}
                  />
                </label>
                <button
                  type="button"
                  class="link-button"
                  onClick={() => {
                    update(index, { times: group.times.filter((_, i) => i !== timeIndex) });
                    focusSoon(`${id}-add-time-${index}`);
                  }}
                  disabled={group.times.length <= 1}
                >
                  Remove<span class="visually-hidden"> time {timeIndex + 1} of window {index + 1}</span>
                </button>
              </li>
            ))}
          </ul>
          <div class="actions">
            <button
              type="button"
              id={`${id}-add-time-${index}`}
              onClick={() => update(index, { times: [...group.times, nextTime(group.times)] })}
              disabled={group.times.length >= MAX_TIMES}
            >
              Add a time<span class="visually-hidden"> to window {index + 1}</span>
            </button>
            <button
              type="button"
              class="danger"
              onClick={() => {
                onChange(windows.filter((_, i) => i !== index));
                focusSoon(`${id}-add-window`);
              }}
              disabled={windows.length <= 1}
            >
              Remove window {index + 1}
            </button>
          </div>
        </fieldset>
      ))}
      <button
        type="button"
        id={`${id}-add-window`}
        onClick={() => onChange([...windows, { weekdays: [6, 7], times: ['10:00'] }])}
        disabled={windows.length >= MAX_WINDOWS}
      >
        Add a window
      </button>
    </fieldset>
  );
}

/** A button that removes itself hands the focus on to a neighbour, once the change is drawn. */
function focusSoon(id: string) {
  requestAnimationFrame(() => document.getElementById(id)?.focus());
}

/** An hour after the last time, to start from something sensible. */
function nextTime(times: string[]): string {
  const last = times.at(-1);
  if (!last) return '09:00';
  const hour = (Number(last.slice(0, 2)) + 1) % 24;
  return `${String(hour).padStart(2, '0')}${last.slice(2)}`;
}
