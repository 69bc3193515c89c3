/**
 * What the client prints: exactly the REST body when stdout is not a terminal (or with --json), and on a terminal a
 * table for a list and a block for one resource. `--all` prints one item per line (JSON lines) in both cases.
 */

type Json = unknown;

const isObject = (value: Json): value is Record<string, Json> => typeof value === 'object' && value !== null && !Array.isArray(value);

/** The items of a list answer: a top-level array, or its first array field (`items`, `posts`, `schedules`). */
export function itemsOf(body: Json): Json[] | undefined {
  if (Array.isArray(body)) return body;
  if (!isObject(body)) return undefined;
  const key = Object.keys(body).find((name) => Array.isArray(body[name]));
  return key === undefined ? undefined : (body[key] as Json[]);
}

/**
 * The query of the page after `body`, by the three pagination shapes of the API, or undefined on the last page:
 * `{ items, nextCursor }` (cursor), `{ posts, pageInfo }` (page and limit), `{ schedules, nextCursor, hasMore }` (keyset).
 */
export function nextPageQuery(body: Json, query: Record<string, unknown>): Record<string, unknown> | undefined {
  if (!isObject(body)) return undefined;
  const pageInfo = body.pageInfo;
  if (isObject(pageInfo)) return pageInfo.hasNextPage === true ? { ...query, page: Number(pageInfo.page) + 1 } : undefined;
  if ('hasMore' in body) return body.hasMore === true && body.nextCursor != null ? { ...query, cursor: body.nextCursor } : undefined;
  if ('nextCursor' in body) return body.nextCursor != null ? { ...query, cursor: body.nextCursor } : undefined;
  return undefined;
}

const cell = (value: Json, width: number): string => {
  const text = value === null || value === undefined ? '' : typeof value === 'object' ? JSON.stringify(value) : String(value);
  const flat = text.replace(/\s+/g, ' ');
  return flat.length > width ? `${flat.slice(0, width - 1)}…` : flat;
};

/** The columns worth a table: the scalar fields of the items, the usual ones first, at most eight. */
function columnsOf(items: Record<string, Json>[]): string[] {
  const preferred = ['id', 'name', 'status', 'platform', 'content', 'scheduledContent', 'scheduledAt', 'publishDate', 'createdAt'];
  const scalar = new Set<string>();
  for (const item of items) for (const [key, value] of Object.entries(item)) if (value === null || typeof value !== 'object') scalar.add(key);
  return [...preferred.filter((key) => scalar.has(key)), ...[...scalar].filter((key) => !preferred.includes(key))].slice(0, 8);
}

export function table(items: Json[]): string {
  const rows = items.filter(isObject);
  if (!rows.length) return items.length ? items.map((item) => cell(item, 200)).join('\n') : '(none)';
  const columns = columnsOf(rows);
  const width = (column: string) => Math.min(Math.max(column.length, ...rows.map((row) => cell(row[column], 48).length)), 48);
  const widths = columns.map(width);
  const line = (values: string[]) => values.map((value, index) => value.padEnd(widths[index]!)).join('  ').trimEnd();
  return [line(columns.map((column) => column.toUpperCase())), ...rows.map((row) => line(columns.map((column, index) => cell(row[column], widths[index]!))))].join('\n');
}

/** One resource as `field: value` lines; nested values as compact JSON. */
export function block(value: Json): string {
  if (!isObject(value)) return cell(value, 10_000);
  const keys = Object.keys(value);
  const pad = Math.max(...keys.map((key) => key.length));
  return keys.map((key) => `${`${key}:`.padEnd(pad + 1)} ${cell(value[key], 160)}`).join('\n');
}

/** What a terminal shows of an answer: its list as a table (with what says where the next page is), or a block. */
export function readable(body: Json): string {
  const items = itemsOf(body);
  if (!items) return block(body);
  const rest = isObject(body) ? Object.fromEntries(Object.entries(body).filter(([, value]) => !Array.isArray(value))) : {};
  const footer = Object.keys(rest).length ? `\n\n${Object.entries(rest).map(([key, value]) => `${key}: ${cell(value, 200)}`).join('\n')}` : '';
  return table(items) + footer;
}
