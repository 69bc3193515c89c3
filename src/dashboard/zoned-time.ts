/**
 * Dates and times in the workspace's time zone (GET /workspace → timeZone), whatever the browser's own: the calendar,
 * the posts list and the composer show when a post goes out where the workspace is, and the composer reads a chosen
 * date and time on that zone's wall clock. A calendar day is `YYYY-MM-DD`, handled as a UTC date so that adding days
 * never crosses a daylight-saving change. Writing them for people is format.ts's.
 */

const partsFormats = new Map<string, Intl.DateTimeFormat>();

function partsFormat(timeZone: string) {
  let format = partsFormats.get(timeZone);
  if (!format) {
    format = new Intl.DateTimeFormat('en-US', {
      timeZone,
      hourCycle: 'h23',
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
      second: '2-digit',
    });
    partsFormats.set(timeZone, format);
  }
  return format;
}

export interface ZonedParts {
  year: number;
  month: number;
  day: number;
  hour: number;
  minute: number;
  second: number;
}

/** The wall-clock fields of an instant in `timeZone`. */
export function zonedParts(instant: string | Date, timeZone: string): ZonedParts {
  const parts: Record<string, number> = {};
  for (const part of partsFormat(timeZone).formatToParts(new Date(instant))) if (part.type !== 'literal') parts[part.type] = Number(part.value);
  return { year: parts.year!, month: parts.month!, day: parts.day!, hour: parts.hour! % 24, minute: parts.minute!, second: parts.second! };
}

const pad = (value: number, length = 2) => String(value).padStart(length, '0');
const DAY = 86_400_000;

/** How far `zone`'s wall clock is ahead of UTC at the instant `ms`, in milliseconds. */
function offsetAt(zone: string, ms: number): number {
  const { year, month, day, hour, minute, second } = zonedParts(new Date(ms), zone);
  return Date.UTC(year, month - 1, day, hour, minute, second) - Math.floor(ms / 1000) * 1000;
}

/**
 * `date` (YYYY-MM-DD) at `time` (HH:MM) on `zone`'s wall clock, as an ISO instant; null when either is missing or
 * malformed. As the server reads posting windows: a time the spring-forward skips moves forward by the gap, and a time
 * the fall-back repeats is its later occurrence. The zone's offsets a day either side are the only candidates.
 */
export function zonedToIso(date: string, time: string, zone: string): string | null {
  const d = /^(\d{4})-(\d{2})-(\d{2})$/.exec(date);
  const t = /^(\d{2}):(\d{2})$/.exec(time);
  if (!d || !t) return null;
  const wall = Date.UTC(Number(d[1]), Number(d[2]) - 1, Number(d[3]), Number(t[1]), Number(t[2]));
  const before = offsetAt(zone, wall - DAY);
  const after = offsetAt(zone, wall + DAY);
  // The instants at which the wall clock shows this time: none in a gap, two in an overlap.
  const matching = [...new Set([before, after])].map((offset) => wall - offset).filter((instant) => instant + offsetAt(zone, instant) === wall);
  const instant = matching.length ? Math.max(...matching) : wall - before;
  return new Date(instant).toISOString();
}

/** The calendar day of an instant in `timeZone`: `YYYY-MM-DD`. */
export function dayOf(instant: string | Date, timeZone: string): string {
  const { year, month, day } = zonedParts(instant, timeZone);
  return `${pad(year, 4)}-${pad(month)}-${pad(day)}`;
}

/** The wall-clock time of an instant in `timeZone`: `HH:MM`. */
export function timeOf(instant: string | Date, timeZone: string): string {
  const { hour, minute } = zonedParts(instant, timeZone);
  return `${pad(hour)}:${pad(minute)}`;
}

/** The instant's date and time fields (YYYY-MM-DD, HH:MM) on the zone's wall clock, for filling the composer's inputs. */
export const isoToZoned = (iso: string, zone: string) => ({ date: dayOf(iso, zone), time: timeOf(iso, zone) });

/** The instant (ISO 8601, UTC) at which the clocks of `timeZone` show `day` at `time` (`HH:MM`), as zonedToIso reads it. */
export function instantAt(day: string, time: string, timeZone: string): string {
  const instant = zonedToIso(day, time, timeZone);
  if (!instant) throw new Error(`not a day and a time: ${day} ${time}`);
  return instant;
}

/** `day` moved by `days` (negative: earlier). */
export function addDays(day: string, days: number): string {
  const [year, month, date] = day.split('-').map(Number) as [number, number, number];
  return new Date(Date.UTC(year, month - 1, date + days)).toISOString().slice(0, 10);
}

/** `day` moved by whole months, to the first of that month. */
export function addMonths(day: string, months: number): string {
  const [year, month] = day.split('-').map(Number) as [number, number];
  return new Date(Date.UTC(year, month - 1 + months, 1)).toISOString().slice(0, 10);
}

/** 0 for Monday … 6 for Sunday (ISO weeks start on Monday, as GET /schedules?view=week does). */
export function weekdayOf(day: string): number {
  const [year, month, date] = day.split('-').map(Number) as [number, number, number];
  return (new Date(Date.UTC(year, month - 1, date)).getUTCDay() + 6) % 7;
}

export const startOfWeek = (day: string) => addDays(day, -weekdayOf(day));
export const startOfMonth = (day: string) => `${day.slice(0, 7)}-01`;

/** Whether `value` is a real `YYYY-MM-DD` day. */
export function isDay(value: string | null | undefined): value is string {
  if (!value || !/^\d{4}-\d{2}-\d{2}$/.test(value)) return false;
  return new Date(`${value}T00:00:00Z`).toISOString().slice(0, 10) === value;
}
