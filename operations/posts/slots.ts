import type { Sql } from '../../src/db/index.js';

/** A group of local posting times: ISO weekdays (1 is Monday) and HH:MM times. */
export interface PostingWindow {
  weekdays: number[];
  times: string[];
}

/** How far ahead NEXT_WINDOW looks for a free slot, and how many days each query covers. */
export const LOOKAHEAD_DAYS = 366;
const DAYS_PER_QUERY = 14;

/**
 * NEXT_WINDOW: the first `count` free posting slots of an integration, soonest first (fewer if the lookahead
 * runs out). A slot is a local wall-clock time of the workspace's posting windows on one of their weekdays, in
 * the workspace's IANA time zone, made an instant by Postgres (`AT TIME ZONE`), so it stays at 09:00 local
 * across daylight-saving changes; a time that does not exist that day (skipped by a spring-forward) moves
 * forward by the gap, and one that occurs twice (fall-back) is the later one. A slot is free when it is after
 * `after` (now) and no live schedule (SCHEDULED, PUBLISHING or PUBLISHED; a thread counts once) of the integration is
 * at that instant. Callers lock the integration first (see createPost), so two creates never take one slot.
 * `windows` replaces the workspace's (a recycle rule's own); `days` shortens the lookahead.
 */
export async function nextFreeSlots(
  tx: Sql,
  workspaceId: string,
  integrationId: string,
  count: number,
  { after = new Date(), windows = null, days = LOOKAHEAD_DAYS }: { after?: Date; windows?: PostingWindow[] | null; days?: number } = {},
): Promise<Date[]> {
  const found: Date[] = [];
  const windowsJson = windows ? JSON.stringify(windows) : null;
  const before = days < LOOKAHEAD_DAYS ? new Date(after.getTime() + days * 86_400_000) : null;
  for (let first = 0; first < days && found.length < count; first += DAYS_PER_QUERY) {
    const rows = await tx<{ slot: Date }[]>`
      SELECT DISTINCT slot FROM (
        SELECT (day::date + time::time) AT TIME ZONE o.time_zone AS slot
        FROM organizations o,
          generate_series(((${after}::timestamptz AT TIME ZONE o.time_zone)::date + ${first}::int)::timestamp,
                          ((${after}::timestamptz AT TIME ZONE o.time_zone)::date + ${first + DAYS_PER_QUERY - 1}::int)::timestamp,
                          interval '1 day') AS day,
          jsonb_array_elements(coalesce(${windowsJson}::text::jsonb, o.posting_windows)) AS w,
          jsonb_array_elements_text(w -> 'weekdays') AS weekday,
          jsonb_array_elements_text(w -> 'times') AS time
        WHERE o.id = ${workspaceId} AND extract(isodow FROM day) = weekday::int
      ) AS slots
      WHERE slot > ${after}::timestamptz AND (${before}::timestamptz IS NULL OR slot <= ${before}::timestamptz) AND NOT EXISTS (
        SELECT 1 FROM schedules s
        -- Bounded by the search's start too, so that a channel's past schedules are never read.
        WHERE s.integration_id = ${integrationId} AND s.scheduled_at = slots.slot AND s.scheduled_at > ${after}::timestamptz
          AND s.status IN ('SCHEDULED', 'PUBLISHING', 'PUBLISHED') AND s.thread_root_schedule_id IS NULL)
      ORDER BY slot LIMIT ${count - found.length}`;
    found.push(...rows.map((row) => row.slot));
  }
  return found;
}
