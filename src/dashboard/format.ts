/** How dates, numbers and sizes read on the pages: in the browser's language and time zone. */
const dateTime = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'short' });
const dateOnly = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium' });
const number = new Intl.NumberFormat();

export const formatDateTime = (iso: string | null | undefined, none = '—') => (iso ? dateTime.format(new Date(iso)) : none);
export const formatDate = (iso: string | null | undefined, none = '—') => (iso ? dateOnly.format(new Date(iso)) : none);
export const formatNumber = (value: number) => number.format(value);

/** A calendar day `YYYY-MM-DD` as the browser writes it, without moving it across time zones. */
export function formatDay(day: string, options: Intl.DateTimeFormatOptions = { month: 'short', day: 'numeric' }) {
  const [year, month, date] = day.split('-').map(Number);
  return new Intl.DateTimeFormat(undefined, { ...options, timeZone: 'UTC' }).format(new Date(Date.UTC(year!, month! - 1, date!)));
}

/** In binary units, as the plans are written (docs/limits.md: "1 GiB"). */
export function formatBytes(bytes: number): string {
  const units = ['bytes', 'KiB', 'MiB', 'GiB', 'TiB'];
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  return `${unit === 0 ? value : Number(value.toFixed(value < 10 ? 1 : 0))} ${units[unit]}`;
}
