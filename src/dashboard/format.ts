/**
 * How every date, time, number and size reads on the pages: in the browser's language, with its clock (12 or 24
 * hours as the locale has it), one notation for an instant everywhere: "Tue, Nov 24, 2026, 9:30 AM". An instant is
 * shown in the workspace's time zone where it is a schedule (`timeZone`), else in the browser's.
 */
// The locale's own medium date and short time ("9:30 AM", "09:30"), after the weekday; hour-by-hour options would
// miss the locale's clock (en-GB writes "0:26" for `hour: 'numeric'`).
const WEEKDAY: Intl.DateTimeFormatOptions = { weekday: 'short' };
const INSTANT: Intl.DateTimeFormatOptions = { dateStyle: 'medium', timeStyle: 'short' };
const DATE: Intl.DateTimeFormatOptions = { dateStyle: 'medium' };
const TIME: Intl.DateTimeFormatOptions = { timeStyle: 'short' };

const formats = new Map<string, Intl.DateTimeFormat>();
/** One formatter per notation and zone: making one costs more than using it. */
function formatter(options: Intl.DateTimeFormatOptions, timeZone: string | undefined): Intl.DateTimeFormat {
  const key = `${JSON.stringify(options)}|${timeZone ?? ''}`;
  let format = formats.get(key);
  if (!format) formats.set(key, (format = new Intl.DateTimeFormat(undefined, { ...options, ...(timeZone && { timeZone }) })));
  return format;
}

const withWeekday = (options: Intl.DateTimeFormatOptions, iso: string, timeZone: string | undefined) => {
  const instant = new Date(iso);
  return `${formatter(WEEKDAY, timeZone).format(instant)}, ${formatter(options, timeZone).format(instant)}`;
};

/** An instant: "Tue, Nov 24, 2026, 9:30 AM" (`none` when there is none). */
export const formatDateTime = (iso: string | null | undefined, none = '—', timeZone?: string) => (iso ? withWeekday(INSTANT, iso, timeZone) : none);
/** An instant's day: "Tue, Nov 24, 2026". */
export const formatDate = (iso: string | null | undefined, none = '—', timeZone?: string) => (iso ? withWeekday(DATE, iso, timeZone) : none);
/** An instant's time alone: "9:30 AM". */
export const formatTime = (iso: string, timeZone?: string) => formatter(TIME, timeZone).format(new Date(iso));

/** A calendar day `YYYY-MM-DD` as the browser writes it ("Nov 24" unless told more), never moved across time zones. */
export function formatDay(day: string, options: Intl.DateTimeFormatOptions = { month: 'short', day: 'numeric' }) {
  const [year, month, date] = day.split('-').map(Number);
  return formatter(options, 'UTC').format(new Date(Date.UTC(year!, month! - 1, date!)));
}

/** An hour of the day on the browser's clock, as the week's rows are labelled: "9:00 AM" or "09:00". */
export const formatHour = (hour: number) => formatter(TIME, 'UTC').format(new Date(Date.UTC(2000, 0, 1, hour)));

/** A day for a heading: "Tuesday, November 24, 2026" (`options` to say less). */
export const formatDayLong = (day: string, options: Intl.DateTimeFormatOptions = { weekday: 'long', month: 'long', day: 'numeric', year: 'numeric' }) => formatDay(day, options);

/** The zone's short name at that instant ("GMT+1", "EST"), to say which clock the times are on. */
export function zoneName(timeZone: string, at: Date = new Date()): string {
  const part = new Intl.DateTimeFormat('en-US', { timeZone, timeZoneName: 'short' }).formatToParts(at).find((p) => p.type === 'timeZoneName');
  return part?.value ?? timeZone;
}

const number = new Intl.NumberFormat();
export const formatNumber = (value: number) => number.format(value);

/** In binary units, as the plans are written (docs/limits.md: "1 GiB"), the number and its unit on one line. */
export function formatBytes(bytes: number): string {
  const units = ['bytes', 'KiB', 'MiB', 'GiB', 'TiB'];
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  return `${unit === 0 ? value : Number(value.toFixed(value < 10 ? 1 : 0))}\u00a0${units[unit]}`;
}
