import type { PendingQuery, Row } from 'postgres';
import { z } from 'zod';
import type { Sql } from '../../src/db/index.js';
import { timestamp } from '../../src/registry/fields.js';

const day = z.iso.date();

/** A filter bound: an instant, or a date, which means a day of the workspace's calendar. */
export const dateOrTime = z.union([timestamp, day]);

/** The workspace's IANA time zone, as SQL. */
export const workspaceZone = (db: Sql, workspaceId: string) => db`(SELECT time_zone FROM organizations WHERE id = ${workspaceId})`;

/**
 * The instant `value` names, as SQL: a date-time as given; a date as the midnight that starts it in `zone` (or,
 * with `dayAfter`, the midnight that ends it), correct across daylight-saving changes.
 */
export function instantOf(db: Sql, value: string, zone: PendingQuery<Row[]>, { dayAfter = false } = {}) {
  if (!day.safeParse(value).success) return db`${value}::timestamptz`;
  return dayAfter ? db`((${value}::date + 1)::timestamp AT TIME ZONE ${zone})` : db`(${value}::date::timestamp AT TIME ZONE ${zone})`;
}
