import { z } from 'zod';
import type { ErrorCode } from './errors.js';
import type { HandlerContext } from './context.js';
import { idempotencyKey } from './idempotency.js';
import { fromText } from './text-input.js';

export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
/** `public`: reachable with an API key (REST, OpenAPI, MCP). `internal` (the default): dashboard and admin only. */
export type Visibility = 'public' | 'internal';

type AnyObject = z.ZodObject;
type NoFields = z.ZodObject<{}>;

export interface OperationSpec<P extends AnyObject, Q extends AnyObject, B extends AnyObject, O extends z.ZodType, E extends ErrorCode> {
  /** The OpenAPI operationId and the MCP tool name. */
  id: string;
  method: HttpMethod;
  /** Below /api/v1, with `{name}` path parameters as in the contract. */
  path: string;
  visibility?: Visibility;
  summary: string;
  description?: string;
  input?: { path?: P; query?: Q; body?: B };
  output: O;
  /** The success status; 200 unless given. */
  status?: 200 | 201;
  /** The codes the handler may raise with `ctx.fail`, and only those. */
  errors?: readonly E[];
  /** A create that takes an idempotency key: the `Idempotency-Key` header over REST, `idempotencyKey` over MCP. */
  idempotent?: boolean;
  /** Only the workspace's owner may call it (managing members); other members get FORBIDDEN. */
  ownerOnly?: boolean;
  handler: (input: z.output<P> & z.output<Q> & z.output<B>, ctx: HandlerContext<E>) => Promise<z.input<O>>;
}

/** An operation as the surfaces see it: its spec, with the input parts merged once for MCP. */
export interface Operation {
  id: string;
  method: HttpMethod;
  path: string;
  visibility: Visibility;
  summary: string;
  description: string | undefined;
  input: { path?: AnyObject; query?: AnyObject; body?: AnyObject };
  /** The path and query schemas REST validates with: the same declarations, read from text (see fromText). */
  textInput: { path?: z.ZodType; query?: z.ZodType };
  /** Path, query and body fields in one object: the MCP tool's input, validated strictly. */
  arguments: AnyObject;
  /** Whether a request body is read: every method but GET. One without declared fields takes none, or `{}`. */
  readsBody: boolean;
  /** Whether it takes an idempotency key (see src/registry/idempotency.ts). */
  idempotent: boolean;
  ownerOnly: boolean;
  output: z.ZodType;
  status: 200 | 201;
  errors: readonly ErrorCode[];
  handler: (input: Record<string, unknown>, ctx: HandlerContext<ErrorCode>) => Promise<unknown>;
}

export function defineOperation<
  E extends ErrorCode = never,
  O extends z.ZodType = z.ZodType,
  P extends AnyObject = NoFields,
  Q extends AnyObject = NoFields,
  B extends AnyObject = NoFields,
>(spec: OperationSpec<P, Q, B, O, E>): Operation {
  const input = spec.input ?? {};
  const parts = ([input.path, input.query, input.body] as (AnyObject | undefined)[]).filter((part) => part !== undefined);
  const seen = new Set<string>();
  for (const name of parts.flatMap((part) => Object.keys(part.shape))) {
    if (seen.has(name)) throw new Error(`${spec.id}: input field "${name}" appears in more than one of path, query and body`);
    seen.add(name);
  }
  const pathNames = [...spec.path.matchAll(/\{(\w+)\}/g)].map((match) => match[1]);
  const declared = Object.keys(input.path?.shape ?? {});
  if (pathNames.join() !== declared.join()) {
    throw new Error(`${spec.id}: path ${spec.path} and input.path (${declared.join(', ')}) must name the same parameters`);
  }
  return {
    id: spec.id,
    method: spec.method,
    path: spec.path,
    visibility: spec.visibility ?? 'internal',
    summary: spec.summary,
    description: spec.description,
    input,
    textInput: { path: input.path && fromText(input.path), query: input.query && fromText(input.query) },
    arguments: z.strictObject(
      Object.assign({}, ...parts.map((part) => part.shape), spec.idempotent ? { idempotencyKey: idempotencyKey.optional() } : {}),
    ),
    readsBody: spec.method !== 'GET',
    idempotent: spec.idempotent ?? false,
    ownerOnly: spec.ownerOnly ?? false,
    output: spec.output,
    status: spec.status ?? 200,
    errors: spec.errors ?? [],
    handler: spec.handler as Operation['handler'],
  };
}

/** The HTTP edge's refusals of a request as a whole: over MCP they answer the HTTP request, never a tool call. */
const HTTP_EDGE_ERRORS: readonly ErrorCode[] = ['REQUEST_HEADERS_TOO_LARGE', 'INVALID_JSON', 'PAYLOAD_TOO_LARGE', 'UNSUPPORTED_MEDIA_TYPE'];

/**
 * The codes any call of `operation` can answer: its own, plus the pipeline's and, over REST, the HTTP edge's
 * (authentication, the rate limit, headers too large, input that is unreadable or invalid, an unexpected failure). Both the
 * OpenAPI document and the tool descriptions use it.
 */
export function declaredErrors(operation: Operation, surface: 'rest' | 'mcp'): ErrorCode[] {
  // Every operation can meet VALIDATION_ERROR: MCP refuses arguments its tool does not declare, even where none are.
  const codes = new Set<ErrorCode>(['UNAUTHORIZED', 'RATE_LIMITED', 'REQUEST_HEADERS_TOO_LARGE', 'VALIDATION_ERROR', ...operation.errors, 'INTERNAL']);
  if (operation.readsBody) for (const code of ['INVALID_JSON', 'PAYLOAD_TOO_LARGE', 'UNSUPPORTED_MEDIA_TYPE'] as const) codes.add(code);
  // Over REST, a dashboard session's state-changing request is also checked against forgery; MCP takes keys only.
  if (operation.readsBody && surface === 'rest') codes.add('CSRF_REJECTED');
  if (operation.ownerOnly) codes.add('FORBIDDEN');
  if (operation.idempotent) for (const code of ['IDEMPOTENCY_KEY_REUSED', 'IDEMPOTENCY_KEY_IN_PROGRESS'] as const) codes.add(code);
  return surface === 'mcp' ? [...codes].filter((code) => !HTTP_EDGE_ERRORS.includes(code)) : [...codes];
}
