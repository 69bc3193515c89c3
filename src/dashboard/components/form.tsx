import type { ComponentChildren } from 'preact';
import { useId } from 'preact/hooks';

interface FieldProps {
  label: string;
  value: string;
  onInput: (value: string) => void;
  /** The server's message about this field, shown under it. */
  error?: string | undefined;
  hint?: ComponentChildren;
  type?: 'text' | 'email' | 'password' | 'url' | 'date' | 'time';
  name?: string;
  required?: boolean;
  autoComplete?: string;
  min?: string;
  placeholder?: string;
  readOnly?: boolean;
}

/** A labelled input with its hint and its error, tied together for screen readers. */
export function Field({ label, value, onInput, error, hint, type = 'text', name, required, autoComplete, min, placeholder, readOnly }: FieldProps) {
  const id = useId();
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
        onInput={(event) => onInput(event.currentTarget.value)}
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

/** An error for the whole form (or the page): announced when it appears. */
export function ErrorMessage({ message }: { message: string | undefined }) {
  return message ? (
    <p class="error" role="alert">
      {message}
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
