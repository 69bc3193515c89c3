import { issueInWords } from './issue-words.js';
import { z } from 'zod';
import { isOwner } from '../auth/api-keys.js';
import type { UsageRecorder, Surface } from './usage.js';
import type { Principal } from '../auth/principal.js';
import type { AppContext } from './context.js';
import { claim, idempotencyKey } from './idempotency.js';
import { rateLimitedMessage, type RateLimiter, type RateLimitState } from './rate-limit.js';
import { INTERNAL_MESSAGE, NOT_FOUND_MESSAGE, OperationError, statusOf, type ErrorBody, type ErrorCode } from './errors.js';
import type { Operation } from './operation.js';
import { SCOPES, scopeOf } from '../oauth/scopes.js';

/** A call's raw input: REST hands over its parts separately, MCP one object of arguments. */
export type RawInput =
  | { kind: 'parts'; path: unknown; query: unknown; body: unknown; idempotencyKey?: string }
  | { kind: 'arguments'; value: unknown };

export interface Call {
  /** Undefined when nothing matched: an unknown path or tool. */
  operation: Operation | undefined;
  principal: Principal;
  surface: Surface | 'admin';
  input: RawInput;
}

export type Outcome = ({ ok: true; status: number; body: unknown } | { ok: false; status: number; body: ErrorBody }) & {
  /** The caller's rate-limit bucket after this call, for the RateLimit headers; absent for the admin command. */
  rateLimit?: RateLimitState;
};

/**
 * The one path every call takes, whatever surface it came in by: the rate limit, visibility, validation,
 * handler, output check, error mapping and usage accounting. Authentication happens before (it decides the principal), so
 * that a call without a valid key learns nothing, not even whether the path exists.
 */
export class Pipeline {
  constructor(
    private readonly app: AppContext,
    private readonly usage: UsageRecorder,
    private readonly limiter: RateLimiter,
  ) {}

  async run(call: Call): Promise<Outcome> {
    return this.limited(call.principal, call.surface, call.operation, () => this.execute(call));
  }

  /** Answers a call refused before it reached an operation (an unreadable body), and counts it. */
  refuse(principal: Principal, surface: Surface, code: ErrorCode, message: string): Promise<Outcome> {
    return this.limited(principal, surface, undefined, async () => failure(code, message));
  }

  /** The caller's rate-limit bucket as this process knows it, without counting a call (for MCP's HTTP answer). */
  rateLimitOf(principal: Principal): RateLimitState | undefined {
    return this.limiter.peek(principal);
  }

  /**
   * Every call counts against its bucket, whatever it asks (an unknown path too); over the limit nothing runs. Nor
   * does a call whose token could not be had (the database out of reach): never admitted uncounted, it answers INTERNAL.
   */
  private async limited(principal: Principal, surface: Call['surface'], operation: Operation | undefined, execute: () => Promise<Outcome>) {
    let admission: Awaited<ReturnType<RateLimiter['admit']>>;
    try {
      admission = await this.limiter.admit(principal);
    } catch (error) {
      this.app.logger.error('no rate-limit token could be had; the call is refused', { error });
      const outcome = failure('INTERNAL', INTERNAL_MESSAGE);
      this.account(principal, surface, operation, outcome.status);
      return outcome;
    }
    const outcome = admission && !admission.admitted ? failure('RATE_LIMITED', rateLimitedMessage(admission.state)) : await execute();
    this.account(principal, surface, operation, outcome.status);
    return admission ? { ...outcome, rateLimit: admission.state } : outcome;
  }

  private async execute({ operation, principal, input }: Call): Promise<Outcome> {
    // An internal operation is, to a key or a connected app, indistinguishable from one that does not exist.
    if (!operation || (programmatic(principal) && operation.visibility !== 'public')) {
      return failure('NOT_FOUND', NOT_FOUND_MESSAGE);
    }
    if (principal.kind === 'connection' && !principal.scopes.includes(scopeOf(operation))) {
      const scope = scopeOf(operation);
      return failure('FORBIDDEN', `${principal.appName} was not allowed to ${SCOPES[scope].toLowerCase()} (${scope}); disconnect it and connect it again to allow it`);
    }
    if (operation.ownerOnly && !(await isOwner(this.app.db, principal))) {
      return failure('FORBIDDEN', `Only the owner of this workspace may do this (${operation.summary.toLowerCase()})`);
    }
    const parsed = parseInput(operation, input);
    if (!parsed.ok) return failure('VALIDATION_ERROR', parsed.message);
    const { idempotencyKey: key, ...values } = parsed.value;
    if (operation.idempotent && typeof key === 'string') return this.once(operation, principal, key, values);
    return this.invoke(operation, principal, values);
  }

  /** Runs an idempotent operation at most once per key: the first answer is kept and replayed (src/registry/idempotency.ts). */
  private async once(operation: Operation, principal: Principal, key: string, input: Record<string, unknown>): Promise<Outcome> {
    const claimed = await claim(this.app.db, principal.workspaceId, key, operation.id, input);
    if (claimed.kind === 'replay') return { ok: true, status: claimed.status, body: claimed.body };
    if (claimed.kind === 'reused') {
      return failure('IDEMPOTENCY_KEY_REUSED', 'This Idempotency-Key was used for a different request; send a new key with a new request');
    }
    if (claimed.kind === 'in-progress') {
      return failure('IDEMPOTENCY_KEY_IN_PROGRESS', 'A request with this Idempotency-Key is still running; try again once it has answered');
    }
    const outcome = await this.invoke(operation, principal, input);
    // Only a success is kept: a failure changed nothing (the handler's transaction rolled back), so a retry may run.
    await (outcome.ok ? claimed.settle(outcome.status, outcome.body) : claimed.release());
    return outcome;
  }

  private async invoke(operation: Operation, principal: Principal, input: Record<string, unknown>): Promise<Outcome> {
    let result: unknown;
    try {
      result = await operation.handler(input, {
        ...this.app,
        auth: { userId: principal.userId, workspaceId: principal.workspaceId, principal },
        fail: (code, message) => {
          throw new OperationError(code, message);
        },
      });
    } catch (error) {
      if (error instanceof OperationError && operation.errors.includes(error.code)) return failure(error.code, error.message);
      return this.internal(operation, error);
    }
    // The output schema is an allow-list: only declared fields leave, and a handler bug cannot leak a column.
    const output = compiled(operation.output).safeParse(result);
    if (!output.success) return this.internal(operation, new Error(`output does not match its schema: ${describe(output.error)}`));
    return { ok: true, status: operation.status, body: output.data };
  }

  private internal(operation: Operation, error: unknown): Outcome {
    this.app.logger.error('operation failed', { operation: operation.id, error });
    return failure('INTERNAL', INTERNAL_MESSAGE);
  }

  private account(principal: Principal, surface: Surface | 'admin', operation: Operation | undefined, status: number) {
    if (!programmatic(principal) || surface === 'admin') return;
    this.usage.record({
      organizationId: principal.workspaceId,
      apiKeyId: principal.kind === 'apiKey' ? principal.keyId : null,
      connectionId: principal.kind === 'connection' ? principal.connectionId : null,
      surface,
      operation: operation?.visibility === 'public' ? operation.id : null,
      status,
      createdAt: new Date(),
    });
  }
}

/** A key or a connected app: public operations only, usage counted. */
const programmatic = (principal: Principal): principal is Extract<Principal, { kind: 'apiKey' | 'connection' }> =>
  principal.kind === 'apiKey' || principal.kind === 'connection';

function failure(code: ErrorCode, message: string): Outcome {
  return { ok: false, status: statusOf(code), body: { code, message } };
}

type Parsed = { ok: true; value: Record<string, unknown> } | { ok: false; message: string };

/** What a body sent to an operation without body fields must be: nothing, or `{}`. */
const noFields = z.strictObject({});

function parseInput(operation: Operation, input: RawInput): Parsed {
  if (input.kind === 'arguments') return validate(operation.arguments, input.value ?? {}, '');
  if (operation.idempotent && input.idempotencyKey !== undefined) {
    const key = idempotencyKey.safeParse(input.idempotencyKey);
    if (!key.success) return { ok: false, message: describe(key.error, 'header.idempotency-key') };
  }
  const parts = [
    ['path', operation.textInput.path, input.path],
    ['query', operation.textInput.query, input.query],
    ['body', operation.input.body ?? (operation.readsBody ? noFields : undefined), input.body],
  ] as const;
  const value: Record<string, unknown> = {};
  for (const [part, schema, raw] of parts) {
    if (!schema) continue;
    // An absent part is empty; a JSON `null` body is a body, and refused as one.
    const parsed = validate(schema, raw === undefined ? {} : raw, `${part}.`);
    if (!parsed.ok) return parsed;
    Object.assign(value, parsed.value);
  }
  if (operation.idempotent && input.idempotencyKey !== undefined) value.idempotencyKey = input.idempotencyKey;
  return { ok: true, value };
}

/**
 * Each schema as zod compiles it (`z.compile`): a generated parser for what passes, the schema's own for what does
 * not, so values and error messages are the same, for much less than the schema's own check (docs/benchmarks.md). Compiled once,
 * on first use; the schemas themselves stay as they are for OpenAPI and MCP.
 */
const compiledSchemas = new WeakMap<z.ZodType, z.ZodType>();
function compiled(schema: z.ZodType): z.ZodType {
  let fast = compiledSchemas.get(schema);
  if (!fast) compiledSchemas.set(schema, (fast = z.compile(schema)));
  return fast;
}

function validate(schema: z.ZodType, raw: unknown, where: string): Parsed {
  const parsed = compiled(schema).safeParse(raw);
  return parsed.success
    ? { ok: true, value: parsed.data as Record<string, unknown> }
    : { ok: false, message: describe(parsed.error, where) };
}

/** "body.name: must not be empty; query.limit: must be at most 100" (the field, then the rule in words). */
function describe(error: z.ZodError, where = ''): string {
  return error.issues
    .map((issue) => {
      const field = `${where}${issue.path.join('.')}`.replace(/\.$/, '');
      const words = issueInWords(issue);
      return field ? `${field}: ${words}` : words;
    })
    .join('; ');
}
