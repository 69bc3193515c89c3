import type { ComponentChildren } from 'preact';
import { useEffect, useRef } from 'preact/hooks';
import type { Session } from '../auth.js';
import { navigationCount } from '../router.js';

/** What a page of the signed-in frame receives (from app.tsx, which routes to the pages). */
export interface PageProps {
  session: Session;
  /** After a change the header shows (the workspace's name). */
  updateSession: (session: Session) => void;
}

/**
 * A page's title and heading: sets the document title, and after an in-app navigation moves the focus to the heading
 * so that a screen reader announces the new page and Tab starts from its top.
 */
export function Page({ title, children, intro }: { title: string; children: ComponentChildren; intro?: ComponentChildren }) {
  const heading = useRef<HTMLHeadingElement>(null);
  useEffect(() => {
    document.title = `${title} · Postwise`;
    if (navigationCount() > 0) heading.current?.focus();
  }, [title]);
  return (
    <>
      <h1 ref={heading} tabIndex={-1}>
        {title}
      </h1>
      {intro && <p class="intro">{intro}</p>}
      {children}
    </>
  );
}

/**
 * After an action removed the element that had the focus (a row's button, a removed row), the focus goes to the
 * section's heading (`id`) rather than being lost to the top of the document.
 */
export function refocusIfLost(id: string) {
  requestAnimationFrame(() => {
    const active = document.activeElement;
    if (active && active !== document.body && active.isConnected) return;
    const target = document.getElementById(id);
    if (!target) return;
    target.tabIndex = -1;
    target.focus();
  });
}

/** What a page shows while its data loads, or when it could not. */
export function Loading({ what }: { what: string }) {
  return (
    <p class="loading" role="status">
      <progress aria-label={`Loading ${what}`} /> Loading {what}…
    </p>
  );
}
