import type { ComponentChildren } from 'preact';
import { useEffect, useId, useRef } from 'preact/hooks';
import { ErrorMessage } from './form.js';
import { refocusIfLost } from './page.js';

interface ConfirmDialogProps {
  open: boolean;
  title: string;
  children: ComponentChildren;
  confirmLabel: string;
  busyLabel?: string;
  busy: boolean;
  error?: string | undefined;
  /** The id of what takes the focus when what opened the dialog is gone (its row was removed): a section's heading. */
  fallbackFocus: string;
  onConfirm: () => void;
  onCancel: () => void;
}

/**
 * A confirmation on the native modal <dialog>: the page behind it is inert (so the focus stays inside), Escape closes
 * it (unless the action is under way), and the focus returns to what opened it. The Cancel button takes the focus
 * first, so that Enter never confirms a destructive action by accident.
 */
export function ConfirmDialog({ open, title, children, confirmLabel, busyLabel = 'Working…', busy, error, fallbackFocus, onConfirm, onCancel }: ConfirmDialogProps) {
  const dialog = useRef<HTMLDialogElement>(null);
  const cancel = useRef<HTMLButtonElement>(null);
  const opener = useRef<Element | null>(null);
  const titleId = useId();

  useEffect(() => {
    const element = dialog.current;
    if (!element) return;
    if (open && !element.open) {
      opener.current = document.activeElement;
      element.showModal();
      cancel.current?.focus();
    } else if (!open && element.open) {
      element.close();
    }
  }, [open]);

  const returnFocus = () => {
    const target = opener.current;
    if (target instanceof HTMLElement && target.isConnected) target.focus();
    else refocusIfLost(fallbackFocus);
  };

  return (
    <dialog
      ref={dialog}
      aria-labelledby={titleId}
      onKeyDown={keepFocusInside}
      onCancel={(event) => {
        event.preventDefault();
        if (!busy) onCancel();
      }}
      onClose={returnFocus}
    >
      <h2 id={titleId}>{title}</h2>
      <div class="dialog-body">{children}</div>
      <ErrorMessage message={error} />
      <div class="actions">
        <button type="button" ref={cancel} onClick={onCancel} disabled={busy}>
          Cancel
        </button>
        <button type="button" class="danger" onClick={onConfirm} disabled={busy} aria-busy={busy ? 'true' : undefined}>
          {busy ? busyLabel : confirmLabel}
        </button>
      </div>
    </dialog>
  );
}

/**
 * Keeps Tab going round an open modal `<dialog>`: the page behind is already inert, but Tab from its last control
 * would reach the browser's own. One handler for every dialog of the dashboard.
 */
export function keepFocusInside(event: KeyboardEvent) {
  const dialog = event.currentTarget as HTMLElement | null;
  if (event.key !== 'Tab' || !dialog) return;
  const focusable = [...dialog.querySelectorAll<HTMLElement>('button:not(:disabled), a[href], input:not(:disabled), select:not(:disabled), [tabindex="0"]')];
  const first = focusable[0];
  const last = focusable.at(-1);
  if (!first || !last) return;
  if (event.shiftKey && document.activeElement === first) {
    event.preventDefault();
    last.focus();
  } else if (!event.shiftKey && document.activeElement === last) {
    event.preventDefault();
    first.focus();
  }
}
