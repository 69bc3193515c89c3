import type { Scope } from '../oauth/scopes.js';

/** Who is calling. Visibility decides, in the pipeline, what each kind may reach. */
export type Principal =
  /** A call with an API key; `keyName` is the key's name as the call found it (a post written with it keeps it: migration 027). */
  | { kind: 'apiKey'; keyId: string; keyName: string; userId: string; workspaceId: string }
  /**
   * An app a member connected by OAuth (src/oauth): reaches what a key reaches, limited to the scopes the member
   * allowed; `appName` is the client's name as the consent page showed it.
   */
  | { kind: 'connection'; connectionId: string; appName: string; scopes: readonly Scope[]; userId: string; workspaceId: string }
  /** A member signed in to the dashboard (src/auth/sessions.ts): reaches every operation, in the browser rate-limit bucket. */
  | { kind: 'session'; sessionId: string; userId: string; workspaceId: string }
  /** The admin command, acting for a user inside one workspace; reaches internal operations. */
  | { kind: 'admin'; userId: string; workspaceId: string };
