import type { ComponentChildren } from 'preact';
import { useId, useState } from 'preact/hooks';
import { SlidersHorizontal } from 'lucide';
import { Icon } from './icon.js';

/**
 * A list's filters behind a "Filters" button that says how many are on: open at first when a filter is on, folded
 * otherwise, so that the list comes first.
 */
export function FilterPanel({ active, children }: { active: number; children: ComponentChildren }) {
  const id = useId();
  const [open, setOpen] = useState(() => active > 0);
  return (
    <div class="filter-panel">
      <button type="button" class="filter-toggle" aria-expanded={open ? 'true' : 'false'} aria-controls={id} onClick={() => setOpen(!open)}>
        <Icon icon={SlidersHorizontal} />
        Filters{active > 0 && <span class="filter-count"> ({active} on)</span>}
      </button>
      <div id={id} class="filter-body" hidden={!open}>
        {children}
      </div>
    </div>
  );
}
