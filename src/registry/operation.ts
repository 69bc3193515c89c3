import { z } from 'zod';
import type { ErrorCode } from './errors.js';
import type { HandlerContext } from './context.js';

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
  /** Path, query and body fields in one object: the MCP tool's input. */
  arguments: AnyObject;
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
    arguments: z.strictObject(Object.assign({}, ...parts.map((part) => part.shape))),
    output: spec.output,
    status: spec.status ?? 200,
    errors: spec.errors ?? [],
    handler: spec.handler as Operation['handler'],
  };
}

/**
 * The codes any call of `operation` can answer: its own, plus the pipeline's (authentication, input that is
 * unreadable or invalid, an unexpected failure). Both the OpenAPI document and the tool descriptions use it.
 */
export function declaredErrors(operation: Operation): ErrorCode[] {
  const codes = new Set<ErrorCode>(['UNAUTHORIZED', ...operation.errors, 'INTERNAL']);
  const { path, query, body } = operation.input;
  if (path || query || body) codes.add('VALIDATION_ERROR');
  if (body) for (const code of ['INVALID_JSON', 'PAYLOAD_TOO_LARGE', 'UNSUPPORTED_MEDIA_TYPE'] as const) codes.add(code);
  return [...codes];
}
