import { useEffect, useId, useRef, useState } from 'preact/hooks';

interface CopyFieldProps {
  label: string;
  value: string;
  /** Several lines (a configuration): a textarea rather than an input. */
  multiline?: boolean;
  hint?: string;
  /** Where the focus goes when the value appears (a new key, an invitation link). */
  autoFocus?: boolean;
}

/** A read-only value with a Copy button; says "Copied" (to screen readers too) when it has been. */
export function CopyField({ label, value, multiline, hint, autoFocus }: CopyFieldProps) {
  const id = useId();
  const field = useRef<HTMLInputElement & HTMLTextAreaElement>(null);
  const [status, setStatus] = useState('');
  useEffect(() => {
    if (autoFocus) field.current?.focus();
  }, [autoFocus]);

  const copy = async () => {
    try {
      await navigator.clipboard.writeText(value);
      setStatus('Copied to the clipboard.');
    } catch {
      // No clipboard API (a page not served over HTTPS or from localhost): select the text for Ctrl+C instead.
      field.current?.focus();
      field.current?.select();
      setStatus('Selected: press Ctrl+C (⌘C on a Mac) to copy.');
    }
  };

  const common = {
    id,
    ref: field,
    readOnly: true,
    value,
    spellcheck: false,
    onFocus: (event: FocusEvent) => (event.currentTarget as HTMLInputElement).select(),
    'aria-describedby': hint ? `${id}-hint` : undefined,
  };
  return (
    <div class="field copy-field">
      <label for={id}>{label}</label>
      {hint && (
        <p class="hint" id={`${id}-hint`}>
          {hint}
        </p>
      )}
      <div class="copy-row">
        {multiline ? <textarea {...common} rows={value.split('\n').length} /> : <input type="text" {...common} />}
        <button type="button" onClick={copy}>
          Copy<span class="visually-hidden"> {label}</span>
        </button>
      </div>
      <p class="copy-status" role="status">
        {status}
      </p>
    </div>
  );
}
