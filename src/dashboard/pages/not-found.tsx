import { Page } from '../components/page.js';
import { Link } from '../router.js';

export function NotFoundPage() {
  return (
    <Page title="Page not found">
      <p>
        There is no page here. Go to the <Link href="/channels">channels</Link>.
      </p>
    </Page>
  );
}
