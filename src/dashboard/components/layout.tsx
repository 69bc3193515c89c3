import type { ComponentChildren } from 'preact';
import { useState } from 'preact/hooks';
import type { Session } from '../auth.js';
import { Link } from '../router.js';

const NAVIGATION = [
  { href: '/compose', label: 'Compose' },
  { href: '/calendar', label: 'Calendar' },
  { href: '/posts', label: 'Posts' },
  { href: '/approvals', label: 'Approvals' },
  { href: '/recycling', label: 'Recycling' },
  { href: '/channels', label: 'Channels' },
  { href: '/usage', label: 'Usage' },
  { href: '/settings/api-keys', label: 'Developer API' },
  { href: '/settings/webhooks', label: 'Webhooks' },
  { href: '/settings/members', label: 'Members' },
  { href: '/settings/workspace', label: 'Settings' },
];

interface LayoutProps {
  session: Session;
  path: string;
  onSignOut: () => Promise<string | undefined>;
  children: ComponentChildren;
}

/** The signed-in frame: a skip link, the header with the navigation and sign-out, and the page in <main>. */
export function Layout({ session, path, onSignOut, children }: LayoutProps) {
  const [signingOut, setSigningOut] = useState(false);
  const [error, setError] = useState<string>();
  const signOut = async () => {
    setSigningOut(true);
    setError(await onSignOut());
    setSigningOut(false);
  };
  return (
    <>
      <a class="skip-link" href="#main">
        Skip to the page
      </a>
      <header class="site-header">
        <div class="brand">
          <Link href="/channels" class="brand-name">
            Postwise
          </Link>
          <span class="workspace-name">{session.workspace.name}</span>
        </div>
        <nav aria-label="Main">
          <ul>
            {NAVIGATION.map((item) => (
              <li key={item.href}>
                <Link href={item.href} aria-current={path === item.href ? 'page' : undefined}>
                  {item.label}
                </Link>
              </li>
            ))}
          </ul>
        </nav>
        <div class="account">
          <span class="user-name">{session.user.name || session.user.email}</span>
          <button type="button" onClick={signOut} disabled={signingOut} aria-busy={signingOut ? 'true' : undefined}>
            {signingOut ? 'Signing out…' : 'Sign out'}
          </button>
          {error && (
            <p class="error" role="alert">
              {error}
            </p>
          )}
        </div>
      </header>
      <main id="main" tabIndex={-1}>
        {children}
      </main>
    </>
  );
}

/** The frame of the pages before sign-in: the name, and the page in <main>. */
export function PublicLayout({ children }: { children: ComponentChildren }) {
  return (
    <>
      <header class="site-header public">
        <div class="brand">
          <span class="brand-name">Postwise</span>
        </div>
      </header>
      <main id="main" class="narrow" tabIndex={-1}>
        {children}
      </main>
    </>
  );
}
