import type { ComponentChildren } from 'preact';
import { useId, useRef, useState } from 'preact/hooks';
import { inWords } from '../api.js';

interface FieldProps {
  label: string;
  value: string;
  onInput: (value: string) => void;
  /** The server's message about this field, shown under it until the field changes. */
  error?: string | undefined;
  /** The page's own check of the value as it is now ("The two passwords are not the same."), shown while it holds. */
  check?: string | undefined;
  hint?: ComponentChildren;
  type?: 'text' | 'email' | 'password' | 'url' | 'date' | 'time';
  name?: string;
  required?: boolean;
  autoComplete?: string;
  min?: string;
  placeholder?: string;
  readOnly?: boolean;
}

/**
 * The error a control shows: the one given (the server's word on what the control held), until the control is
 * changed, since it was about the value before; a new error shows again, as does the same one once an error was
 * cleared meanwhile (a new submit clears it: `useAction`). Call `changed` from the control's input handler. Every
 * control that shows the server's error under it uses this one hook (Field, the composer's texts), not a copy per page.
 */
export function useFieldError(error: string | undefined): [shown: string | undefined, changed: () => void] {
  const dismissed = useRef<string | undefined>(undefined);
  const [, redraw] = useState(0);
  // Another error than the one dismissed, or none: the next one shows.
  if (dismissed.current !== undefined && dismissed.current !== error) dismissed.current = undefined;
  const changed = () => {
    if (error === undefined || dismissed.current === error) return;
    dismissed.current = error;
    redraw((count) => count + 1);
  };
  return [dismissed.current !== undefined ? undefined : error, changed];
}

/** A labelled input with its hint and its error, tied together for screen readers; the server's error goes when the input changes. */
export function Field({ label, value, onInput, error: given, check, hint, type = 'text', name, required, autoComplete, min, placeholder, readOnly }: FieldProps) {
  const id = useId();
  const [refused, changed] = useFieldError(given);
  const error = [check, refused].filter(Boolean).join(' ') || undefined;
  const describedBy = [hint && `${id}-hint`, error && `${id}-error`].filter(Boolean).join(' ') || undefined;
  return (
    <div class="field">
      <label for={id}>
        {label}
        {!required && !readOnly && <span class="optional"> (optional)</span>}
      </label>
      {hint && (
        <p class="hint" id={`${id}-hint`}>
          {hint}
        </p>
      )}
      <input
        id={id}
        name={name}
        // Preact types each input type with the roles it allows; this field sets no role, so any of its types is fine.
        type={type as 'text'}
        value={value}
        onInput={(event) => {
          changed();
          onInput(event.currentTarget.value);
        }}
        required={required}
        readOnly={readOnly}
        autoComplete={autoComplete}
        min={min}
        placeholder={placeholder}
        aria-invalid={error ? 'true' : undefined}
        aria-describedby={describedBy}
      />
      {error && (
        <p class="field-error" id={`${id}-error`}>
          {error}
        </p>
      )}
    </div>
  );
}

/** A submit button that says what it is doing while the call is under way, and cannot be pressed twice. */
export function SubmitButton({ busy, children, busyLabel = 'Saving…', class: className }: { busy: boolean; children: ComponentChildren; busyLabel?: string; class?: string }) {
  return (
    <button type="submit" class={className ?? 'primary'} disabled={busy} aria-busy={busy ? 'true' : undefined}>
      {busy ? busyLabel : children}
    </button>
  );
}

/** An error for the whole form (or the page), in words (no field path or code): announced when it appears. */
export function ErrorMessage({ message }: { message: string | undefined }) {
  return message ? (
    <p class="error" role="alert">
      {inWords(message)}
    </p>
  ) : null;
}

/** After a failed submit, the first field the server complained about takes the focus, so the keyboard is where the fix is. */
export function focusFirstInvalid(form: HTMLFormElement | null) {
  requestAnimationFrame(() => {
    const target = form?.querySelector<HTMLElement>('[aria-invalid="true"]') ?? form?.querySelector<HTMLElement>('[role="alert"]');
    if (target) {
      if (!target.matches('input, select, textarea, button')) target.tabIndex = -1;
      target.focus();
    }
  });
}

/**
 * Checkboxes choosing ids (tags, channels, approvers): each item labelled, the chosen ids kept in the order ticked.
 * `after` adds a note beside an item's label.
 */
export function IdChoices<T>({ items, idOf, labelOf, chosen, onChange, name, describedBy, after }: {
  items: T[];
  idOf: (item: T) => string;
  labelOf: (item: T) => ComponentChildren;
  chosen: string[];
  onChange: (ids: string[]) => void;
  name?: string;
  describedBy?: string;
  after?: (item: T) => ComponentChildren;
}) {
  return (
    <ul class="tag-choices" aria-describedby={describedBy}>
      {items.map((item) => {
        const id = idOf(item);
        return (
          <li key={id}>
            <label class="checkbox">
              <input
                type="checkbox"
                name={name}
                value={id}
                checked={chosen.includes(id)}
                onChange={(event) => onChange(event.currentTarget.checked ? [...chosen, id] : chosen.filter((other) => other !== id))}
              />
              {labelOf(item)}
            </label>
            {after?.(item)}
          </li>
        );
      })}
    </ul>
  );
}
