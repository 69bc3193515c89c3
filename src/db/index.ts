import postgres from 'postgres';

/** The database client handed to every part; `postgres.camel` maps snake_case columns to camelCase. */
export type Database = postgres.Sql<Record<string, never>>;
/** What data-access code takes: the client or a transaction alike. */
export type Sql = postgres.ISql<Record<string, never>>;

/** `?host=/dir` in the URL (libpq's way, which graphile-worker's client reads too) means a Unix socket in /dir. */
export function connect(url: string, max: number): Database {
  const parsed = new URL(url);
  const socketDir = parsed.searchParams.get('host');
  if (socketDir?.startsWith('/')) parsed.searchParams.delete('host');
  return postgres(parsed.toString(), {
    max,
    ...(socketDir?.startsWith('/') && { host: socketDir }),
    transform: postgres.camel,
    onnotice: () => {},
    connection: { application_name: 'postwise' },
  });
}
