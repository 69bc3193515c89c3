import { z } from 'zod';
import { createDocument, type ZodOpenApiOperationObject, type ZodOpenApiPathsObject } from 'zod-openapi';
import { errorCatalogue, type ErrorCode } from '../registry/errors.js';
import { idempotencyKey } from '../registry/idempotency.js';
import { declaredErrors, type Operation } from '../registry/operation.js';
import { SCOPES, scopeOf } from '../oauth/scopes.js';

/** The OpenAPI 3.1 document of the public operations, generated once from the registry. */
export function openApiDocument(operations: readonly Operation[], version: string) {
  const paths: ZodOpenApiPathsObject = {};
  for (const operation of operations.filter((op) => op.visibility === 'public')) {
    const item = (paths[operation.path] ??= {});
    item[operation.method.toLowerCase() as 'get'] = describeOperation(operation);
  }
  return withDeepObjects(createDocument({
    openapi: '3.1.0',
    info: {
      title: 'Postwise API',
      version,
      description:
        'Create posts, attach media, and publish or schedule them to connected channels. Every operation here is also an MCP tool ' +
        'of the same name at POST /mcp. Errors are `{ code, message }`; branch on `code`.\n\n' +
        'Query parameters are text, read as their declared type: numbers in decimal, booleans as `true`/`false`, arrays as ' +
        'repeated keys (`status=A&status=B`) or comma-separated values (`status=A,B`), objects as deep-object keys ' +
        '(`cursor[id]=...`) or one JSON text. Unknown query parameters are ignored; unknown body fields are refused. ' +
        'A body sent with a GET is not read. The request line and headers together may be at most 16 KiB ' +
        '(`431 REQUEST_HEADERS_TOO_LARGE` beyond).',
    },
    servers: [{ url: '/api/v1' }],
    security: [{ apiKey: [] }],
    components: {
      securitySchemes: {
        apiKey: { type: 'apiKey', in: 'header', name: 'x-api-key', description: 'A workspace API key (`pw_...`).' },
        oauth2: {
          type: 'oauth2',
          description:
            'An OAuth 2.1 access token of an app a member connected (authorization code with PKCE, `resource` set to this API: ' +
            'docs/mcp.md "Connect from a hosted agent"). Where the service offers OAuth (HTTPS, or a loopback address).',
          flows: { authorizationCode: { authorizationUrl: '/oauth/authorize', tokenUrl: '/oauth/token', refreshUrl: '/oauth/token', scopes: { ...SCOPES } } },
        },
      },
    },
    paths,
  }));
}

type Document = ReturnType<typeof createDocument>;

/**
 * An object in the query is read as deep-object keys (`cursor[id]=...`; src/registry/text-input.ts), so every object
 * parameter says so. Said here, for all of them, rather than in each schema's metadata, where it would leak into the
 * JSON Schema of the parameter and of its MCP tool.
 */
function withDeepObjects(document: Document): Document {
  const schemas = (document.components?.schemas ?? {}) as Record<string, { type?: unknown }>;
  const typeOf = (schema: { type?: unknown; $ref?: string }) => (schema.$ref ? schemas[schema.$ref.split('/').at(-1)!]?.type : schema.type);
  for (const item of Object.values(document.paths ?? {})) {
    for (const operation of Object.values(item ?? {}) as { parameters?: { in: string; schema?: object; style?: string; explode?: boolean }[] }[]) {
      for (const parameter of operation.parameters ?? []) {
        if (parameter.in === 'query' && parameter.schema && typeOf(parameter.schema) === 'object') Object.assign(parameter, { style: 'deepObject', explode: true });
      }
    }
  }
  return document;
}

/** What an operation without body fields (a DELETE, an action) takes: no body, or `{}`; any field is refused. */
const noFieldsBody = {
  required: false,
  description: 'This operation takes no body fields: send no body, or `{}`. A field is refused with `VALIDATION_ERROR`.',
  content: { 'application/json': { schema: z.strictObject({}) } },
};

function describeOperation(operation: Operation): ZodOpenApiOperationObject {
  const { path, query, body } = operation.input;
  return {
    operationId: operation.id,
    summary: operation.summary,
    security: [{ apiKey: [] }, { oauth2: [scopeOf(operation)] }],
    ...(operation.description && { description: operation.description }),
    tags: [operation.path.split('/')[1]!],
    ...((path || query || operation.idempotent) && {
      requestParams: {
        ...(path && { path }),
        ...(query && { query }),
        ...(operation.idempotent && { header: z.object({ 'idempotency-key': idempotencyKey.optional().meta({ description: idempotencyKey.description }) }) }),
      },
    }),
    ...(body && { requestBody: { required: true, content: { 'application/json': { schema: body } } } }),
    ...(!body && operation.readsBody && { requestBody: noFieldsBody }),
    responses: {
      [operation.status]: {
        description: operation.status === 201 ? 'Created' : 'OK',
        headers: headersOf(operation.status),
        content: { 'application/json': { schema: operation.output } },
      },
      ...errorResponses(declaredErrors(operation, 'rest')),
    },
  };
}

/** One response per status, its body's `code` limited to the codes that status carries for this operation. */
function errorResponses(codes: ErrorCode[]) {
  const byStatus = new Map<number, ErrorCode[]>();
  for (const code of codes) {
    const status = errorCatalogue[code].status;
    byStatus.set(status, [...(byStatus.get(status) ?? []), code]);
  }
  return Object.fromEntries(
    [...byStatus].map(([status, statusCodes]) => [
      String(status),
      {
        description: statusCodes.map((code) => `\`${code}\`: ${errorCatalogue[code].description}`).join(' '),
        ...(headersOf(status) && { headers: headersOf(status) }),
        content: {
          'application/json': {
            schema: z.object({ code: z.enum(statusCodes as [ErrorCode, ...ErrorCode[]]), message: z.string() }),
          },
        },
      },
    ]),
  );
}

/** The rate-limit headers (src/http/rate-limit-headers.ts), declared once as components. */
const rateLimitHeaders = {
  'RateLimit-Policy': z.string().meta({
    id: 'RateLimitPolicy',
    description:
      'The rate-limit policy of the caller\'s bucket (IETF draft-ietf-httpapi-ratelimit-headers): `programmatic` for API keys and MCP, ' +
      '`browser` for dashboard sessions; `q` requests per window of `w` seconds, from the workspace\'s plan.',
    example: '"programmatic";q=300;w=60',
  }),
  RateLimit: z.string().meta({
    id: 'RateLimit',
    description: 'What is left of the policy\'s quota after this request: `r` requests, for the next `t` seconds (then the window starts anew).',
    example: '"programmatic";r=299;t=60',
  }),
};
const retryAfter = z.string().meta({ id: 'RetryAfter', description: 'Seconds until the window starts anew.', example: '17' });

/** Every answer to a call with a valid key carries them: all but a 401 (no valid key) and a 431 (refused before the key is read). */
function headersOf(status: number) {
  if (status === 401 || status === 431) return undefined;
  return z.object({ ...rateLimitHeaders, ...(status === 429 && { 'Retry-After': retryAfter }) });
}
