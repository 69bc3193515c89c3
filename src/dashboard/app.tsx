import { useEffect, useState } from 'preact/hooks';
import { setCsrfToken, whenSignedOut } from './api.js';
import { getSession, signOut, type Session } from './auth.js';
import { FailingCount } from './components/failing-count.js';
import { Layout, PublicLayout } from './components/layout.js';
import { Loading, type PageProps } from './components/page.js';
import { ApiKeysPage } from './pages/api-keys.js';
import { ApprovalsPage } from './pages/approvals.js';
import { AuthorizePage } from './pages/authorize.js';
import { WebhooksPage } from './pages/webhooks.js';
import { CalendarPage } from './pages/calendar.js';
import { ChannelsPage } from './pages/channels.js';
import { ComposePage } from './pages/compose.js';
import { InvitePage } from './pages/invite.js';
import { LoginPage } from './pages/login.js';
import { MembersPage } from './pages/members.js';
import { NotFoundPage } from './pages/not-found.js';
import { PostsPage } from './pages/posts.js';
import { RecyclingPage } from './pages/recycling.js';
import { SetupPage } from './pages/setup.js';
import { UsagePage } from './pages/usage.js';
import { WorkspacePage } from './pages/workspace.js';
import { navigate, safeNext, useLocation } from './router.js';

const PUBLIC_PAGES = new Set(['/login', '/setup', '/invite']);
/** `/posts/{id}`: a post opened in the composer. */
const POST_PATH = /^\/posts\/([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$/;
/** `/authorize/{uid}`: an app asking to connect (OAuth consent), in the focused frame so the member decides on that alone. */
const AUTHORIZE_PATH = /^\/authorize\/([^/]+)$/;

export function App() {
  const url = useLocation();
  const [session, setSession] = useState<Session | null | undefined>(undefined);
  const [loadError, setLoadError] = useState<string>();

  const signedOut = () => {
    setSession(null);
    setCsrfToken('');
  };
  const load = async () => {
    setLoadError(undefined);
    const result = await getSession();
    if (result.ok) setSession(result.data);
    else if (result.error.status === 401) setSession(null);
    else setLoadError(result.error.message);
  };
  useEffect(() => {
    void load();
    whenSignedOut(signedOut);
  }, []);

  const path = url.pathname.replace(/\/+$/, '') || '/';
  const isPublic = PUBLIC_PAGES.has(path);
  // Pages that need a session send the visitor to sign-in, and back here afterwards.
  const mustSignIn = session === null && !isPublic;
  const signedInOnLogin = session && path === '/login';
  useEffect(() => {
    if (mustSignIn) navigate(`/login?next=${encodeURIComponent(url.pathname + url.search)}`, { replace: true });
    else if (signedInOnLogin) navigate(safeNext(url.searchParams.get('next')), { replace: true });
  }, [mustSignIn, signedInOnLogin]);

  if (loadError) {
    return (
      <PublicLayout>
        <h1>Postwise is not answering</h1>
        <p class="error" role="alert">
          {loadError}
        </p>
        <button type="button" onClick={load}>
          Try again
        </button>
      </PublicLayout>
    );
  }
  if (session === undefined || mustSignIn || signedInOnLogin) {
    return (
      <PublicLayout>
        <h1 class="visually-hidden">Postwise</h1>
        <Loading what="the dashboard" />
      </PublicLayout>
    );
  }

  const signedIn = (next: Session, to: string) => {
    setSession(next);
    navigate(to, { replace: true });
  };
  if (isPublic || !session) {
    return (
      <PublicLayout>
        {path === '/setup' ? (
          <SetupPage token={url.searchParams.get('token') ?? ''} onSignedIn={(next) => signedIn(next, '/channels')} />
        ) : path === '/invite' ? (
          <InvitePage token={url.searchParams.get('token') ?? ''} onSignedIn={(next) => signedIn(next, '/channels')} />
        ) : (
          <LoginPage onSignedIn={(next) => signedIn(next, safeNext(url.searchParams.get('next')))} />
        )}
      </PublicLayout>
    );
  }

  const authorizing = AUTHORIZE_PATH.exec(path);
  if (authorizing) {
    return (
      <PublicLayout>
        <AuthorizePage uid={authorizing[1]!} onSignedOut={signedOut} />
      </PublicLayout>
    );
  }

  const onSignOut = async () => {
    const result = await signOut();
    if (!result.ok && result.error.status !== 401) return result.error.message;
    setSession(null);
    setCsrfToken('');
    navigate('/login', { replace: true });
    return undefined;
  };
  const props: PageProps = { session, updateSession: setSession };
  return (
    <Layout session={session} path={path} onSignOut={onSignOut} status={<FailingCount />}>
      {path === '/channels' || path === '/' ? (
        <ChannelsPage {...props} />
      ) : path === '/compose' ? (
        <ComposePage {...props} />
      ) : POST_PATH.test(path) ? (
        <ComposePage {...props} postId={POST_PATH.exec(path)![1]} />
      ) : path === '/posts' ? (
        <PostsPage {...props} />
      ) : path === '/approvals' ? (
        <ApprovalsPage {...props} />
      ) : path === '/recycling' ? (
        <RecyclingPage {...props} />
      ) : path === '/calendar' ? (
        <CalendarPage {...props} />
      ) : path === '/usage' ? (
        <UsagePage {...props} />
      ) : path === '/settings/api-keys' ? (
        <ApiKeysPage {...props} />
      ) : path === '/settings/webhooks' ? (
        <WebhooksPage {...props} />
      ) : path === '/settings/members' ? (
        <MembersPage {...props} />
      ) : path === '/settings/workspace' ? (
        <WorkspacePage {...props} />
      ) : (
        <NotFoundPage />
      )}
    </Layout>
  );
}
