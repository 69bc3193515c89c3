import type { ComponentChildren } from 'preact';
import { useEffect, useId, useRef } from 'preact/hooks';
import { ErrorMessage } from './form.js';
import { refocusIfLost } from './page.js';

/** What makes a dialog a confirmation: the action's button, and what it says while the action runs. */
export interface Confirmation {
  /** The danger button's words ("Revoke key"). */
  label: string;
  busyLabel?: string;
  /** The server's refusal, shown above the buttons; the dialog stays open. */
  error?: string | undefined;
  onConfirm: () => void;
}

interface DialogProps {
  open: boolean;
  /** The dialog's heading, and its accessible name: for a confirmation, the question. */
  title: string;
  children: ComponentChildren;
  /** Escape, a Close or Cancel button; not while `busy`. */
  onClose: () => void;
  busy?: boolean;
  /**
   * Where the focus goes when the dialog closes and what opened it is gone (its row was removed, the entry moved to
   * another day): the id of a section's heading, or a function that finds the element.
   */
  returnFocus?: string | (() => void);
  /** Changes when the dialog's content changes (a step of it), to put the focus on its first field or button again. */
  step?: string;
  class?: string;
  /**
   * A confirmation: the children say what the action does; under them the refusal if any, and two buttons: Cancel
   * (which has the focus first, so that Enter never confirms a destructive action by accident) and the action's own.
   */
  confirm?: Confirmation | undefined;
}

/**
 * Every dialog of the dashboard, on the native modal <dialog>: the page behind is inert, Tab goes round the dialog,
 * Escape closes it (unless its action is under way), the focus starts on its first field (or button, or the element
 * marked `data-autofocus`) and returns to what opened it afterwards. Its content may change while it is open (data
 * polled in the background) without the focus moving. A confirmation is this dialog with a question and two buttons
 * (`confirm`).
 */
export function Dialog({ open, title, children, onClose, busy = false, returnFocus, step, class: className, confirm }: DialogProps) {
  const dialog = useRef<HTMLDialogElement>(null);
  const opener = useRef<Element | null>(null);
  const titleId = useId();

  useEffect(() => {
    const element = dialog.current;
    if (!element) return;
    if (open && !element.open) {
      opener.current = document.activeElement;
      element.showModal();
    } else if (!open && element.open) {
      element.close();
    }
  }, [open]);

  useEffect(() => {
    if (!open || !dialog.current) return;
    const first =
      dialog.current.querySelector<HTMLElement>('[data-autofocus]') ??
      dialog.current.querySelector<HTMLElement>('input:not(:disabled), select:not(:disabled), button:not(:disabled), a[href]');
    first?.focus();
  }, [open, step]);

  const restoreFocus = () => {
    const target = opener.current;
    if (target instanceof HTMLElement && target.isConnected) target.focus();
    else if (typeof returnFocus === 'string') refocusIfLost(returnFocus);
    else returnFocus?.();
  };

  return (
    <dialog
      ref={dialog}
      class={className}
      aria-labelledby={titleId}
      onKeyDown={keepFocusInside}
      onCancel={(event) => {
        event.preventDefault();
        if (!busy) onClose();
      }}
      onClose={restoreFocus}
    >
      <h2 id={titleId}>{title}</h2>
      {open && (confirm ? <ConfirmBody confirm={confirm} busy={busy} onCancel={onClose}>{children}</ConfirmBody> : children)}
    </dialog>
  );
}

function ConfirmBody({ confirm, busy, onCancel, children }: { confirm: Confirmation; busy: boolean; onCancel: () => void; children: ComponentChildren }) {
  return (
    <>
      <div class="dialog-body">{children}</div>
      <ErrorMessage message={confirm.error} />
      <div class="actions">
        <button type="button" data-autofocus onClick={onCancel} disabled={busy}>
          Cancel
        </button>
        <button type="button" class="danger" onClick={confirm.onConfirm} disabled={busy} aria-busy={busy ? 'true' : undefined}>
          {busy ? (confirm.busyLabel ?? 'Working…') : confirm.label}
        </button>
      </div>
    </>
  );
}

/**
 * Keeps Tab going round an open modal `<dialog>`: the page behind is already inert, but Tab from its last control
 * would reach the browser's own.
 */
function keepFocusInside(event: KeyboardEvent) {
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
