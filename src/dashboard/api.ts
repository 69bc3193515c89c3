import createClient from 'openapi-fetch';
import type { components, paths } from './api-types.js';
import { formatDateTime } from './format.js';
import { platformLabel, PLATFORMS } from './platforms.js';
import { withoutDetails } from '../platforms/rules.js';

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
 * A field's path as the API writes it before a rule: `body.name`, `query.limit`, `rows[0].thread[1].content`,
 * `postingWindows.0.times.0` (src/registry/pipeline.ts and the handlers' own refusals: `body.name: must not be empty`).
 */
const PATH = String.raw`(?:(?:body|query|path|header)\.)?([A-Za-z][\w-]*)(?:\.[\w-]+|\[\d+\])*`;
/** A part of a message, `path: rule`; a message names several fields in parts joined by "; ". */
const PART = new RegExp(`^(${PATH}): (.*)$`, 's');
/** Between two parts (a rule's own sentence may hold "; " too: "…is not public; only public hosts…"); no group, as split keeps groups. */
const PARTS = new RegExp(`; (?=${PATH.replace('([A-Za-z]', '(?:[A-Za-z]')}: )`);

/**
 * One part of an error's message: the field's path as the API wrote it ('' when it names none), the field (the path's
 * first name), the rule as written, and as people read it under that field (`sentence`).
 */
export interface ErrorPart {
  path: string;
  field: string;
  rule: string;
  sentence: string;
}

/** An error's message in its parts, each naming its field (src/registry/pipeline.ts: `body.name: …; body.expiresAt: …`). */
export function errorParts(error: ApiError | null | undefined): ErrorPart[] {
  if (!error) return [];
  return error.message.split(PARTS).map((part) => {
    const match = PART.exec(part);
    return match ? { path: match[1]!, field: match[2]!, rule: match[3]!, sentence: forPeople(match[3]!) } : { path: '', field: '', rule: part, sentence: forPeople(part) };
  });
}

/**
 * What an error says about one field, for showing under it: the rule as a sentence ("Must be at least 12
 * characters", "Too long for Bluesky (Sky): 301 of 300 characters"), the field being the one it sits under.
 */
export function errorFor(error: ApiError | null | undefined, field: string): string | undefined {
  const parts = errorParts(error).filter((part) => part.field === field);
  return parts.length ? sentences(parts.map((part) => part.sentence)) : undefined;
}

/** What an error says about one field with its path (`languages.2: is not …`), for a control that places it itself. */
export function errorPartsFor(error: ApiError | null | undefined, field: string): string | undefined {
  const parts = errorParts(error).filter((part) => part.field === field);
  return parts.length ? parts.map((part) => `${part.path}: ${part.rule}`).join('; ') : undefined;
}

/**
 * The error when it names none of `fields`, for the whole form, in words: a rule that is not a sentence of its own
 * takes the field's name ("Event types: must be one of …", not `body.eventTypes[0]: …`).
 */
export function formError(error: ApiError | null | undefined, fields: readonly string[]): string | undefined {
  const parts = errorParts(error).filter((part) => !fields.includes(part.field));
  return parts.length ? sentences(parts.map(partInWords)) : undefined;
}

/** A whole message in words, with no field path, platform code or value of an enum left in it (every `ErrorMessage`). */
export function inWords(message: string): string {
  return formError({ code: '', message, status: 0 }, []) ?? message;
}

function partInWords({ path, rule, sentence }: ErrorPart): string {
  // "must not be empty" needs its field; "Too long for Bluesky (Sky): …" and "Not found" are sentences of their own.
  return path && /^[a-z]/.test(rule) ? `${nameOf(path)}: ${sentence.charAt(0).toLowerCase()}${sentence.slice(1)}` : sentence;
}

/** "eventTypes" reads "Event types": the last named segment of a path, in words. */
function nameOf(path: string): string {
  const segment = path.split(/[.[\]]/).filter((part) => part && !/^\d+$/.test(part)).at(-1) ?? path;
  return capitalise(segment.replace(/([a-z])([A-Z])/g, '$1 $2').replace(/-/g, ' ').toLowerCase());
}

/** The values of the API's enums that its messages may hold, as people say them (platforms by their labels, below). */
const ENUM_WORDS: Record<string, string> = {
  DRAFT: 'draft',
  SCHEDULED: 'scheduled',
  PUBLISHING: 'publishing',
  PUBLISHED: 'published',
  FAILED: 'failed',
  NEXT_WINDOW: 'at the next free slot',
  SCHEDULED_TIME: 'at a chosen time',
  PUBLISH_NOW: 'now',
  PENDING_SELECTION: 'waiting for an account to be chosen',
};
const ENUM_VALUE = new RegExp(`\\b(${[...PLATFORMS, ...Object.keys(ENUM_WORDS)].join('|')})\\b`, 'g');
/** A bracket for programs: a field's name alone or with a value, `(connectStatus PENDING)`, `(requiredApproverIds)`. */
const FIELD_BRACKET = /\s\([a-z]+[A-Z]\w*(?: [A-Z_]+)?\)/g;
/** A path left inside a sentence ("Not found: shared.selectedIntegrations[1]"), not a channel's name ("(body.example)"). */
const INNER_PATH = /(?<![("\w.])(?:body\.|query\.|shared\.|rows\[\d+\]\.?)[\w.[\]]*/g;
/** An instant as the API writes it ("The quota resets at 2026-12-01T00:00:00.000Z"). */
const INSTANT = /\b\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:\d{2})\b/g;

/**
 * A rule as people read it: a sentence (capitalised), without the details for programs (src/platforms/rules.ts), a
 * bracket naming a field, a path, or an enum's value (`BLUESKY` reads Bluesky, `PUBLISHING` publishing), its instants
 * in the browser's words (format.ts).
 */
function forPeople(rule: string): string {
  const words = withoutDetails(rule)
    .replace(FIELD_BRACKET, '')
    .replace(INNER_PATH, (path) => nameOf(path).toLowerCase())
    .replace(INSTANT, (instant) => formatDateTime(instant))
    .replace(ENUM_VALUE, (value) => ENUM_WORDS[value] ?? platformLabel(value));
  return capitalise(words);
}

/** Several sentences as one text, each ended. */
const sentences = (said: string[]) => (said.length === 1 ? said[0]! : said.map((one) => (/[.!?]$/.test(one) ? one : `${one}.`)).join(' '));

const capitalise = (text: string) => text.charAt(0).toUpperCase() + text.slice(1);
