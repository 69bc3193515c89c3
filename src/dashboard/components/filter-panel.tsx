import type { ComponentChildren } from 'preact';
import { useId, useState } from 'preact/hooks';
import { SlidersHorizontal } from 'lucide';
import { Icon } from './icon.js';

/** Wide enough that the filters sit in a row above the list; narrower, they fold behind their button. */
const WIDE = '(min-width: 56rem)';

/**
 * A list's filters behind a "Filters" button that says how many are on: open at first when a filter is on, or on a
 * wide screen where the page asks for it (`openWhenWide`); folded on a phone, so that the list comes first.
 */
export function FilterPanel({ active, openWhenWide = true, children }: { active: number; openWhenWide?: boolean; children: ComponentChildren }) {
  const id = useId();
  const [open, setOpen] = useState(() => active > 0 || (openWhenWide && window.matchMedia(WIDE).matches));
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
