import { z } from 'zod';

/**
 * REST path and query values arrive as text; MCP arguments and JSON bodies arrive typed. An operation declares
 * each field once, with its real type; `fromText` derives the schema REST validates path and query with: it
 * turns text into the declared type where the text says so plainly, then validates with the same declaration.
 * Text that does not convert is passed on as it is, so the error names the field and the type it expected.
 *
 * - numbers and integers: decimal text (`63`, `-2`, `1.5`);
 * - booleans: `true` or `false`;
 * - arrays: repeated keys (`status=A&status=B`), comma-separated values (`status=A,B`), or both; empty values
 *   are dropped, so `status=` is an empty array;
 * - objects: deep-object keys (`cursor[id]=…&cursor[scheduledAt]=…`) or one JSON text (`cursor={"id":…}`).
 */
export function fromText<T extends z.ZodObject>(schema: T): z.ZodType<z.output<T>, unknown> {
  const root = z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' }) as JsonSchema;
  return z.preprocess((raw) => convert(raw, root, root), schema) as unknown as z.ZodType<z.output<T>, unknown>;
}

interface JsonSchema {
  type?: string | string[];
  $ref?: string;
  anyOf?: JsonSchema[];
  oneOf?: JsonSchema[];
  items?: JsonSchema;
  properties?: Record<string, JsonSchema>;
  $defs?: Record<string, JsonSchema>;
}

const DECIMAL = /^-?\d+(\.\d+)?$/;

function convert(value: unknown, schema: JsonSchema, root: JsonSchema): unknown {
  const resolved = resolve(schema, root);
  const types = typesOf(resolved, root);
  if (types.has('string')) return value; // text is already the declared type
  if (types.has('array')) {
    const items = resolved.items ?? [resolved.anyOf, resolved.oneOf].flat().find((member) => member?.items)?.items ?? {};
    // Empty values are no values: `status=` and `status=A,,B` mean [] and [A, B].
    const parts = (Array.isArray(value) ? value : [value]).flatMap((part) => (typeof part === 'string' ? part.split(',').filter(Boolean) : [part]));
    return typeof value === 'string' || Array.isArray(value) ? parts.map((part) => convert(part, items, root)) : value;
  }
  if (typeof value === 'string') {
    if ((types.has('number') || types.has('integer')) && DECIMAL.test(value)) return Number(value);
    if (types.has('boolean') && (value === 'true' || value === 'false')) return value === 'true';
    if (types.has('object')) return parseJson(value);
    return value;
  }
  if (isPlainObject(value) && types.has('object')) {
    const properties = propertiesOf(resolved, root);
    return Object.fromEntries(Object.entries(value).map(([name, field]) => [name, properties[name] ? convert(field, properties[name], root) : field]));
  }
  return value;
}

function resolve(schema: JsonSchema, root: JsonSchema): JsonSchema {
  const name = schema.$ref?.match(/^#\/\$defs\/(.+)$/)?.[1];
  return name && root.$defs?.[name] ? resolve(root.$defs[name], root) : schema;
}

/** Every JSON type the schema admits, through unions and nullables. */
function typesOf(schema: JsonSchema, root: JsonSchema): Set<string> {
  const own = schema.type === undefined ? [] : [schema.type].flat();
  const members = [...(schema.anyOf ?? []), ...(schema.oneOf ?? [])].flatMap((member) => [...typesOf(resolve(member, root), root)]);
  return new Set([...own, ...members].filter((type) => type !== 'null'));
}

function propertiesOf(schema: JsonSchema, root: JsonSchema): Record<string, JsonSchema> {
  const members = [schema, ...(schema.anyOf ?? []), ...(schema.oneOf ?? [])].map((member) => resolve(member, root));
  return Object.assign({}, ...members.map((member) => member.properties ?? {}));
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

const isPlainObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);
