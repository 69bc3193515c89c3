import createClient from 'openapi-fetch';
import type { components, paths } from './api-types.js';

/** The schemas of the OpenAPI document, by name: `Schema<'ApiKey'>`. */
export type Schema<Name extends keyof components['schemas']> = components['schemas'][Name];

/** Every error the server answers is `{ code, message }`; `status` 0 means the server could not be reached. */
export interface ApiError {
  code: string;
  message: string;
  status: number;
}

export type Result<T> = { ok: true; data: T } | { ok: false; error: ApiError };

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/** The session's anti-forgery token, sent on every state-changing call (set from GET /auth/session). */
let csrfToken = '';
export function setCsrfToken(token: string) {
  csrfToken = token;
}

/** What to do when the session has ended: the app sends the browser to the sign-in page. */
let onSignedOut: () => void = () => {};
export function whenSignedOut(handler: () => void) {
  onSignedOut = handler;
}

/** A copy of each state-changing request in flight, to send again once with a fresh token (see onResponse). */
const retries = new Map<string, Request>();

/** The REST API under /api/v1, typed from our own OpenAPI document (src/dashboard/api-types.ts). */
export const api = createClient<paths>({ baseUrl: '/api/v1', credentials: 'same-origin' });
api.use({
  onRequest({ request, id }) {
    if (SAFE_METHODS.has(request.method)) return request;
    request.headers.set('x-csrf-token', csrfToken);
    retries.set(id, request.clone());
    return request;
  },
  async onResponse({ request, response, id }) {
    const retry = retries.get(id);
    retries.delete(id);
    // A page that cannot load goes to sign-in; a failed submit stays, so that nothing typed is lost.
    if (response.status === 401 && SAFE_METHODS.has(request.method)) onSignedOut();
    // Signed in again meanwhile (in another tab): the cookie is the new session's, the token still the old one's.
    // The token is read again and the request sent once more, rather than the form being lost to a reload.
    if (response.status === 403 && retry && (await response.clone().json().catch(() => ({}))).code === 'CSRF_REJECTED') {
      const session = await callJson<{ csrfToken: string }>('GET', '/auth/session');
      if (session.ok && session.data.csrfToken !== retry.headers.get('x-csrf-token')) {
        setCsrfToken(session.data.csrfToken);
        retry.headers.set('x-csrf-token', session.data.csrfToken);
        return fetch(retry);
      }
    }
    return response;
  },
  onError({ id }) {
    retries.delete(id);
  },
});

const UNREACHABLE: ApiError = { code: 'NETWORK', message: 'The server could not be reached. Check the connection and try again.', status: 0 };

/** An openapi-fetch call as a Result, its error as the server's `{ code, message }`. */
export async function call<T>(request: Promise<{ data?: T; error?: unknown; response: Response }>): Promise<Result<T>> {
  try {
    const { data, error, response } = await request;
    if (response.ok) return { ok: true, data: data as T };
    if (response.status === 401) return { ok: false, error: SIGNED_OUT };
    return { ok: false, error: toApiError(error, response) };
  } catch {
    return { ok: false, error: UNREACHABLE };
  }
}

const SIGNED_OUT: ApiError = {
  code: 'UNAUTHORIZED',
  message: 'You are signed out (the session has ended). Sign in again in another tab, then try again here: what you typed is kept.',
  status: 401,
};

/** A call outside /api/v1 (the /auth routes, which are not operations), with the same error handling. */
export async function callJson<T>(method: 'GET' | 'POST', path: string, body?: unknown): Promise<Result<T>> {
  try {
    const headers: Record<string, string> = {};
    if (body !== undefined) headers['content-type'] = 'application/json';
    if (!SAFE_METHODS.has(method)) headers['x-csrf-token'] = csrfToken;
    const response = await fetch(path, { method, headers, credentials: 'same-origin', body: body === undefined ? undefined : JSON.stringify(body) });
    const text = await response.text();
    let parsed: unknown = undefined;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      parsed = text;
    }
    if (response.ok) return { ok: true, data: parsed as T };
    return { ok: false, error: toApiError(parsed, response) };
  } catch {
    return { ok: false, error: UNREACHABLE };
  }
}

function toApiError(body: unknown, response: Response): ApiError {
  const { code, message } = (typeof body === 'object' && body !== null ? body : {}) as { code?: unknown; message?: unknown };
  return {
    code: typeof code === 'string' ? code : 'HTTP_' + response.status,
    message: typeof message === 'string' && message ? message : `The server answered ${response.status} ${response.statusText}`.trim(),
    status: response.status,
  };
}

/**
 * Which field an error names, for showing it next to that field. Validation messages read
 * `body.name: Too small…; body.expiresAt: …` (src/registry/pipeline.ts); this answers the part for `field`.
 */
export function errorFor(error: ApiError | null | undefined, field: string): string | undefined {
  if (!error) return undefined;
  const parts = error.message.split('; ').filter((part) => fieldOf(part) === field);
  return parts.length ? parts.join('; ') : undefined;
}

/** The error when it names none of `fields`: shown for the whole form. */
export function formError(error: ApiError | null | undefined, fields: readonly string[]): string | undefined {
  if (!error) return undefined;
  const parts = error.message.split('; ').filter((part) => !fields.includes(fieldOf(part) ?? ''));
  return parts.length ? parts.join('; ') : undefined;
}

function fieldOf(part: string): string | undefined {
  return /^(?:body\.|query\.|path\.)?([A-Za-z]\w*)[\w.]*: /.exec(part)?.[1];
}
