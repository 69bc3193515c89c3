import type { ComponentChildren } from 'preact';
import { useEffect, useState } from 'preact/hooks';

/**
 * A router of a few lines: the pages are a handful of fixed paths (src/http/dashboard.ts serves the same shell for
 * each), so the History API and a `Link` that uses it are all that is needed.
 */
const listeners = new Set<() => void>();
let navigations = 0;

export function navigate(to: string, { replace = false } = {}) {
  if (replace) history.replaceState(null, '', to);
  else history.pushState(null, '', to);
  navigations++;
  for (const listener of listeners) listener();
}

addEventListener('popstate', () => {
  navigations++;
  for (const listener of listeners) listener();
});

/** How many in-app navigations have happened: a page moves focus to its heading after one, not on first load. */
export const navigationCount = () => navigations;

/** The current URL; re-renders the caller on every navigation. */
export function useLocation(): URL {
  const [, setTick] = useState(0);
  useEffect(() => {
    const listener = () => setTick((tick) => tick + 1);
    listeners.add(listener);
    return () => void listeners.delete(listener);
  }, []);
  return new URL(location.href);
}

/** A path of this site to go back to after signing in; anything else (another origin, `//host`) is ignored. */
export function safeNext(next: string | null): string {
  // Resolved as the browser would (which drops tabs and newlines, so `/\t/evil.example` is another host).
  const url = next?.startsWith('/') ? new URL(next, location.origin) : undefined;
  return url && url.origin === location.origin ? url.pathname + url.search + url.hash : '/channels';
}

interface LinkProps {
  href: string;
  class?: string;
  children: ComponentChildren;
  'aria-current'?: 'page';
}

/** A real link (so it can be opened in a new tab), followed in-app when clicked plainly. */
export function Link({ href, children, ...rest }: LinkProps) {
  const onClick = (event: MouseEvent) => {
    if (event.defaultPrevented || event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return;
    event.preventDefault();
    navigate(href);
  };
  return (
    <a href={href} onClick={onClick} {...rest}>
      {children}
    </a>
  );
}
