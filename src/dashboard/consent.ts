/**
 * The consent page's words and choices apart from its view (pages/authorize.tsx): what `GET /authorize/:uid/request`
 * answers (src/http/oauth.ts), the sentences the page shows of it, and the body of `POST /authorize/:uid/decision`.
 * No browser and no call here, so that test/consent.test.ts checks it alone.
 */

import type { Scope } from '../oauth/scopes.js';

/** The scopes an app may be given. */
export type ScopeName = Scope;

/** How Postwise knows the app: by a client metadata document at an https URL, a registration just now, or its own CLI. */
export type AppKind = 'metadata-document' | 'registered' | 'command-line';

/** What the app asks, as the server describes it to the signed-in member. */
export interface ConsentRequest {
  app: { name: string; logoUri: string | null; clientUri: string | null; kind: AppKind; documentHost: string | null };
  /** Where the member is sent back after deciding: always shown. */
  redirectHost: string;
  /** Sentences to show prominently. */
  warnings: string[];
  workspace: { name: string };
  member: { name: string; email: string };
  resource: 'mcp' | 'api';
  scopes: { name: ScopeName; description: string; asked: boolean }[];
}

/** The request refused before the member is asked (no `state`, `openid` asked): the browser goes straight back. */
export interface Redirect {
  redirectTo: string;
}

export type RequestAnswer = ConsentRequest | Redirect;

export const isRedirect = (answer: RequestAnswer): answer is Redirect => typeof (answer as Partial<Redirect>).redirectTo === 'string';

/** What the member chooses on the page: the scopes ticked and whether the app's posts wait for approval. */
export interface Choice {
  scopes: ScopeName[];
  postsNeedApproval: boolean;
}

/** The page as it opens: what the app asked for ticked, and its posts waiting for approval (the safe default). */
export function initialChoice(request: ConsentRequest): Choice {
  return { scopes: request.scopes.filter((scope) => scope.asked).map((scope) => scope.name), postsNeedApproval: true };
}

/** A scope ticked or unticked; the ticked ones kept in the order the page lists them. */
export function withScope(request: ConsentRequest, choice: Choice, name: ScopeName, ticked: boolean): Choice {
  const chosen = new Set(choice.scopes);
  if (ticked) chosen.add(name);
  else chosen.delete(name);
  return { ...choice, scopes: request.scopes.map((scope) => scope.name).filter((scope) => chosen.has(scope)) };
}

/** The body of `POST /authorize/:uid/decision`: a denial gives nothing, whatever was ticked. */
export function decisionBody(allow: boolean, choice: Choice): { allow: boolean; scopes: ScopeName[]; postsNeedApproval: boolean } {
  return { allow, scopes: allow ? [...choice.scopes] : [], postsNeedApproval: choice.postsNeedApproval };
}

/** The words the page shows of a request. */
export interface ConsentView {
  title: string;
  /** Who the app is, as far as Postwise knows. */
  identity: string;
  returnTo: string;
  signedInAs: string;
  through: string;
  warnings: string[];
}

export function consentView(request: ConsentRequest): ConsentView {
  const { app, member } = request;
  return {
    title: `Connect ${app.name} to ${request.workspace.name}?`,
    identity: identityOf(app),
    returnTo: `After you allow it, you go back to ${request.redirectHost}.`,
    signedInAs: member.name && member.name !== member.email ? `Signed in as ${member.name} (${member.email}).` : `Signed in as ${member.email}.`,
    through:
      request.resource === 'api'
        ? 'It asks to use the workspace through the REST API, acting as you.'
        : 'It asks to use the workspace through MCP (the tools an AI agent calls), acting as you.',
    warnings: request.warnings.map(sentence),
  };
}

function identityOf(app: ConsentRequest['app']): string {
  switch (app.kind) {
    case 'metadata-document':
      return app.documentHost ? `Identified by ${app.documentHost}.` : 'Identified by its own address.';
    case 'registered':
      return 'Registered itself just now.';
    case 'command-line':
      return 'The Postwise command line.';
  }
}

/** A message as a sentence: capitalised and ended ("… start again from the app" gets its full stop). */
export function sentence(message: string): string {
  const text = message.trim();
  if (!text) return text;
  const capitalised = text.charAt(0).toUpperCase() + text.slice(1);
  return /[.!?…]$/.test(capitalised) ? capitalised : `${capitalised}.`;
}
