import { z } from 'zod';
import { defineOperation } from '../../src/registry/operation.js';

const DayUsage = z.object({ calls: z.number().int(), errors: z.number().int().meta({ description: 'Calls answered with a status of 400 or more.' }) });

export default defineOperation({
  id: 'getDailyUsage',
  method: 'GET',
  path: '/usage/daily',
  summary: 'API and MCP calls of the workspace day by day, for a chart',
  description:
    'The calls `GET /usage` counts, for the same window, per calendar day of the workspace\'s time zone, oldest first: one entry for ' +
    'each day the window touches (so `days + 1` when it starts mid-day), days without calls included. Internal (dashboard).',
  input: {
    query: z.object({
      days: z.number().int().min(1).max(90).default(30).meta({ description: 'The window, in days back from now: 1 to 90, 30 unless given.' }),
    }),
  },
  output: z
    .object({ windowDays: z.number().int(), items: z.array(z.object({ date: z.iso.date(), api: DayUsage, mcp: DayUsage })) })
    .meta({ id: 'DailyUsage' }),
  async handler({ days }, { db, auth }) {
    const daily = await db<{ date: string; apiCalls: number; apiErrors: number; mcpCalls: number; mcpErrors: number }[]>`
      WITH zone AS (SELECT time_zone AS name FROM organizations WHERE id = ${auth.workspaceId}),
      calls AS (
        SELECT (e.created_at AT TIME ZONE zone.name)::date AS date, e.surface, e.status FROM usage_events e, zone
        WHERE e.organization_id = ${auth.workspaceId} AND e.created_at > now() - make_interval(days => ${days})
      )
      SELECT to_char(d.date, 'YYYY-MM-DD') AS date,
        count(c.*) FILTER (WHERE c.surface = 'api')::int AS api_calls, count(c.*) FILTER (WHERE c.surface = 'api' AND c.status >= 400)::int AS api_errors,
        count(c.*) FILTER (WHERE c.surface = 'mcp')::int AS mcp_calls, count(c.*) FILTER (WHERE c.surface = 'mcp' AND c.status >= 400)::int AS mcp_errors
      FROM zone, generate_series(((now() - make_interval(days => ${days})) AT TIME ZONE zone.name)::date, (now() AT TIME ZONE zone.name)::date, interval '1 day') AS d (date)
      LEFT JOIN calls c ON c.date = d.date::date
      GROUP BY d.date ORDER BY d.date`;
    return {
      windowDays: days,
      items: daily.map((day) => ({ date: day.date, api: { calls: day.apiCalls, errors: day.apiErrors }, mcp: { calls: day.mcpCalls, errors: day.mcpErrors } })),
    };
  },
});
