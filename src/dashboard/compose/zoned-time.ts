/**
 * Times in the workspace's IANA time zone (GET /workspace `timeZone`), whatever the browser's own zone: a chosen date and
 * time read as that zone's wall clock, and instants shown in it.
 */

/** How far `zone`'s wall clock is ahead of UTC at the instant `ms`, in milliseconds. */
function offsetAt(zone: string, ms: number): number {
  const parts = new Intl.DateTimeFormat('en-US', {
    timeZone: zone,
    hourCycle: 'h23',
    year: 'numeric',
    month: '2-digit',
    day: '2-digit',
    hour: '2-digit',
    minute: '2-digit',
    second: '2-digit',
  }).formatToParts(new Date(ms));
  const get = (type: string) => Number(parts.find((part) => part.type === type)?.value);
  const wall = Date.UTC(get('year'), get('month') - 1, get('day'), get('hour'), get('minute'), get('second'));
  return wall - Math.floor(ms / 1000) * 1000;
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

const DAY = 86_400_000;

/** An instant as the zone's wall clock reads it: `Tue, Dec 1, 2026, 09:00`. */
export function formatInZone(iso: string, zone: string): string {
  return new Intl.DateTimeFormat('en-GB', {
    timeZone: zone,
    weekday: 'short',
    day: 'numeric',
    month: 'short',
    year: 'numeric',
    hour: '2-digit',
    minute: '2-digit',
    hourCycle: 'h23',
  }).format(new Date(iso));
}

/** The instant's date and time fields (YYYY-MM-DD, HH:MM) on the zone's wall clock, for filling the inputs. */
export function isoToZoned(iso: string, zone: string): { date: string; time: string } {
  const ms = Date.parse(iso);
  const wall = new Date(ms + offsetAt(zone, ms)).toISOString();
  return { date: wall.slice(0, 10), time: wall.slice(11, 16) };
}
