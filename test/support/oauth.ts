import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import type { OAuthClientInformationMixed, OAuthClientMetadata, OAuthClientProvider, OAuthTokens } from '@modelcontextprotocol/client';
import type { HttpSession } from './http-session.js';

/**
 * An app's OAuth state as a test keeps it, in memory: what the MCP SDK client's own flow asks of its host (a hosted
 * agent keeps the same in its database). `authorizationUrl` is where the app would send the member's browser.
 */
export class TestAuthProvider implements OAuthClientProvider {
  readonly clientMetadata: OAuthClientMetadata;
  authorizationUrl: URL | undefined;
  lastState: string | undefined;
  private information = new Map<string, OAuthClientInformationMixed>();
  private stored: OAuthTokens | undefined;
  private verifier = '';
  private discovery: unknown;

  constructor(
    readonly redirectUrl: string,
    { clientName = 'Test agent', clientMetadataUrl }: { clientName?: string; clientMetadataUrl?: string } = {},
  ) {
    this.clientMetadata = { client_name: clientName, redirect_uris: [redirectUrl], token_endpoint_auth_method: 'none' };
    if (clientMetadataUrl) (this as { clientMetadataUrl?: string }).clientMetadataUrl = clientMetadataUrl;
  }

  clientInformation(context?: { issuer: string }) {
    return context ? this.information.get(context.issuer) : undefined;
  }
  saveClientInformation(information: OAuthClientInformationMixed, context?: { issuer: string }) {
    if (context) this.information.set(context.issuer, information);
  }
  tokens() {
    return this.stored;
  }
  saveTokens(tokens: OAuthTokens) {
    this.stored = tokens;
  }
  state() {
    return (this.lastState = randomUUID());
  }
  saveDiscoveryState(state: unknown) {
    this.discovery = state;
  }
  discoveryState() {
    return this.discovery as never;
  }
  redirectToAuthorization(url: URL) {
    this.authorizationUrl = url;
  }
  saveCodeVerifier(verifier: string) {
    this.verifier = verifier;
  }
  codeVerifier() {
    return this.verifier;
  }
  invalidateCredentials(scope: string) {
    if (scope === 'tokens' || scope === 'all') this.stored = undefined;
  }
}

/** Where an app on this machine is sent back to: a loopback server that only answers. */
export async function loopbackCallback(): Promise<{ url: string; close(): Promise<void> }> {
  const server = http.createServer((_req, res) => res.end('You may close this tab.'));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/callback`,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

/**
 * A member's browser through the authorization, without the page: follows the redirects with the member's session
 * and the provider's cookies, answers the consent JSON as the page does, and stops at the app's redirect URI (or at
 * the first answer that is neither a redirect nor the consent step).
 */
export async function authorizeOverHttp(
  session: HttpSession,
  startUrl: string,
  decision: { allow?: boolean; scopes?: string[]; postsNeedApproval?: boolean } = {},
  { stopAt = 'http://127.0.0.1' }: { stopAt?: string } = {},
): Promise<{ callback?: URL; consent?: Record<string, any>; status?: number; body?: string }> {
  const jar = new Map<string, string>();
  const cookies = () => [session.cookie, ...[...jar].map(([name, value]) => `${name}=${value}`)].filter(Boolean).join('; ');
  const keep = (answer: Response) => {
    for (const line of answer.headers.getSetCookie()) {
      const [pair] = line.split(';');
      const [name, ...value] = pair!.split('=');
      if (/expires=Thu, 01 Jan 1970/i.test(line)) jar.delete(name!.trim());
      else jar.set(name!.trim(), value.join('='));
    }
  };
  let url = startUrl;
  let consent: Record<string, any> | undefined;
  for (let hop = 0; hop < 10; hop++) {
    if (url.startsWith(stopAt) && !url.startsWith(session.base)) return { callback: new URL(url), consent };
    const answer = await fetch(url, { redirect: 'manual', headers: { cookie: cookies() } });
    keep(answer);
    if (answer.status >= 300 && answer.status < 400) {
      url = new URL(answer.headers.get('location')!, url).href;
      continue;
    }
    const path = new URL(url).pathname;
    if (/^\/authorize\/[^/]+$/.test(path) && answer.ok) {
      const headers = { cookie: cookies(), origin: session.base, 'sec-fetch-site': 'same-origin', 'content-type': 'application/json', 'x-csrf-token': session.csrfToken ?? '' };
      const request = await fetch(`${url}/request`, { headers });
      const read = (await request.json()) as Record<string, any>;
      if (!request.ok) return { status: request.status, body: JSON.stringify(read), consent };
      if (read.redirectTo) {
        url = new URL(read.redirectTo, url).href;
        continue;
      }
      consent = read;
      const scopes = decision.scopes ?? read.scopes.filter((scope: { asked: boolean }) => scope.asked).map((scope: { name: string }) => scope.name);
      const body = JSON.stringify({ allow: decision.allow ?? true, scopes, postsNeedApproval: decision.postsNeedApproval ?? true });
      const answered = await fetch(`${url}/decision`, { method: 'POST', headers, body });
      keep(answered);
      const result = (await answered.json()) as { redirectTo?: string };
      if (!result.redirectTo) return { status: answered.status, body: JSON.stringify(result), consent };
      url = new URL(result.redirectTo, url).href;
      continue;
    }
    return { status: answer.status, body: await answer.text(), consent };
  }
  throw new Error('the authorization went round in circles');
}

/** An HTTPS host on loopback (its certificate is trusted by the test processes: vitest.config.ts), answering `routes`. */
export async function httpsHost(routes: Record<string, (req: http.IncomingMessage, res: http.ServerResponse) => void>) {
  const tls = { key: readFileSync(new URL('tls/key.pem', import.meta.url)), cert: readFileSync(new URL('tls/cert.pem', import.meta.url)) };
  const server = https.createServer(tls, (req, res) => {
    const route = routes[req.url ?? ''];
    if (route) route(req, res);
    else res.writeHead(404).end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return { origin: `https://127.0.0.1:${port}`, host: `127.0.0.1:${port}`, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}
