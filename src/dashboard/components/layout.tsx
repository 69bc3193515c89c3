import type { ComponentChildren } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import { CalendarDays, ChartColumn, CircleCheck, KeyRound, LogOut, Menu, Radio, Recycle, Rows3, Send, Settings, SquarePen, Users, Webhook, X, type IconNode } from 'lucide';
import type { Session } from '../auth.js';
import { Link } from '../router.js';
import { Icon } from './icon.js';

interface NavigationItem {
  href: string;
  label: string;
  icon: IconNode;
}

/** The pages, grouped by what a person comes to do: publish, look after the workspace, or build on the API. */
const NAVIGATION: { group: string; items: NavigationItem[] }[] = [
  {
    group: 'Publish',
    items: [
      { href: '/compose', label: 'Compose', icon: SquarePen },
      { href: '/calendar', label: 'Calendar', icon: CalendarDays },
      { href: '/posts', label: 'Posts', icon: Rows3 },
      { href: '/approvals', label: 'Approvals', icon: CircleCheck },
      { href: '/recycling', label: 'Recycling', icon: Recycle },
    ],
  },
  {
    group: 'Workspace',
    items: [
      { href: '/channels', label: 'Channels', icon: Radio },
      { href: '/usage', label: 'Usage', icon: ChartColumn },
      { href: '/settings/members', label: 'Members', icon: Users },
      { href: '/settings/workspace', label: 'Settings', icon: Settings },
    ],
  },
  {
    group: 'Developers',
    items: [
      { href: '/settings/api-keys', label: 'Developer API', icon: KeyRound },
      { href: '/settings/webhooks', label: 'Webhooks', icon: Webhook },
    ],
  },
];

/** The page a path belongs to: itself, or the section it is under (`/compose/ID` is Compose's). */
const isCurrent = (href: string, path: string) => path === href || path.startsWith(`${href}/`);

interface LayoutProps {
  session: Session;
  path: string;
  onSignOut: () => Promise<string | undefined>;
  /** Shown in the frame under the navigation, such as how many schedules are failing. */
  status?: ComponentChildren;
  children: ComponentChildren;
}

/**
 * The signed-in frame: a skip link; a sidebar with the wordmark, the grouped navigation and the account (on a phone, a
 * bar whose menu button opens them); and the page in <main>.
 */
export function Layout({ session, path, onSignOut, status, children }: LayoutProps) {
  const [signingOut, setSigningOut] = useState(false);
  const [error, setError] = useState<string>();
  const [menuOpen, setMenuOpen] = useState(false);
  const menuButton = useRef<HTMLButtonElement>(null);
  const signOut = async () => {
    setSigningOut(true);
    setError(await onSignOut());
    setSigningOut(false);
  };
  // Escape closes the phone's menu and gives the focus back to its button. Listened for from the start (the state read
  // through a ref), so that a key pressed the moment the menu opens is not missed.
  const open = useRef(menuOpen);
  open.current = menuOpen;
  useEffect(() => {
    const onKey = (event: KeyboardEvent) => {
      if (event.key !== 'Escape' || !open.current) return;
      setMenuOpen(false);
      menuButton.current?.focus();
    };
    document.addEventListener('keydown', onKey);
    return () => document.removeEventListener('keydown', onKey);
  }, []);
  return (
    <div class="app">
      <a class="skip-link" href="#main">
        Skip to the page
      </a>
      <header class="sidebar" data-open={menuOpen ? 'true' : undefined}>
        <div class="sidebar-top">
          <Wordmark href="/calendar" />
          <button
            type="button"
            class="menu-button"
            ref={menuButton}
            aria-expanded={menuOpen ? 'true' : 'false'}
            aria-controls="site-menu"
            onClick={() => setMenuOpen(!menuOpen)}
          >
            <Icon icon={menuOpen ? X : Menu} />
            <span>Menu</span>
          </button>
        </div>
        <div class="site-menu" id="site-menu">
          <p class="workspace-name">{session.workspace.name}</p>
          <nav aria-label="Main" onClick={(event) => (event.target as Element).closest('a') && setMenuOpen(false)}>
            {NAVIGATION.map(({ group, items }) => (
              <div class="nav-group" key={group}>
                <p class="nav-group-name" id={`nav-${group.toLowerCase()}`}>
                  {group}
                </p>
                <ul aria-labelledby={`nav-${group.toLowerCase()}`}>
                  {items.map((item) => (
                    <li key={item.href}>
                      <Link href={item.href} aria-current={isCurrent(item.href, path) ? 'page' : undefined}>
                        <Icon icon={item.icon} />
                        {item.label}
                      </Link>
                    </li>
                  ))}
                </ul>
              </div>
            ))}
          </nav>
          {status}
          <div class="account">
            <span class="user-name">{session.user.name || session.user.email}</span>
            <button type="button" class="quiet" onClick={signOut} disabled={signingOut} aria-busy={signingOut ? 'true' : undefined}>
              <Icon icon={LogOut} />
              {signingOut ? 'Signing out…' : 'Sign out'}
            </button>
            {error && (
              <p class="error" role="alert">
                {error}
              </p>
            )}
          </div>
        </div>
      </header>
      <main id="main" tabIndex={-1}>
        {children}
      </main>
    </div>
  );
}

/** The mark and the name, as a link home when signed in. */
function Wordmark({ href }: { href?: string }) {
  const mark = (
    <>
      <span class="wordmark-mark">
        <Icon icon={Send} />
      </span>
      Postwise
    </>
  );
  return href ? (
    <Link href={href} class="wordmark">
      {mark}
    </Link>
  ) : (
    <span class="wordmark">{mark}</span>
  );
}

/** The frame of the pages before sign-in: the name, and the page in <main>. */
export function PublicLayout({ children }: { children: ComponentChildren }) {
  return (
    <>
      <header class="public-header">
        <Wordmark />
      </header>
      <main id="main" class="narrow" tabIndex={-1}>
        {children}
      </main>
    </>
  );
}
