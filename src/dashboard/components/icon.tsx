import { h } from 'preact';
import type { IconNode } from 'lucide';

/**
 * A Lucide icon (`import { Recycle } from 'lucide'`), drawn inline in the text's colour and size. Decorative: the
 * words beside it carry the meaning, so it is hidden from screen readers.
 */
export function Icon({ icon, class: className }: { icon: IconNode; class?: string }) {
  return (
    <svg
      class={className ? `icon ${className}` : 'icon'}
      xmlns="http://www.w3.org/2000/svg"
      viewBox="0 0 24 24"
      fill="none"
      stroke="currentColor"
      stroke-width="2"
      stroke-linecap="round"
      stroke-linejoin="round"
      aria-hidden="true"
      focusable="false"
    >
      {icon.map(([tag, attributes], index) => h(tag, { key: index, ...attributes }))}
    </svg>
  );
}
