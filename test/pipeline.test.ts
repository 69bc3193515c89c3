import type { Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createHttpApp } from '../src/http/app.js';
import { connectMcpOverHttp, mcpOriginGuard, principalOfHttpCall } from '../src/mcp/http.js';
import { createMcpServer } from '../src/mcp/server.js';
import { defineOperation } from '../src/registry/operation.js';
import { Pipeline } from '../src/registry/pipeline.js';
import { RateLimiter } from '../src/registry/rate-limit.js';
import { UsageRecorder } from '../src/registry/usage.js';
import { call, startTestService, type TestService, type Workspace } from './support/service.js';

/** Operations that misbehave on purpose, served through the real HTTP and MCP surfaces. */
const operations = [
  defineOperation({
    id: 'throwsUnexpectedly',
    method: 'GET',
    path: '/boom',
    visibility: 'public',
    summary: 'Throws an error no one declared',
    output: z.object({}),
    async handler() {
      throw new Error('password=hunter2 at db.internal:5432');
    },
  }),
  defineOperation({
    id: 'failsUndeclared',
    method: 'GET',
    path: '/undeclared',
    visibility: 'public',
    summary: 'Fails with a code it did not declare',
    output: z.object({}),
    errors: ['NOT_FOUND'],
    async handler(_input, { fail }) {
      // The type system stops this; at run time it must still not escape as CONFLICT.
      return (fail as (code: string, message: string) => never)('CONFLICT', 'undeclared');
    },
  }),
  defineOperation({
    id: 'leaksAColumn',
    method: 'GET',
    path: '/leaky',
    visibility: 'public',
    summary: 'Returns a field its output schema does not have, and misses one it has',
    output: z.object({ name: z.string(), id: z.string() }),
    async handler() {
      return { name: 'x', secretHash: 'abc' } as unknown as { name: string; id: string };
    },
  }),
  defineOperation({
    id: 'stripsExtras',
    method: 'GET',
    path: '/strict',
    visibility: 'public',
    summary: 'Returns a field more than its output schema',
    output: z.object({ name: z.string() }),
    async handler() {
      return { name: 'x', keyHash: 'abc' } as { name: string };
    },
  }),
];

let service: TestService;
let ws: Workspace;
/** What the pipeline logged, as the logger received it. */
const logged: { level: string; message: string; fields?: Record<string, unknown> }[] = [];
const capture = (level: string) => (message: string, fields?: Record<string, unknown>) => void logged.push({ level, message, fields });
const logger = { debug: capture('debug'), info: capture('info'), warn: capture('warn'), error: capture('error') };
let server: Server;
let base: string;

beforeAll(async () => {
  service = await startTestService();
  ws = await service.workspace();
  const { db } = service.service.core;
  const pipeline = new Pipeline({ ...service.service.core.app, db, logger }, new UsageRecorder(db, logger, 50), new RateLimiter(db, logger));
  const app = createHttpApp({
    authenticateKey: service.service.core.authenticate,
    // Keys only: this app serves the pipeline's tests, not the dashboard.
    authenticateSession: async () => null,
    forgeryRefusal: () => null,
    trustProxy: false,
    logger,
    operations,
    pipeline,
    openApiJson: '{}',
    mcp: await connectMcpOverHttp(createMcpServer(operations, pipeline, principalOfHttpCall, db), { db, logger, rateLimitOf: (principal) => pipeline.rateLimitOf(principal) }),
    mcpGuard: mcpOriginGuard({ bindHost: '127.0.0.1', publicUrl: () => base, configuredPublicUrl: undefined, allowedOrigins: [] }),
  });
  server = app.listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
});
afterAll(async () => {
  await new Promise((resolve) => server?.close(resolve));
  await service?.stop();
});

const internalBody = { code: 'INTERNAL', message: 'Something went wrong on our side; it has been logged.' };

describe('the pipeline', () => {
  it('answers an undeclared failure 500 INTERNAL, revealing nothing, and logs it', async () => {
    for (const [path, operation] of [['/boom', 'throwsUnexpectedly'], ['/undeclared', 'failsUndeclared'], ['/leaky', 'leaksAColumn']]) {
      logged.length = 0;
      const answer = await call(`${base}/api/v1${path}`, { key: ws.apiKey });
      expect(answer.status, path).toBe(500);
      expect(answer.json).toEqual(internalBody);
      expect(logged.filter((entry) => entry.level === 'error').map((entry) => [entry.message, entry.fields?.operation])).toEqual([['operation failed', operation]]);
      expect(JSON.stringify(logged, (_key, value) => (value instanceof Error ? value.message : value))).not.toContain(ws.apiKey);
    }
  });

  it('lets only the declared output fields leave', async () => {
    const answer = await call(`${base}/api/v1/strict`, { key: ws.apiKey });
    expect(answer.json).toEqual({ name: 'x' });
  });

  it('gives MCP the same INTERNAL body as a tool error', async () => {
    const answer = await call(`${base}/mcp`, {
      method: 'POST',
      key: ws.apiKey,
      body: { jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: 'throwsUnexpectedly', arguments: {} } },
    });
    expect(answer.status).toBe(200);
    expect(answer.json.id).toBe(7);
    expect(answer.json.result.isError).toBe(true);
    expect(JSON.parse(answer.json.result.content[0].text)).toEqual(internalBody);
  });
});

describe('defineOperation', () => {
  it('refuses a field that appears in two input parts', () => {
    expect(() =>
      defineOperation({
        id: 'clash',
        method: 'POST',
        path: '/things/{id}',
        summary: 'clash',
        input: { path: z.object({ id: z.string() }), body: z.object({ id: z.string() }) },
        output: z.object({}),
        handler: async () => ({}),
      }),
    ).toThrow(/appears in more than one/);
  });

  it('refuses a path whose parameters input.path does not declare', () => {
    expect(() =>
      defineOperation({ id: 'nopath', method: 'GET', path: '/things/{id}', summary: 'x', output: z.object({}), handler: async () => ({}) }),
    ).toThrow(/must name the same parameters/);
  });

  it('makes operations internal unless they say otherwise', () => {
    expect(defineOperation({ id: 'quiet', method: 'GET', path: '/q', summary: 'x', output: z.object({}), handler: async () => ({}) }).visibility).toBe('internal');
  });
});
