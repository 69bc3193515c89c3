/**
 * Every error code the service answers, each with its one HTTP status. An operation declares the codes its
 * handler may raise; the pipeline adds the ones every call can meet (`declaredErrors` in operation.ts).
 */
export const errorCatalogue = {
  VALIDATION_ERROR: { status: 400, description: 'The input breaks a rule; the message names the field and the rule.' },
  INVALID_JSON: { status: 400, description: 'The request body is not valid JSON.' },
  UNAUTHORIZED: { status: 401, description: 'The x-api-key header is missing, malformed, unknown, expired or revoked (from the dashboard: the session has ended).' },
  INVALID_CREDENTIALS: { status: 401, description: 'Sign-in: the email or the password is not right (which one is not said).' },
  INVALID_LINK: { status: 400, description: 'A setup or invitation link that is unknown, used, withdrawn or expired.' },
  CSRF_REJECTED: {
    status: 403,
    description: 'A dashboard session\'s state-changing request came from another site or without the session\'s x-csrf-token; nothing was done.',
  },
  TOO_MANY_ATTEMPTS: { status: 429, description: 'Too many failed sign-ins for this account or from this address; `Retry-After` says when to try again.' },
  CONTENT_TOO_LONG: { status: 400, description: 'Content exceeds a target platform\'s limit; the message names the platform, the limit and the length found.' },
  MEDIA_RULE_VIOLATED: { status: 400, description: 'Media does not fit a target platform\'s rules; the message names the platform and the rule.' },
  CHECKSUM_MISMATCH: {
    status: 400,
    description: 'The uploaded bytes are not the ones declared (their SHA-256 or size differs); the object was deleted and no media created.',
  },
  URL_NOT_ALLOWED: {
    status: 400,
    description:
      'POST /uploads/from-url: the URL is not one this server fetches (an address that is not public, at connect time or after a ' +
      'redirect; a user name or password in the URL; a redirect to a scheme other than http or https; more than 3 redirects); ' +
      'nothing was stored.',
  },
  PAYMENT_REQUIRED: { status: 402, description: 'The workspace has no active subscription, and a live schedule was requested (drafts are allowed).' },
  POST_QUOTA_EXCEEDED: {
    status: 403,
    description: 'The plan\'s monthly post quota for a target platform is spent; the message names the platform, the limit, the plan and when it resets.',
  },
  STORAGE_QUOTA_EXCEEDED: {
    status: 403,
    description: 'The upload would take the workspace over its plan\'s storage allowance; the message names the limit, the usage and the plan.',
  },
  FORBIDDEN: { status: 403, description: 'Only the workspace\'s owner may do this (managing members); the message says what.' },
  NOT_FOUND: { status: 404, description: 'No such resource in this workspace.' },
  CONFLICT: { status: 409, description: 'The request conflicts with the current state of the resource.' },
  IDEMPOTENCY_KEY_IN_PROGRESS: {
    status: 409,
    description: 'A request with this Idempotency-Key is still running; try again once it has answered.',
  },
  INVALID_STATE: { status: 409, description: 'The resource\'s current state does not allow this; the message names the state.' },
  IDEMPOTENCY_KEY_REUSED: {
    status: 422,
    description: 'This Idempotency-Key was used for a different request in the last 24 hours; use a new key for a new request.',
  },
  PAYLOAD_TOO_LARGE: { status: 413, description: 'The request body is larger than the service accepts.' },
  UNSUPPORTED_MEDIA_TYPE: { status: 415, description: 'The request body is not application/json.' },
  RATE_LIMITED: {
    status: 429,
    description:
      'The workspace\'s plan allows so many requests a minute, and they are spent; nothing was done. The message names the limit and ' +
      'the plan; `Retry-After` says in how many seconds to try again, and the `RateLimit-Policy` and `RateLimit` headers on every answer say how many are left.',
  },
  REQUEST_HEADERS_TOO_LARGE: {
    status: 431,
    description: 'The request line (with its query string) and headers together exceed 16 KiB; nothing was done.',
  },
  PLATFORM_ERROR: { status: 502, description: 'The platform (Bluesky…) refused or did not answer; the message says why. Nothing was changed here.' },
  INTERNAL: { status: 500, description: 'An unexpected failure; nothing about it is revealed, and it is logged.' },
} as const satisfies Record<string, { status: number; description: string }>;

export type ErrorCode = keyof typeof errorCatalogue;

export interface ErrorBody {
  code: ErrorCode;
  message: string;
}

/** The one text for every 404 that must not reveal whether something exists. */
export const NOT_FOUND_MESSAGE = 'Not found';
/** The one text for every unexpected failure: the cause goes to the log, not to the caller. */
export const INTERNAL_MESSAGE = 'Something went wrong on our side; it has been logged.';

/** Raised by a handler (through `ctx.fail`) or by the pipeline; anything else thrown becomes INTERNAL. */
export class OperationError extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
  ) {
    super(message);
    this.name = 'OperationError';
  }
}

export const statusOf = (code: ErrorCode): number => errorCatalogue[code].status;
