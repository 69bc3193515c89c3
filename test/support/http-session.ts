import { createAccountLink } from '../../src/auth/sessions.js';
import { call, type TestService } from './service.js';

export const PASSWORD = 'correct horse battery staple';

/** A browser, as far as the server can tell: it keeps the session cookie and sends the page's csrf token. */
export class HttpSession {
  cookie: string | undefined;
  csrfToken: string | undefined;
  constructor(
    readonly base: string,
    readonly origin = base,
  ) {}

  async request(path: string, { method = 'GET', body, headers = {} }: { method?: string; body?: unknown; headers?: Record<string, string> } = {}) {
    const sent: Record<string, string> = { origin: this.origin, 'sec-fetch-site': 'same-origin', ...headers };
    if (this.cookie) sent.cookie = this.cookie;
    if (this.csrfToken && method !== 'GET') sent['x-csrf-token'] ??= this.csrfToken;
    const answer = await call(`${this.base}${path}`, { method, body, headers: sent });
    const id = /postwise_session=([^;]*)/.exec(answer.headers.get('set-cookie') ?? '')?.[1];
    if (id !== undefined) this.cookie = id ? `postwise_session=${id}` : undefined;
    if (answer.json?.csrfToken) this.csrfToken = answer.json.csrfToken;
    return answer;
  }

  signIn(email: string, password = PASSWORD) {
    return this.request('/auth/login', { method: 'POST', body: { email, password } });
  }
}

/** A session of the member `userId` of the workspace, whose password is set through a one-time setup link first. */
export async function signedIn(service: TestService, workspaceId: string, userId: string): Promise<HttpSession> {
  const [user] = await service.service.core.db<{ email: string }[]>`SELECT email FROM users WHERE id = ${userId}`;
  const link = await createAccountLink(service.service.core.db, service.base, { purpose: 'setup', workspaceId, userId, email: user!.email });
  const session = new HttpSession(service.base);
  const answer = await session.request('/auth/setup', { method: 'POST', body: { token: new URL(link.url).searchParams.get('token'), password: PASSWORD } });
  if (answer.status !== 200) throw new Error(`setup: ${answer.status} ${answer.text}`);
  return session;
}
