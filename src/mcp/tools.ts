import type { Tool } from '@modelcontextprotocol/server';
import { z } from 'zod';
import { declaredErrors, type Operation } from '../registry/operation.js';

/**
 * The public operations as MCP tools, built once: names, descriptions, JSON Schemas and annotations are computed
 * here at start, never per request. An agent reads the whole list before its first call, so every byte of it counts
 * (docs/mcp.md, "A small tool list"; test/mcp-tool-list.test.ts holds it to its budget).
 */
export function toolsOf(operations: readonly Operation[]): Tool[] {
  return operations
    .filter((operation) => operation.visibility === 'public')
    .map((operation) => ({
      name: operation.id,
      title: operation.summary,
      description: descriptionOf(operation),
      inputSchema: inputSchemaOf(operation.arguments) as Tool['inputSchema'],
      outputSchema: outputSchemaOf(operation.output) as Tool['outputSchema'],
      annotations: annotationsOf(operation),
    }));
}

type Schema = Record<string, unknown>;

function descriptionOf(operation: Operation): string {
  return [operation.summary, operation.description, `Error codes: ${declaredErrors(operation, 'mcp').join(', ')}.`].filter(Boolean).join('\n\n');
}

function annotationsOf(operation: Operation): Tool['annotations'] {
  return {
    readOnlyHint: operation.method === 'GET',
    destructiveHint: operation.method === 'DELETE' || operation.method === 'PUT',
    idempotentHint: operation.method !== 'POST' && operation.method !== 'PATCH',
    openWorldHint: false,
  };
}

/** The arguments, every one described, self-contained and plain: a model is handed this schema as it is, so no `$ref`. */
function inputSchemaOf(input: z.ZodType): Schema {
  return mapSchemas(inlined(z.toJSONSchema(input, { io: 'input' })), (node) => plainRecord(withoutRedundancy(node)));
}

/**
 * The answer, exact (every answer validates against it), each named shape (a schema's `.meta({ id })`: Post, Schedule,
 * Media, Variant…) written once under `$defs`; a shape a tool repeats must be named (test/mcp-tool-list.test.ts).
 * Without descriptions: a host validates answers with it and most never show it to the model; what an agent must know
 * of an answer is in the tool's description, and the REST document keeps every field's description.
 */
function outputSchemaOf(output: z.ZodType): Schema {
  const tidy = (node: Schema) => factoredUnion(nullableType(plainRecord(enumType(undescribed(withoutRedundancy(node))))));
  return rootObject(mapSchemas(z.toJSONSchema(wrapped(output), { io: 'output', reused: 'inline' }), tidy));
}

/** MCP wants an object at the root of `outputSchema`: an array output is given as `{ items }`. */
function wrapped(output: z.ZodType): z.ZodType {
  return output instanceof z.ZodArray ? z.object({ items: output }) : output;
}

/** The keywords whose value is a schema, a list of schemas, or a map of names to schemas. */
const ONE_SCHEMA = ['items', 'additionalProperties', 'not', 'propertyNames', 'contains', 'unevaluatedProperties'];
const SCHEMA_LIST = ['anyOf', 'oneOf', 'allOf', 'prefixItems'];
const SCHEMA_MAP = ['properties', '$defs', 'patternProperties'];

const isSchema = (value: unknown): value is Schema => typeof value === 'object' && value !== null && !Array.isArray(value);

/** `rewrite` applied to every sub-schema of `schema`, innermost first, then to `schema` itself. */
function mapSchemas(schema: Schema, rewrite: (schema: Schema) => Schema): Schema {
  const rewritten = (value: unknown) => (isSchema(value) ? mapSchemas(value, rewrite) : value);
  const out: Schema = {};
  for (const [key, value] of Object.entries(schema)) {
    if (ONE_SCHEMA.includes(key)) out[key] = rewritten(value);
    else if (SCHEMA_LIST.includes(key) && Array.isArray(value)) out[key] = value.map(rewritten);
    else if (SCHEMA_MAP.includes(key) && isSchema(value)) out[key] = Object.fromEntries(Object.entries(value).map(([name, sub]) => [name, rewritten(sub)]));
    else out[key] = value;
  }
  return rewrite(out);
}

/** Formats that say all that the pattern zod writes beside them says. */
const SELF_SAYING_FORMATS = ['uuid', 'date-time', 'date'];

/**
 * What zod writes that says nothing more: `$schema` (MCP's dialect is 2020-12 when none is named, and zod writes
 * 2020-12), a pattern beside a format that says it, and the ±(2^53 - 1) bounds it puts on every `.int()`.
 */
function withoutRedundancy(schema: Schema): Schema {
  const { $schema: _dialect, ...rest } = schema;
  if (SELF_SAYING_FORMATS.includes(rest.format as string)) delete rest.pattern;
  if (rest.minimum === Number.MIN_SAFE_INTEGER) delete rest.minimum;
  if (rest.maximum === Number.MAX_SAFE_INTEGER) delete rest.maximum;
  return rest;
}

function undescribed(schema: Schema): Schema {
  const { description: _description, ...rest } = schema;
  return rest;
}

/** An enum's values say their type. */
function enumType(schema: Schema): Schema {
  const { type, ...rest } = schema;
  return Array.isArray(schema.enum) && schema.enum.every((value) => typeof value === type) ? rest : schema;
}

/** A record of anything (`settings`): JSON keys are strings and any value is allowed, without saying so. */
function plainRecord(schema: Schema): Schema {
  const { propertyNames, additionalProperties, ...rest } = schema;
  const anything = JSON.stringify(propertyNames) === '{"type":"string"}' && JSON.stringify(additionalProperties) === '{}';
  return schema.type === 'object' && !('properties' in schema) && anything ? rest : schema;
}

/**
 * A union of objects with the same properties (an event: `id`, `type`, `createdAt`, `workspaceId`, `data`) as one
 * object whose branches hold only the properties that differ (`type` and `data`): as exact, the rest written once.
 */
function factoredUnion(schema: Schema): Schema {
  const { oneOf, ...rest } = schema;
  if (!Array.isArray(oneOf) || oneOf.length < 2 || !oneOf.every(isObjectShape)) return schema;
  const [first, ...others] = oneOf as (Schema & { properties: Schema })[];
  const names = Object.keys(first!.properties);
  const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);
  const alike = others.every(
    (other) => same(Object.keys(other.properties), names) && same(other.required, first!.required) && same(other.additionalProperties, first!.additionalProperties),
  );
  if (!alike) return schema;
  const differing = names.filter((name) => others.some((other) => !same(other.properties[name], first!.properties[name])));
  return {
    ...rest,
    ...first,
    // A property that differs is allowed here, and said in each branch.
    properties: Object.fromEntries(names.map((name) => [name, differing.includes(name) ? {} : first!.properties[name]])),
    oneOf: [first!, ...others].map(({ properties }) => ({ properties: Object.fromEntries(differing.map((name) => [name, properties[name]])) })),
  };
}

/**
 * `anyOf [X, { type: "null" }]` written as X that also takes null: `type: [X's type, "null"]`, which zod itself writes
 * for a plain nullable string, or null among an enum's values. Not for a `$ref` or an array.
 */
function nullableType(schema: Schema): Schema {
  const { anyOf, ...rest } = schema;
  if (!Array.isArray(anyOf) || anyOf.length !== 2 || JSON.stringify(anyOf[1]) !== '{"type":"null"}') return schema;
  const value = anyOf[0] as Schema;
  if (Array.isArray(value.enum)) return { ...value, ...rest, enum: [...value.enum, null] };
  if (typeof value.type !== 'string' || value.type === 'array' || 'const' in value) return schema;
  return { ...value, ...rest, type: [value.type, 'null'] };
}

/** `#/$defs/Name` → `Name`. */
const refName = (ref: unknown) => (typeof ref === 'string' ? /^#\/\$defs\/(.+)$/.exec(ref)?.[1] : undefined);

/** Every `$ref` replaced by what it refers to, and `$defs` dropped (none of our schemas is recursive). */
function inlined(schema: Schema): Schema {
  const { $defs = {}, ...root } = schema as Schema & { $defs?: Record<string, Schema> };
  const resolve = (node: Schema): Schema => {
    const name = refName(node.$ref);
    if (!name) return node;
    const { $ref: _ref, ...siblings } = node;
    return { ...mapSchemas($defs[name]!, resolve), ...siblings };
  };
  return mapSchemas(root, resolve);
}

function isObjectShape(node: unknown): boolean {
  return isSchema(node) && node.type === 'object' && isSchema(node.properties);
}

/** A root that is only a `$ref` to a named schema (a resource with an id) is inlined, so `type: object` is at the root. */
function rootObject(schema: Schema): Schema {
  const ref = refName(schema.$ref);
  if (!ref) return schema;
  const { [ref]: root, ...defs } = schema.$defs as Record<string, Schema>;
  const { $ref: _ref, $defs: _defs, ...rest } = schema;
  return { ...rest, ...root, ...(Object.keys(defs).length && { $defs: defs }) };
}
