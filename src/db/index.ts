import postgres from 'postgres';

/** The database client handed to every part; `postgres.camel` maps snake_case columns to camelCase. */
export type Database = postgres.Sql<Record<string, never>>;
/** What data-access code takes: the client or a transaction alike. */
export type Sql = postgres.ISql<Record<string, never>>;

/**
 * The planner's cost of reading a page out of order, for the service's sessions: its working set (a workspace's posts
 * and schedules, their indexes) is read from memory, where a random read costs about what a sequential one does, and
 * Postgres's default (4, for spinning disks) made it scan all of a workspace's posts rather than look up the few
 * hundred a filter matched, several times slower (docs/benchmarks.md). 1.1 is the value
 * Postgres's documentation gives for solid-state storage.
 */
const RANDOM_PAGE_COST = '1.1';

export function connect(url: string, max: number): Database {
  return postgres(url, {
    max,
    transform: postgres.camel,
    onnotice: () => {},
    connection: { application_name: 'postwise', random_page_cost: RANDOM_PAGE_COST },
  });
}

/**
 * `query` sent as an unnamed statement, which Postgres plans for the values of each run. For a statement whose best
 * plan depends on its values (how many rows a filter matches): a prepared one may be given a generic plan after five
 * runs, made without the values. Costs one more round trip than a prepared statement (postgres.js asks the parameter
 * types first), where `SET LOCAL plan_cache_mode` would cost a transaction: three.
 */
export function plannedForItsValues<T extends object>(query: T): T {
  // postgres.js reads a tagged query's `prepare` option when it sends it (connection.js build), as it does unsafe()'s.
  (query as unknown as { options: { prepare?: boolean } }).options.prepare = false;
  return query;
}
