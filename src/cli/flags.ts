import { readFile } from 'node:fs/promises';
import { Option } from 'commander';
import { z } from 'zod';
import { CliFailure, EXIT, usage } from './failure.js';
import type { CliOperation, JsonSchema } from './manifest.js';

type Part = 'path' | 'query' | 'body';

/** One flag of a command: a field of the operation's input, or a property of an object field (`--shared.selected-integrations`). */
export interface FieldFlag {
  part: Part;
  /** Where the value goes: `['shared', 'selectedIntegrations']`. */
  at: string[];
  flag: string;
  schema: JsonSchema;
  repeatable: boolean;
  /** The value is JSON (objects, arrays of objects, unions). */
  json: boolean;
  /** The operation requires it (a field, not a property of one). */
  required: boolean;
  /** The flag takes no value and sets the field to this (the admin's `--on`: `postsNeedApproval` true). */
  constant?: unknown;
  /** The word that stands for null (the admin's `--max-runs none`). */
  nullWord?: string;
  /** A list's items in one value (the admin's `--channels ID,ID`), trimmed, empty ones dropped ('' is no item); else one a flag. */
  separator?: string;
}

export const kebab = (name: string) => name.replace(/([a-z0-9])([A-Z])/g, '$1-$2').toLowerCase();

/** The schema without its `null` alternative, and whether there was one. */
function unwrap(schema: JsonSchema): { schema: JsonSchema; nullable: boolean } {
  const options = schema.anyOf ?? schema.oneOf;
  if (!options) return { schema, nullable: false };
  const rest = options.filter((option) => option.type !== 'null');
  const nullable = rest.length < options.length;
  return { schema: rest.length === 1 ? { ...rest[0]!, description: schema.description ?? rest[0]!.description, default: schema.default } : schema, nullable };
}

const isScalar = (schema: JsonSchema): boolean =>
  ['string', 'integer', 'number', 'boolean'].includes(String(schema.type)) ||
  schema.enum !== undefined ||
  // A choice of forms of one text (a date-time, or a date) is a text all the same.
  (schema.anyOf ?? schema.oneOf ?? []).every((option) => option.type === 'string' || option.type === 'null') && (schema.anyOf ?? schema.oneOf) !== undefined;

/** The flags of an operation's input: every path, query and body field, and each property of an object field. */
export function flagsOf(operation: CliOperation): FieldFlag[] {
  const flags: FieldFlag[] = [];
  for (const part of ['path', 'query', 'body'] as const) {
    const required = operation.input[part]?.required ?? [];
    for (const [name, raw] of Object.entries(operation.input[part]?.properties ?? {})) {
      const { schema } = unwrap(raw);
      const array = schema.type === 'array';
      const item = array ? unwrap(schema.items ?? {}).schema : undefined;
      flags.push({ part, at: [name], flag: kebab(name), schema: raw, repeatable: array, json: array ? !isScalar(item!) : !isScalar(schema), required: required.includes(name) });
      if (schema.type === 'object' && schema.properties) {
        for (const [sub, subRaw] of Object.entries(schema.properties)) {
          const { schema: subSchema } = unwrap(subRaw);
          const subArray = subSchema.type === 'array';
          const scalar = subArray ? isScalar(unwrap(subSchema.items ?? {}).schema) : isScalar(subSchema);
          flags.push({ part, at: [name, sub], flag: `${kebab(name)}.${kebab(sub)}`, schema: subRaw, repeatable: subArray, json: !scalar, required: false });
        }
      }
    }
  }
  return flags;
}

/** The words of `--help` for a field: its description, type, bounds and default, from the operation's own schema. */
export function describeField(field: FieldFlag): string {
  if (field.constant !== undefined) return `Sets ${field.at.map(kebab).join('.')} to ${JSON.stringify(field.constant)}`;
  const { schema, nullable } = unwrap(field.schema);
  const item = schema.type === 'array' ? unwrap(schema.items ?? {}).schema : undefined;
  const typeOf = (s: JsonSchema): string =>
    s.enum ? `one of ${s.enum.join('|')}` : s.format ? `${s.type} (${s.format})` : s.type === 'object' ? 'JSON object' : String(s.type ?? 'JSON');
  const list = field.separator === undefined ? 'repeatable' : `separated by "${field.separator}"`;
  const type = item ? `${typeOf(item)}, ${list}${field.json ? ' (each a JSON value, or one JSON array)' : ''}` : typeOf(schema);
  const bounds = [
    schema.minimum !== undefined && schema.maximum !== undefined && schema.maximum < Number.MAX_SAFE_INTEGER ? `${schema.minimum} to ${schema.maximum}` : undefined,
    schema.minimum !== undefined && !(schema.maximum !== undefined && schema.maximum < Number.MAX_SAFE_INTEGER) ? `at least ${schema.minimum}` : undefined,
    schema.maxLength !== undefined ? `at most ${schema.maxLength} characters` : undefined,
    schema.minItems !== undefined ? `at least ${schema.minItems}` : undefined,
    schema.maxItems !== undefined ? `at most ${schema.maxItems}` : undefined,
    field.nullWord !== undefined ? `${field.nullWord} for null` : nullable ? 'null allowed (in --data)' : undefined,
    (field.schema.default ?? schema.default) !== undefined ? `default ${JSON.stringify(field.schema.default ?? schema.default)}` : undefined,
  ].filter(Boolean);
  const words = (field.schema.description ?? schema.description ?? '').replace(/\s+/g, ' ').trim();
  return `${words ? `${words} ` : ''}[${[type, ...bounds].join('; ')}]`.trim();
}

/** The commander option of a field; booleans take --flag and --no-flag. */
export function optionsOf(field: FieldFlag): Option[] {
  const { schema } = unwrap(field.schema);
  const help = `${describeField(field)}${field.required ? ' (required)' : ''}`;
  if (field.constant !== undefined) {
    const option = new Option(`--${field.flag}`, help);
    // It sets a value: not commander's negation of another flag, though named `--no-…` (the admin's `--no-approval`).
    option.negate = false;
    return [option];
  }
  if (schema.type === 'boolean') {
    return [new Option(`--${field.flag}`, help), new Option(`--no-${field.flag}`, `Sets ${field.flag} to false`).hideHelp()];
  }
  const option = new Option(`--${field.flag} <${field.json ? 'json' : 'value'}>`, help);
  if (field.repeatable) option.argParser((value: string, previous: string[] | undefined) => [...(previous ?? []), value]);
  return [option];
}

/** The option's key in commander's parsed options (it camel-cases each dash, dots kept). */
export const optionKey = (flag: string) => flag.replace(/-([a-z0-9])/g, (_, letter: string) => letter.toUpperCase());

/** A flag's text as its schema's type: numbers, JSON for objects and arrays of them; refused, naming the flag, otherwise. */
function convert(field: FieldFlag, text: string, schema = unwrap(field.schema).schema): unknown {
  if (field.json || schema.type === 'object') {
    try {
      return JSON.parse(text);
    } catch (error) {
      throw usage(`--${field.flag}: not JSON (${(error as Error).message}): ${text.slice(0, 80)}`);
    }
  }
  if (schema.type === 'integer' || schema.type === 'number') {
    const value = Number(text);
    if (text.trim() === '' || !Number.isFinite(value)) throw usage(`--${field.flag}: expected a number, got "${text}"`);
    return value;
  }
  return text;
}

function setAt(target: Record<string, unknown>, at: string[], value: unknown) {
  let node = target;
  for (const key of at.slice(0, -1)) {
    if (typeof node[key] !== 'object' || node[key] === null || Array.isArray(node[key])) node[key] = {};
    node = node[key] as Record<string, unknown>;
  }
  node[at.at(-1)!] = value;
}

/** All of standard input, as text. */
export async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

/** The option `--data` of a command that takes a body. */
export const dataOption = () => new Option('--data <json>', 'The whole body: JSON, @file.json, or - for stdin; flags override its fields');

/** `--data '<json>'`, `--data @file.json` or `--data -` (stdin): the whole body. */
export async function readData(data: string): Promise<Record<string, unknown>> {
  const text = data === '-' ? await readStdin() : data.startsWith('@') ? await readFile(data.slice(1), 'utf8').catch((error: Error) => {
    throw usage(`--data ${data}: ${error.message}`);
  }) : data;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw usage(`--data: not JSON (${(error as Error).message})`);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw usage('--data: the body must be a JSON object');
  return value as Record<string, unknown>;
}

export interface Input {
  path: Record<string, unknown>;
  query: Record<string, unknown>;
  body: Record<string, unknown> | undefined;
}

/** The request's parts from --data, the flags (which override it) and positional path parameters. */
export function inputOf(operation: CliOperation, flags: FieldFlag[], options: Record<string, unknown>, positional: string[], data?: Record<string, unknown>): Input {
  const input: Input = { path: {}, query: {}, body: operation.method === 'GET' ? undefined : { ...(data ?? {}) } };
  if (data && operation.method === 'GET') throw usage('--data: a GET takes no body; give its fields as flags');
  const pathNames = Object.keys(operation.input.path?.properties ?? {});
  positional.forEach((value, index) => (input.path[pathNames[index]!] = value));
  for (const field of flags) {
    const given = options[optionKey(field.flag)];
    if (given === undefined) continue;
    const { schema } = unwrap(field.schema);
    let value: unknown;
    if (field.constant !== undefined) value = field.constant;
    else if (typeof given === 'boolean') value = given;
    else if (field.nullWord !== undefined && String(given) === field.nullWord) value = null;
    else if (field.repeatable) {
      const item = unwrap(schema.items ?? {}).schema;
      const texts = field.separator === undefined ? (given as string[]) : (given as string[]).flatMap((text) => text.split(field.separator!).map((part) => part.trim()).filter(Boolean));
      value = texts.flatMap((text) => {
        const parsed = convert(field, text, field.json ? schema : item);
        // One JSON array, or one item per flag.
        return field.json && Array.isArray(parsed) ? parsed : [parsed];
      });
    } else value = convert(field, given as string);
    setAt(field.part === 'body' ? (input.body ??= {}) : input[field.part], field.at, value);
  }
  return input;
}

const validators = new Map<JsonSchema, z.ZodType>();

/**
 * Checks the input with the operation's own schema (carried in src/cli/operations.json as JSON Schema and read back by
 * zod), before anything is sent; a refusal names the flag and the rule. What JSON Schema cannot say is left to the server.
 */
export function validate(operation: CliOperation, input: Input): void {
  const problems: string[] = [];
  for (const part of ['path', 'query', 'body'] as const) {
    const schema = operation.input[part];
    const value = input[part];
    if (!schema || value === undefined) continue;
    let validator = validators.get(schema);
    if (!validator) validators.set(schema, (validator = z.fromJSONSchema(schema as Parameters<typeof z.fromJSONSchema>[0])));
    const parsed = validator.safeParse(value);
    if (parsed.success) continue;
    const seen = new Set<string>();
    for (const issue of parsed.error.issues) {
      const [first, ...rest] = issue.path.map(String);
      const where = issue.code === 'unrecognized_keys' ? issue.keys.map((key) => `--${kebab(key)}`).join(', ') : first === undefined ? part : `--${kebab(first)}${rest.map((key) => (/^\d+$/.test(key) ? `[${key}]` : `.${key}`)).join('')}`;
      // JSON Schema says a format twice (format and pattern): one message per field is enough.
      if (seen.has(where)) continue;
      seen.add(where);
      problems.push(issue.code === 'unrecognized_keys' ? `${where}: not a field of this command` : `${where}: ${issue.message}`);
    }
  }
  if (problems.length) throw new CliFailure('VALIDATION_ERROR', problems.join('; '), EXIT.usage);
}
