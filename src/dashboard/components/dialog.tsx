import type { ComponentChildren } from 'preact';
import { ErrorMessage } from './form.js';
import { Modal } from './modal.js';
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
 * A confirmation: a Modal (the page behind inert, Escape closes it unless the action is under way, the focus returns to
 * what opened it) whose Cancel button takes the focus first, so that Enter never confirms a destructive action by
 * accident.
 */
export function ConfirmDialog({ open, title, children, confirmLabel, busyLabel = 'Working…', busy, error, fallbackFocus, onConfirm, onCancel }: ConfirmDialogProps) {
  return (
    <Modal open={open} title={title} onClose={onCancel} busy={busy} returnFocus={() => refocusIfLost(fallbackFocus)}>
      <div class="dialog-body">{children}</div>
      <ErrorMessage message={error} />
      <div class="actions">
        <button type="button" data-autofocus onClick={onCancel} disabled={busy}>
          Cancel
        </button>
        <button type="button" class="danger" onClick={onConfirm} disabled={busy} aria-busy={busy ? 'true' : undefined}>
          {busy ? busyLabel : confirmLabel}
        </button>
      </div>
    </Modal>
  );
}
