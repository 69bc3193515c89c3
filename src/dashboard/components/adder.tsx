import type { ComponentChildren } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import { Plus } from 'lucide';
import { Icon } from './icon.js';

/**
 * An "add" form (a key, an endpoint, a rule, an invitation) folded behind its button, so that the page shows its list
 * first. The button opens it with the focus on its first field; `close` folds it again, the focus back on the button.
 */
export function Adder({ label, children }: { label: string; children: (close: () => void) => ComponentChildren }) {
  const [open, setOpen] = useState(false);
  const panel = useRef<HTMLDivElement>(null);
  const button = useRef<HTMLButtonElement>(null);
  const wasOpen = useRef(false);
  useEffect(() => {
    if (open) panel.current?.querySelector<HTMLElement>('input:not([type=hidden]), select, textarea, button')?.focus();
    else if (wasOpen.current) button.current?.focus();
    wasOpen.current = open;
  }, [open]);
  if (!open) {
    return (
      <button type="button" class="primary adder-button" ref={button} aria-expanded="false" onClick={() => setOpen(true)}>
        <Icon icon={Plus} />
        {label}
      </button>
    );
  }
  return (
    <div class="adder-panel" ref={panel} role="group" aria-label={label}>
      {children(() => setOpen(false))}
      <button type="button" class="link-button adder-cancel" onClick={() => setOpen(false)}>
        Close
      </button>
    </div>
  );
}
