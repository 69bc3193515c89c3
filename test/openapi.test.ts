import { Validator } from '@seriousme/openapi-schema-validator';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, startTestService, type TestService } from './support/service.js';

let service: TestService;
let doc: any;

beforeAll(async () => {
  service = await startTestService();
  const answer = await call(`${service.api}/openapi.json`);
  expect(answer.status).toBe(200);
  expect(answer.headers.get('content-type')).toMatch(/application\/json/);
  doc = answer.json;
});
afterAll(() => service?.stop());

/** The contract's key-reachable paths that exist so far. */
const publicOperations: [string, string][] = [
  ['get', '/users/me'],
  ['get', '/tags'],
  ['get', '/tags/{id}'],
  ['get', '/usage'],
  ['get', '/usage/events'],
  ['get', '/events'],
  ['get', '/integrations'],
  ['post', '/integrations/connect'],
  ['get', '/platforms'],
  ['get', '/posts'],
  ['post', '/posts'],
  ['get', '/posts/{id}'],
  ['patch', '/posts/{id}'],
  ['delete', '/posts/{id}'],
  ['post', '/posts/schedules/{scheduleId}/retry'],
  ['post', '/posts/schedules/{scheduleId}/reschedule'],
  ['get', '/schedules'],
  ['get', '/schedules/{id}'],
  ['delete', '/schedules/{id}'],
  ['post', '/uploads/initiate'],
  ['post', '/uploads/complete'],
  ['delete', '/uploads/{uploadId}'],
  ['post', '/uploads/from-url'],
  ['get', '/media/search'],
  ['post', '/uploads/from-provider'],
];

/** JSON Schema 2020-12's keywords, and the four the OpenAPI 3.1 Schema Object adds. */
const KEYWORDS = new Set(
  (
    '$schema $id $ref $defs $anchor $dynamicRef $dynamicAnchor $comment $vocabulary type enum const multipleOf maximum exclusiveMaximum ' +
    'minimum exclusiveMinimum maxLength minLength pattern maxItems minItems uniqueItems maxContains minContains maxProperties minProperties ' +
    'required dependentRequired properties patternProperties additionalProperties propertyNames items prefixItems contains unevaluatedItems ' +
    'unevaluatedProperties allOf anyOf oneOf not if then else dependentSchemas title description default deprecated readOnly writeOnly ' +
    'examples format contentEncoding contentMediaType contentSchema discriminator xml externalDocs example'
  ).split(' '),
);
const SCHEMA_MAPS = ['properties', '$defs', 'patternProperties', 'dependentSchemas'];
const SUBSCHEMAS = ['items', 'additionalProperties', 'not', 'contains', 'propertyNames', 'if', 'then', 'else', 'unevaluatedItems', 'unevaluatedProperties', 'contentSchema'];
const SCHEMA_LISTS = ['allOf', 'anyOf', 'oneOf', 'prefixItems'];

/** Adds to `found` every key of `schema` and its subschemas that neither JSON Schema nor OpenAPI defines. */
function unknownKeywords(schema: unknown, where: string, found: string[]) {
  if (typeof schema !== 'object' || schema === null) return;
  for (const [key, value] of Object.entries(schema)) {
    if (!KEYWORDS.has(key)) found.push(`${where}: ${key}`);
    if (SCHEMA_MAPS.includes(key)) for (const [name, sub] of Object.entries(value as object)) unknownKeywords(sub, `${where}.${name}`, found);
    if (SUBSCHEMAS.includes(key)) unknownKeywords(value, `${where}.${key}`, found);
    if (SCHEMA_LISTS.includes(key)) (value as unknown[]).forEach((sub, index) => unknownKeywords(sub, `${where}.${key}[${index}]`, found));
  }
}

const operation = (method: string, path: string) => doc.paths[path]?.[method];
const parameter = (method: string, path: string, name: string) =>
  operation(method, path).parameters.find((p: { name: string }) => p.name === name);

describe('GET /api/v1/openapi.json', () => {
  it('is a valid OpenAPI 3.1 document', async () => {
    const result = await new Validator().validate(doc);
    expect(result.errors ?? []).toEqual([]);
    expect(result.valid).toBe(true);
    expect(doc.openapi).toMatch(/^3\.1\./);
    expect(doc.servers).toEqual([{ url: '/api/v1' }]);
  });

  it('lists exactly the public operations, without needing a key', () => {
    const listed = Object.entries(doc.paths).flatMap(([path, item]) => Object.keys(item as object).map((method) => [method, path]));
    expect(listed.sort()).toEqual([...publicOperations].sort());
  });

  it('declares the x-api-key scheme and requires it everywhere', () => {
    expect(doc.components.securitySchemes.apiKey).toEqual(expect.objectContaining({ type: 'apiKey', in: 'header', name: 'x-api-key' }));
    expect(doc.security).toEqual([{ apiKey: [] }]);
  });

  it('gives each operation its declared errors under their statuses, with the { code, message } body', () => {
    for (const [method, path] of publicOperations) {
      const responses = operation(method, path).responses;
      expect(responses['401'].content['application/json'].schema.properties.code.enum).toEqual(['UNAUTHORIZED']);
      expect(responses['500'].content['application/json'].schema.required).toEqual(['code', 'message']);
    }
    expect(operation('get', '/tags/{id}').responses['404'].content['application/json'].schema.properties.code.enum).toEqual(['NOT_FOUND']);
    expect(operation('get', '/tags/{id}').responses['400'].content['application/json'].schema.properties.code.enum).toEqual(['VALIDATION_ERROR']);
    expect(operation('get', '/users/me').responses['404']).toBeUndefined();
  });

  it('carries the contract bounds and defaults of parameters', () => {
    expect(parameter('get', '/usage', 'days').schema).toEqual(expect.objectContaining({ type: 'integer', minimum: 1, maximum: 90, default: 30 }));
    expect(parameter('get', '/tags/{id}', 'id')).toEqual(expect.objectContaining({ in: 'path', required: true }));
    expect(parameter('get', '/tags/{id}', 'id').schema.format).toBe('uuid');
    expect(parameter('get', '/usage/events', 'limit').schema).toEqual(expect.objectContaining({ minimum: 1, maximum: 100 }));
    expect(parameter('get', '/usage/events', 'cursor').schema.type).toBe('integer');
  });

  it('declares the calendar cursor as a deep object, and array filters as repeated keys', () => {
    expect(parameter('get', '/schedules', 'cursor')).toEqual(expect.objectContaining({ in: 'query', style: 'deepObject', explode: true }));
    expect(parameter('get', '/schedules', 'limit').schema).toEqual(expect.objectContaining({ minimum: 10, maximum: 100, default: 20 }));
    expect(parameter('get', '/schedules', 'statuses').schema.type).toBe('array');
    expect(parameter('get', '/schedules/{id}', 'postId')).toEqual(expect.objectContaining({ in: 'query', required: true }));
    expect(operation('delete', '/schedules/{id}').requestBody).toEqual(expect.objectContaining({ required: false }));
    expect(operation('post', '/posts/schedules/{scheduleId}/retry').responses['409'].content['application/json'].schema.properties.code.enum).toEqual([
      'INVALID_STATE',
      'IDEMPOTENCY_KEY_IN_PROGRESS',
    ]);
  });

  it('describes the success bodies of the contract', () => {
    const usage = operation('get', '/usage').responses['200'].content['application/json'].schema;
    const resolved = usage.$ref ? doc.components.schemas[usage.$ref.split('/').pop()] : usage;
    expect(Object.keys(resolved.properties).sort()).toEqual(['api', 'mcp', 'windowDays']);
    const tags = operation('get', '/tags').responses['200'].content['application/json'].schema;
    expect(tags.required).toEqual(['items', 'nextCursor']);
  });

  it('describes every parameter and tool argument, in schemas made only of JSON Schema and OpenAPI keywords', async () => {
    const ws = await service.workspace();
    const listed = await call(`${service.base}/mcp`, { method: 'POST', key: ws.apiKey, body: { jsonrpc: '2.0', id: 1, method: 'tools/list' } });
    const tools: { name: string; inputSchema: any; outputSchema: any }[] = listed.json.result.tools;
    expect(tools.length).toBe(publicOperations.length);

    const undescribed: string[] = [];
    for (const [method, path] of publicOperations) {
      for (const { name, in: where, description } of operation(method, path).parameters ?? []) {
        if (!description?.trim()) undescribed.push(`openapi ${method} ${path} ${where}.${name}`);
      }
    }
    for (const tool of tools) {
      for (const [name, schema] of Object.entries<any>(tool.inputSchema.properties ?? {})) {
        if (!schema.description?.trim()) undescribed.push(`tool ${tool.name} ${name}`);
      }
    }
    expect(undescribed).toEqual([]);

    const unknown: string[] = [];
    const schemasOfDocument = [
      ...Object.entries(doc.components.schemas).map(([name, schema]) => [`components.schemas.${name}`, schema]),
      ...publicOperations.flatMap(([method, path]) => {
        const { parameters = [], requestBody, responses } = operation(method, path);
        const where = `${method} ${path}`;
        return [
          ...parameters.map((parameter: any) => [`${where} ${parameter.name}`, parameter.schema]),
          ...Object.values<any>(requestBody?.content ?? {}).map((content) => [`${where} body`, content.schema]),
          ...Object.entries<any>(responses).flatMap(([status, response]) => [
            ...Object.values<any>(response.content ?? {}).map((content) => [`${where} ${status}`, content.schema]),
            ...Object.entries<any>(response.headers ?? {}).map(([name, header]) => [`${where} ${status} ${name}`, header.schema]),
          ]),
        ];
      }),
    ];
    const schemasOfTools = tools.flatMap((tool) => [[`tool ${tool.name} input`, tool.inputSchema], [`tool ${tool.name} output`, tool.outputSchema]]);
    for (const [where, schema] of [...schemasOfDocument, ...schemasOfTools]) unknownKeywords(schema, where, unknown);
    expect(unknown).toEqual([]);
  });

  it('matches the committed snapshot (update it on purpose with `npx vitest -u`)', async () => {
    await expect(`${JSON.stringify(doc, null, 2)}\n`).toMatchFileSnapshot('./__snapshots__/openapi.json');
  });
});
