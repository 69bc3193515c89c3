import postgres from 'postgres';

/** The database client handed to every part; `postgres.camel` maps snake_case columns to camelCase. */
export type Database = postgres.Sql<Record<string, never>>;
/** What data-access code takes: the client or a transaction alike. */
export type Sql = postgres.ISql<Record<string, never>>;

export function connect(url: string, max: number): Database {
  return postgres(url, { max, transform: postgres.camel, onnotice: () => {}, connection: { application_name: 'postwise' } });
}
