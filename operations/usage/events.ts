import { z } from 'zod';
import { iso, limit, timestamp, uuid } from '../../src/registry/fields.js';
import { defineOperation } from '../../src/registry/operation.js';

const UsageEvent = z
  .object({
    id: z.number().int(),
    surface: z.enum(['api', 'mcp']),
    operation: z.string().nullable().meta({ description: 'The operation called; null when the call reached none (an unknown path or tool).' }),
    status: z.number().int().meta({ description: 'The HTTP status the call answered (for MCP, the status REST would have answered).' }),
    apiKeyId: uuid.nullable(),
    createdAt: timestamp,
  })
  .meta({ id: 'UsageEvent' });

export default defineOperation({
  id: 'listUsageEvents',
  method: 'GET',
  path: '/usage/events',
  visibility: 'public',
  summary: 'The log of calls made with the workspace\'s API keys, newest first',
  description:
    'Reachable with an API key, so an integrator or agent can see what its own calls answered. ' +
    'Pass the last item\'s `id` (also given as `nextCursor`) as `cursor` for the next page; `nextCursor` is null on the last page.',
  input: {
    query: z.object({
      limit: limit(),
      cursor: z.number().int().min(1).optional().meta({ description: 'The id of the last item of the previous page.' }),
    }),
  },
  output: z.object({ items: z.array(UsageEvent), nextCursor: z.number().int().nullable() }),
  async handler({ limit, cursor }, { db, auth }) {
    const rows = await db<{ id: string; surface: 'api' | 'mcp'; operation: string | null; status: number; apiKeyId: string | null; createdAt: Date }[]>`
      SELECT id, surface, operation, status, api_key_id, created_at FROM usage_events
      WHERE organization_id = ${auth.workspaceId} ${cursor ? db`AND id < ${cursor}` : db``}
      ORDER BY id DESC LIMIT ${limit + 1}`;
    const items = rows.slice(0, limit).map((row) => ({ ...row, id: Number(row.id), createdAt: iso(row.createdAt) }));
    return { items, nextCursor: rows.length > limit ? items.at(-1)!.id : null };
  },
});
