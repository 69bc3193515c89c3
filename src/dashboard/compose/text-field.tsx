import { useEffect, useId, useRef } from 'preact/hooks';
import { useFieldError } from '../components/form.js';
import { counterState, type CounterSpec } from './state.js';

/**
 * A text field with one counter per channel that publishes it, counted by the platform's own rule (the module the
 * API checks with). A counter warns from 90 % of the limit and turns into an error the moment the text passes it; a
 * polite live region says so when it changes state (not at every key). Under it, what stops the post being sent: the
 * composer's own check (`error`, which follows what is typed) and the API's refusal (`refusal`, gone once it is changed).
 */
export function TextArea({ label, value, onInput, rows, hint, optional, counters, focusOnMount, error, refusal }: { label: string; value: string; onInput: (value: string) => void; rows: number; hint?: string; optional?: boolean; counters: CounterSpec[]; focusOnMount?: boolean; error?: string | undefined; refusal?: string | undefined }) {
  const id = useId();
  const [refused, changed] = useFieldError(refusal);
  const said = [error, refused].filter(Boolean).join(' ') || undefined;
  const field = useRef<HTMLTextAreaElement>(null);
  // Opened by a button ("Add a first comment"): the keyboard goes where the writing is.
  useEffect(() => {
    if (focusOnMount) field.current?.focus();
  }, []);
  const states = counters.map((counter) => counterState(counter));
  const over = states.some((state) => state.tone === 'over');
  const announcement = states
    .filter((state) => state.tone !== 'ok')
    .map((state) => state.announce)
    .join(' ');
  return (
    <div class="field">
      <label for={id}>
        {label}
        {optional && <span class="optional"> (optional)</span>}
      </label>
      {hint && (
        <p class="hint" id={`${id}-hint`}>
          {hint}
        </p>
      )}
      <textarea
        ref={field}
        id={id}
        class="compose-text"
        rows={rows}
        value={value}
        onInput={(event) => {
          changed();
          onInput(event.currentTarget.value);
        }}
        aria-invalid={over || said ? 'true' : undefined}
        aria-describedby={[hint && `${id}-hint`, counters.length && `${id}-counters`, said && `${id}-error`].filter(Boolean).join(' ') || undefined}
      />
      {said && (
        <p class="field-error" id={`${id}-error`}>
          {said}
        </p>
      )}
      {counters.length > 0 && (
        <ul class="counters" id={`${id}-counters`}>
          {states.map((state) => (
            <li key={state.key} class={`counter ${state.tone}`} data-channel={state.name}>
              {state.text}
            </li>
          ))}
        </ul>
      )}
      <p class="visually-hidden" aria-live="polite">
        {announcement}
      </p>
    </div>
  );
}

/**
 * The counters of `text` for each of `channels`; `contextOf`, what a channel counts with it (a Mastodon post's content
 * warning, `countedFor` in state.ts).
 */
export const countersOf = (channels: CounterSpec['channel'][], text: string, as: CounterSpec['as'] = 'post', contextOf?: (channel: CounterSpec['channel']) => CounterSpec['context']): CounterSpec[] =>
  channels.map((channel) => ({ channel, text, as, ...(contextOf && { context: contextOf(channel) }) }));
