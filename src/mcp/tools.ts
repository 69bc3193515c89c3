import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import { declaredErrors, type Operation } from '../registry/operation.js';

/**
 * The public operations as MCP tools, built once: names, descriptions, JSON Schemas and annotations are
 * computed here at start, never per request.
 */
export function toolsOf(operations: readonly Operation[]): Tool[] {
  return operations
    .filter((operation) => operation.visibility === 'public')
    .map((operation) => ({
      name: operation.id,
      title: operation.summary,
      description: [operation.summary, operation.description, `Error codes: ${declaredErrors(operation, 'mcp').join(', ')}.`]
        .filter(Boolean)
        .join('\n\n'),
      inputSchema: rootObject(z.toJSONSchema(operation.arguments, { io: 'input' })) as Tool['inputSchema'],
      // A shape an answer repeats (a schedule in every post, media in every attachment) is written once under $defs.
      outputSchema: rootObject(z.toJSONSchema(wrapped(operation.output), { io: 'output', reused: 'ref' })) as Tool['outputSchema'],
      annotations: {
        readOnlyHint: operation.method === 'GET',
        destructiveHint: operation.method === 'DELETE' || operation.method === 'PUT',
        idempotentHint: operation.method !== 'POST' && operation.method !== 'PATCH',
        openWorldHint: false,
      },
    }));
}

/** MCP wants an object at the root of `outputSchema`: an array output is given as `{ items }`. */
function wrapped(output: z.ZodType): z.ZodType {
  return output instanceof z.ZodArray ? z.object({ items: output }) : output;
}

/** A root that is only a `$ref` to a named schema (a resource with an id) is inlined, so `type: object` is at the root. */
function rootObject(schema: Record<string, unknown>): Record<string, unknown> {
  const ref = typeof schema.$ref === 'string' ? /^#\/\$defs\/(.+)$/.exec(schema.$ref)?.[1] : undefined;
  if (!ref) return schema;
  const { [ref]: root, ...defs } = schema.$defs as Record<string, Record<string, unknown>>;
  const { $ref: _ref, $defs: _defs, ...rest } = schema;
  return { ...rest, ...root, ...(Object.keys(defs).length && { $defs: defs }) };
}
