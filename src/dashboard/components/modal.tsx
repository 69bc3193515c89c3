import type { ComponentChildren } from 'preact';
import { useEffect, useId, useRef } from 'preact/hooks';

interface ModalProps {
  open: boolean;
  title: string;
  children: ComponentChildren;
  /** Escape or a Close button; not while `busy`. */
  onClose: () => void;
  busy?: boolean;
  /** Where the focus goes when the dialog closes and what opened it is gone (the entry moved to another day). */
  returnFocus?: () => void;
  /** Changes when the dialog's content changes (a step of it), to put the focus on its first field or button again. */
  step?: string;
  class?: string;
}

/**
 * A dialog on the native modal <dialog> (as ConfirmDialog, for more than a yes or no): the page behind is inert, Tab
 * goes round the dialog, Escape closes it, the focus starts on its first field (or button) and returns to what opened
 * it afterwards. Its content may change while it is open (data polled in the background) without the focus moving.
 */
export function Modal({ open, title, children, onClose, busy = false, returnFocus, step, class: className }: ModalProps) {
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
      {open && children}
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
