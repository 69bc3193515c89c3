import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import { createGeneratorSync, type JsonSchema } from 'json-schema-faker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { operations } from '../operations/index.js';
import { definePlan } from '../src/admin/plans.js';
import { statusOf, type ErrorCode } from '../src/registry/errors.js';
import type { Operation } from '../src/registry/operation.js';
import { call, startTestService, type Answer, type TestService, type Workspace } from './support/service.js';

/**
 * Properties of every public operation, derived from the registry alone, so an operation added tomorrow is
 * covered the day it is added: inputs generated from its published schema (seeded) get the same answer over
 * REST and MCP, a declared one; mutated inputs are refused with a declared status and `{ code, message }` over
 * REST, and with a tool error or -32602 over MCP; nothing answers 5xx or -32603.
 */

const SEED = 20261123;
const VALID_RUNS = 12;

let service: TestService;
let ws: Workspace;
let doc: any;
/** Ids the generator picks from, so generated calls reach real rows as well as missing and foreign ones. */
const ids: string[] = [];

beforeAll(async () => {
  // Usage is written only at shutdown here, so reads of it answer the same over both surfaces.
  service = await startTestService({ usageFlushMs: 3_600_000 });
  // The free plan's numbers, but a rate limit these hundreds of calls a minute cannot reach (test/rate-limits.test.ts tests that).
  await definePlan(service.service.core.db, { name: 'properties', rateLimitPerMinute: 1_000_000, storageBytes: 1_073_741_824, monthlyPostQuotas: { BLUESKY: 100, LINKEDIN: 20 } });
  ws = await service.workspace({ plan: 'properties' });
  const other = await service.workspace();
  for (const name of ['Launch', 'Été', 'Research']) ids.push((await ws.admin('createTag', { name })).id);
  ids.push((await other.admin('createTag', { name: 'Foreign' })).id, randomUUID());
  doc = (await call(`${service.api}/openapi.json`)).json;
});
afterAll(() => service?.stop());

const publicOperations = operations.filter((operation) => operation.visibility === 'public');

interface Outcome {
  status: number;
  code?: string;
  body: unknown;
}

/** The REST request a client builds from one object of arguments, as the OpenAPI document describes it. */
async function overRest(operation: Operation, args: Record<string, unknown>, style: 'repeat' | 'comma'): Promise<Answer> {
  const pathNames = Object.keys(operation.input.path?.shape ?? {});
  const queryNames = Object.keys(operation.input.query?.shape ?? {});
  const path = operation.path.replace(/\{(\w+)\}/g, (_, name: string) => encodeURIComponent(String(args[name])));
  const query = new URLSearchParams();
  for (const name of queryNames) {
    const value = args[name];
    if (value === undefined) continue;
    if (Array.isArray(value) && style === 'comma') query.append(name, value.join(','));
    else if (Array.isArray(value)) for (const item of value) query.append(name, String(item));
    else if (value !== null && typeof value === 'object') for (const [key, item] of Object.entries(value)) query.append(`${name}[${key}]`, String(item));
    else query.append(name, String(value));
  }
  // The idempotency key travels in its header; the rest of the arguments are the body's.
  const { idempotencyKey, ...rest } = Object.fromEntries(Object.entries(args).filter(([name]) => !pathNames.includes(name) && !queryNames.includes(name)));
  const headers: Record<string, string> = typeof idempotencyKey === 'string' ? { 'idempotency-key': idempotencyKey } : {};
  const search = query.size ? `?${query}` : '';
  const body = operation.readsBody ? rest : undefined;
  return call(`${service.api}${path}${search}`, { method: operation.method, key: ws.apiKey, body, headers });
}

async function overMcp(operation: Operation, args: unknown): Promise<Answer> {
  return call(`${service.base}/mcp`, {
    method: 'POST',
    key: ws.apiKey,
    body: { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: operation.id, arguments: args } },
  });
}

/** A REST answer is one the document declares: its status, and for an error a code listed under that status. */
function declaredRest(operation: Operation, answer: Answer): Outcome {
  const context = `${operation.method} ${operation.path} → ${answer.status} ${answer.text.slice(0, 300)}`;
  const declared = doc.paths[operation.path][operation.method.toLowerCase()].responses[String(answer.status)];
  expect(declared, context).toBeDefined();
  expect(answer.status, context).toBeLessThan(500);
  if (answer.status === operation.status) {
    expect(operation.output.safeParse(answer.json).success, context).toBe(true);
    return { status: answer.status, body: answer.json };
  }
  expect(answer.json, context).toEqual({ code: expect.any(String), message: expect.any(String) });
  expect(declared.content['application/json'].schema.properties.code.enum, context).toContain(answer.json.code);
  return { status: answer.status, code: answer.json.code, body: answer.json };
}

/** An MCP answer is a tool result or error with a declared code; a JSON-RPC error is only ever -32602. */
function declaredMcp(operation: Operation, answer: Answer): Outcome | 'invalid params' {
  const context = `${operation.id} → ${answer.text.slice(0, 300)}`;
  expect(answer.status, context).toBe(200);
  if (answer.json.error) {
    expect(answer.json.error.code, context).toBe(-32602);
    return 'invalid params';
  }
  const result = answer.json.result;
  if (result.isError) {
    const body = JSON.parse(result.content[0].text);
    const declared = doc.paths[operation.path][operation.method.toLowerCase()].responses[String(statusOf(body.code as ErrorCode))];
    expect(declared?.content['application/json'].schema.properties.code.enum, context).toContain(body.code);
    expect(statusOf(body.code as ErrorCode), context).toBeLessThan(500);
    return { status: statusOf(body.code as ErrorCode), code: body.code, body };
  }
  return { status: operation.status, body: result.structuredContent };
}

const argumentsSchema = (operation: Operation) => z.toJSONSchema(operation.arguments, { io: 'input' }) as JsonSchema & Record<string, any>;

describe.each(publicOperations.map((operation) => [operation.id, operation] as const))('%s', (_id, operation) => {
  it('answers generated valid inputs the same over REST and MCP, as the document declares', async () => {
    const generator = createGeneratorSync({ seed: SEED, formats: { uuid: (random) => ids[random.int(0, ids.length - 1)]! } });
    const schema = argumentsSchema(operation);
    await fc.assert(
      fc.asyncProperty(fc.boolean(), async (commaSeparated) => {
        const args = generator.generate(schema) as Record<string, unknown>;
        const context = `${operation.id}(${JSON.stringify(args)})`;
        const rest = declaredRest(operation, await overRest(operation, args, commaSeparated ? 'comma' : 'repeat'));
        const mcp = declaredMcp(operation, await overMcp(operation, args));
        expect(mcp, context).not.toBe('invalid params');
        const viaMcp = mcp as Outcome;
        expect({ status: viaMcp.status, code: viaMcp.code }, context).toEqual({ status: rest.status, code: rest.code });
        // Reads answer the same data; writes made twice differ in their ids, so their status and code suffice.
        if (operation.method === 'GET' && rest.status === operation.status) {
          expect(viaMcp.body, context).toEqual(Array.isArray(rest.body) ? { items: rest.body } : rest.body);
        }
      }),
      { seed: SEED, numRuns: VALID_RUNS },
    );
  });

  it('refuses mutated inputs with a declared answer, and MCP refuses every one its inputSchema forbids', async () => {
    const generator = createGeneratorSync({ seed: SEED + 1, formats: { uuid: () => ids[0]! } });
    const schema = argumentsSchema(operation);
    const valid = generator.generate(schema) as Record<string, unknown>;
    for (const mutation of mutationsOf(schema, valid)) {
      const context = `${operation.id}: ${mutation.name}`;
      const mcp = declaredMcp(operation, await overMcp(operation, mutation.args));
      if (mutation.forbidden) expect(mcp === 'invalid params' || mcp.code === 'VALIDATION_ERROR', context).toBe(true);
      if (mutation.args === null || typeof mutation.args !== 'object' || Array.isArray(mutation.args)) {
        expect(mcp, context).toBe('invalid params');
        continue;
      }
      const rest = declaredRest(operation, await overRest(operation, mutation.args as Record<string, unknown>, 'repeat'));
      // A body field has a JSON type of its own, so REST refuses there exactly what MCP refuses.
      if (mutation.forbidden && mutation.field !== undefined && operation.input.body?.shape[mutation.field]) {
        expect(rest.code, context).toBe('VALIDATION_ERROR');
      }
    }
  });
});

interface Mutation {
  name: string;
  args: unknown;
  field?: string;
  /** Whether the published inputSchema forbids it (so MCP must refuse it). */
  forbidden: boolean;
}

/** Wrong types, nulls, huge strings and unknown fields for each argument, and arguments that are not an object. */
function mutationsOf(schema: Record<string, any>, valid: Record<string, unknown>): Mutation[] {
  const samples: Record<string, unknown> = { string: 'x', number: 1.5, integer: 7, boolean: true, array: ['x'], object: { x: 1 }, null: null };
  const mutations: Mutation[] = [
    ...['text', null, [], 5, true].map((args) => ({ name: `arguments ${JSON.stringify(args)}`, args, forbidden: true })),
    { name: 'an unknown field', args: { ...valid, unknownField: 1 }, forbidden: true },
  ];
  for (const [field, property] of Object.entries<Record<string, any>>(schema.properties ?? {})) {
    const types = admittedTypes(property, schema);
    if (types.size === 0) continue;
    for (const [type, value] of Object.entries(samples)) {
      const admitted = types.has(type) || (type === 'integer' && types.has('number'));
      if (!admitted) mutations.push({ name: `${field} as ${type}`, args: { ...valid, [field]: value }, field, forbidden: true });
    }
    mutations.push({ name: `${field} huge`, args: { ...valid, [field]: 'x'.repeat(100_000) }, field, forbidden: !types.has('string') });
  }
  return mutations;
}

function admittedTypes(property: Record<string, any>, root: Record<string, any>): Set<string> {
  const resolved = property.$ref ? root.$defs?.[property.$ref.split('/').pop()] ?? {} : property;
  const own = resolved.type === undefined ? [] : [resolved.type].flat();
  const members = [...(resolved.anyOf ?? []), ...(resolved.oneOf ?? [])].flatMap((member: Record<string, any>) => [...admittedTypes(member, root)]);
  return new Set<string>([...own, ...members]);
}
