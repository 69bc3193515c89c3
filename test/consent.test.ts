import { describe, expect, it } from 'vitest';
import { consentView, decisionBody, initialChoice, isRedirect, sentence, withScope, type ConsentRequest, type ScopeName } from '../src/dashboard/consent.js';
import { SCOPE_NAMES, SCOPES } from '../src/oauth/scopes.js';

// The consent page's words and choices apart from its view (src/dashboard/consent.ts): no browser, no server.

/** A request as GET /authorize/:uid/request answers it (src/http/oauth.ts), the app asking to read and write posts. */
const request = (change: Partial<ConsentRequest> = {}, asked: ScopeName[] = ['posts:read', 'posts:write']): ConsentRequest => ({
  app: { name: 'Claude', logoUri: 'https://claude.ai/logo.png', clientUri: 'https://claude.ai', kind: 'metadata-document', documentHost: 'claude.ai' },
  redirectHost: 'claude.ai',
  warnings: [],
  workspace: { name: 'Acme' },
  member: { name: 'Ada', email: 'ada@example.com' },
  resource: 'mcp',
  scopes: SCOPE_NAMES.map((name) => ({ name, description: SCOPES[name], asked: asked.includes(name) })),
  ...change,
});

describe('the consent page', () => {
  it('tells a refusal to go back from a request to show', () => {
    expect(isRedirect({ redirectTo: 'https://claude.ai/callback?error=invalid_request' })).toBe(true);
    expect(isRedirect(request())).toBe(false);
  });

  it('names the app, the workspace, where the member goes back and who is signed in', () => {
    expect(consentView(request())).toEqual({
      title: 'Connect Claude to Acme?',
      identity: 'Identified by claude.ai.',
      returnTo: 'After you allow it, you go back to claude.ai.',
      signedInAs: 'Signed in as Ada (ada@example.com).',
      through: 'It asks to use the workspace through MCP (the tools an AI agent calls), acting as you.',
      warnings: [],
    });
    expect(consentView(request({ resource: 'api', member: { name: '', email: 'ada@example.com' } }))).toMatchObject({
      signedInAs: 'Signed in as ada@example.com.',
      through: 'It asks to use the workspace through the REST API, acting as you.',
    });
  });

  it('says how Postwise knows the app', () => {
    const app = request().app;
    expect(consentView(request({ app: { ...app, kind: 'registered', documentHost: null } })).identity).toBe('Registered itself just now.');
    expect(consentView(request({ app: { ...app, kind: 'command-line', documentHost: null } })).identity).toBe('The Postwise command line.');
  });

  it('shows each warning as a sentence', () => {
    const warnings = ['This app has never been connected to this workspace before. Make sure you trust it.', 'it sends you back to 127.0.0.1:7000'];
    expect(consentView(request({ warnings })).warnings).toEqual([warnings[0], 'It sends you back to 127.0.0.1:7000.']);
  });

  it('opens with what the app asked for ticked and its posts waiting for approval', () => {
    expect(initialChoice(request())).toEqual({ scopes: ['posts:read', 'posts:write'], postsNeedApproval: true });
    expect(initialChoice(request({}, [])).scopes).toEqual([]);
  });

  it('keeps the ticked scopes in the order the page lists them', () => {
    const asked = request({}, ['posts:write']);
    let choice = initialChoice(asked);
    choice = withScope(asked, choice, 'channels:write', true);
    choice = withScope(asked, choice, 'posts:read', true);
    expect(choice.scopes).toEqual(['posts:read', 'posts:write', 'channels:write']);
    choice = withScope(asked, choice, 'posts:write', false);
    expect(choice.scopes).toEqual(['posts:read', 'channels:write']);
    expect(withScope(asked, choice, 'posts:read', true).scopes).toEqual(['posts:read', 'channels:write']);
  });

  it('sends the choice when allowed, and nothing when denied', () => {
    const choice = { scopes: ['posts:read'] as ScopeName[], postsNeedApproval: false };
    expect(decisionBody(true, choice)).toEqual({ allow: true, scopes: ['posts:read'], postsNeedApproval: false });
    expect(decisionBody(false, choice)).toEqual({ allow: false, scopes: [], postsNeedApproval: false });
  });

  it('ends the server’s messages as sentences', () => {
    expect(sentence('This request to connect an app has expired or was opened in another browser; start again from the app')).toBe(
      'This request to connect an app has expired or was opened in another browser; start again from the app.',
    );
    expect(sentence('Allow the app at least one thing, or deny it.')).toBe('Allow the app at least one thing, or deny it.');
    expect(sentence('')).toBe('');
  });
});
