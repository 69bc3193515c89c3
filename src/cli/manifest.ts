import { z } from 'zod';
import manifest from './operations.json' with { type: 'json' };

/** A JSON Schema as z.toJSONSchema writes one (the subset the client reads). */
export interface JsonSchema {
  type?: string | string[];
  properties?: Record<string, JsonSchema>;
  required?: string[];
  items?: JsonSchema;
  anyOf?: JsonSchema[];
  oneOf?: JsonSchema[];
  enum?: unknown[];
  const?: unknown;
  default?: unknown;
  description?: string;
  minimum?: number;
  maximum?: number;
  minLength?: number;
  maxLength?: number;
  minItems?: number;
  maxItems?: number;
  format?: string;
  [key: string]: unknown;
}

/** An operation as tools/generate-client.ts writes it into src/cli/operations.json. */
export interface CliOperation {
  id: string;
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  path: string;
  visibility: 'public' | 'internal';
  summary: string;
  description: string;
  idempotent: boolean;
  input: { path?: JsonSchema; query?: JsonSchema; body?: JsonSchema };
}

// Imported, not read from disk, so that the client's bundle (bin/postwise.mjs) carries it.
export const operations = manifest as CliOperation[];

/** What the registry declares of an operation (src/registry/operation.ts), as far as its entry here needs. */
interface DeclaredOperation extends Omit<CliOperation, 'description' | 'input'> {
  description: string | undefined;
  input: { path?: z.ZodType; query?: z.ZodType; body?: z.ZodType };
}

/**
 * An operation's entry: its input as JSON Schema, from its own zod schemas. tools/generate-client.ts writes every
 * operation's into src/cli/operations.json; the admin command (src/admin) makes its commands from the same.
 */
export function manifestEntryOf(operation: DeclaredOperation): CliOperation {
  const schemaOf = (part: z.ZodType | undefined) => (part ? (z.toJSONSchema(part, { io: 'input', unrepresentable: 'any' }) as JsonSchema) : undefined);
  const { id, method, path, visibility, summary, description, idempotent, input } = operation;
  return {
    id,
    method,
    path,
    visibility,
    summary,
    description: description ?? '',
    idempotent,
    input: { path: schemaOf(input.path), query: schemaOf(input.query), body: schemaOf(input.body) },
  };
}

const words = (camel: string) => camel.replace(/([a-z0-9])([A-Z])/g, '$1 $2').toLowerCase().split(' ');
const singular = (word: string) => word.replace(/ies$/, 'y').replace(/s$/, '');

/**
 * The command of an operation, by one rule (docs/cli.md): the resource is the last fixed segment of the path before
 * its first parameter, or its first segment when it has none (`/posts/schedules/{scheduleId}/reschedule` → schedules,
 * `/users/me` → users); the action is the id's verb (`rescheduleSchedule` → reschedule), lengthened by the id's other
 * words that are not the resource's name when two operations of one resource would share it (`connectBluesky` →
 * `integrations connect-bluesky`, beside `connectIntegration` → `integrations connect`).
 */
export function commandOf(operation: CliOperation, all: CliOperation[] = operations): { resource: string; action: string } {
  const resource = resourceOf(operation.path);
  const [verb] = words(operation.id);
  const sharing = all.filter((other) => other !== operation && resourceOf(other.path) === resource && words(other.id)[0] === verb);
  if (!sharing.length) return { resource, action: verb! };
  const own = new Set(resource.split('-').flatMap((word) => [word, singular(word)]));
  const rest = words(operation.id).slice(1).filter((word) => !own.has(word) && !own.has(singular(word)));
  return { resource, action: [verb, ...rest].join('-') };
}

function resourceOf(path: string): string {
  const segments = path.split('/').filter(Boolean);
  const firstParameter = segments.findIndex((segment) => segment.startsWith('{'));
  return firstParameter > 0 ? segments[firstParameter - 1]! : segments[0]!;
}
