import { z } from 'zod';
import { isoOrNull, timestamp } from '../../src/registry/fields.js';
import { defineOperation } from '../../src/registry/operation.js';

const SurfaceUsage = z
  .object({
    calls: z.number().int(),
    errors: z.number().int().meta({ description: 'Calls answered with a status of 400 or more.' }),
    lastUsedAt: timestamp.nullable().meta({ description: 'The latest call in the window; null when there was none.' }),
  })
  .meta({ id: 'SurfaceUsage' });

export default defineOperation({
  id: 'getUsage',
  method: 'GET',
  path: '/usage',
  visibility: 'public',
  summary: 'API and MCP calls of the workspace over the last days',
  description:
    'Counts every call made with one of the workspace\'s API keys, by surface: `api` (REST) and `mcp` (MCP tool calls). ' +
    'Calls are written in batches, so the last second or so may not be counted yet.',
  input: {
    query: z.object({
      days: z.number().int().min(1).max(90).default(30).meta({ description: 'The window, in days back from now: 1 to 90, 30 unless given.' }),
    }),
  },
  output: z.object({ windowDays: z.number().int(), api: SurfaceUsage, mcp: SurfaceUsage }).meta({ id: 'UsageSummary' }),
  async handler({ days }, { db, auth }) {
    const rows = await db<{ surface: 'api' | 'mcp'; calls: number; errors: number; lastUsedAt: Date | null }[]>`
      SELECT surface, count(*)::int AS calls, count(*) FILTER (WHERE status >= 400)::int AS errors, max(created_at) AS last_used_at
      FROM usage_events
      WHERE organization_id = ${auth.workspaceId} AND created_at > now() - make_interval(days => ${days})
      GROUP BY surface`;
    const of = (surface: 'api' | 'mcp') => {
      const row = rows.find((r) => r.surface === surface);
      return { calls: row?.calls ?? 0, errors: row?.errors ?? 0, lastUsedAt: isoOrNull(row?.lastUsedAt ?? null) };
    };
    return { windowDays: days, api: of('api'), mcp: of('mcp') };
  },
});
