import { callJson, setCsrfToken, type Result } from './api.js';

/**
 * The /auth routes: sign-in, sign-out, first-run setup and invitations. They are not registry operations (they are
 * not in the OpenAPI document), so their shapes are written here, as docs/api.md states them.
 */
export interface Session {
  user: { id: string; name: string; email: string };
  workspace: { id: string; name: string };
  role: 'owner' | 'member';
  csrfToken: string;
  expiresAt: string;
}

export interface SetupLink {
  email: string;
  name: string;
  workspaceName: string;
}

export interface InvitationLink {
  email: string;
  workspaceName: string;
  /** The inviter's name; null once that user is gone. */
  invitedBy: string | null;
  hasPassword: boolean;
}

/** Keeps the session's anti-forgery token for the calls that follow. */
function signedIn(result: Result<Session>): Result<Session> {
  if (result.ok) setCsrfToken(result.data.csrfToken);
  return result;
}

export const getSession = async () => signedIn(await callJson<Session>('GET', '/auth/session'));

export const signIn = async (email: string, password: string) => signedIn(await callJson<Session>('POST', '/auth/login', { email, password }));

export const signOut = () => callJson<void>('POST', '/auth/logout');

export const readSetupLink = (token: string) => callJson<SetupLink>('GET', `/auth/setup?token=${encodeURIComponent(token)}`);

export const completeSetup = async (token: string, account: { name: string; email: string; password: string }) =>
  signedIn(await callJson<Session>('POST', '/auth/setup', { token, ...account }));

export const readInvitation = (token: string) => callJson<InvitationLink>('GET', `/auth/invitation?token=${encodeURIComponent(token)}`);

export const acceptInvitation = async (token: string, password: string, name?: string) =>
  signedIn(await callJson<Session>('POST', '/auth/invitation', name === undefined ? { token, password } : { token, name, password }));
