import { keyAuthenticator, type Authenticate } from '../auth/api-keys.js';
import { operations } from '../../operations/index.js';
import type { Config } from '../process/config.js';
import { startEmbeddedPostgres } from '../db/embedded.js';
import { connect, type Database } from '../db/index.js';
import { migrate } from '../db/migrate.js';
import { waitForDatabase } from '../db/wait.js';
import type { Logger } from '../process/logger.js';
import type { AppContext } from '../registry/context.js';
import { Pipeline, type Outcome } from '../registry/pipeline.js';
import { RateLimiter } from '../registry/rate-limit.js';
import { loadEncryptionKey, secretsFrom, type Secrets } from '../auth/secrets.js';
import { openStorage, type Storage } from '../storage/index.js';
import { Renders } from '../registry/render-cache.js';
import { UsageRecorder } from '../registry/usage.js';
import { installWorkerSchema } from '../worker/index.js';

/** What every entry point (server, worker, admin command, MCP over stdio) shares, built once. */
export interface Core {
  app: AppContext;
  db: Database;
  /** API-key authentication, shared by every surface that takes a key. */
  authenticate: Authenticate;
  databaseUrl: string;
  /** The embedded cluster's directory when it lives outside DATA_DIR (run as root), for the start-up banner. */
  relocatedCluster: string | undefined;
  operations: typeof operations;
  pipeline: Pipeline;
  /** Runs an operation (internal ones included) as a member of a workspace, as the admin command does. */
  runAs(member: { userId: string; workspaceId: string }, operationId: string, args: Record<string, unknown>): Promise<Outcome>;
  close(): Promise<void>;
}

/**
 * Connects to DATABASE_URL (waiting a bounded time for it to answer), or starts (or joins) the embedded
 * Postgres under DATA_DIR, and applies the migrations (ours, then graphile-worker's); opens the object store
 * (S3_*, or the embedded one under DATA_DIR). `close` flushes usage,
 * disconnects, and leaves the embedded Postgres, which stops when the last process using it leaves.
 */
export async function openCore(config: Config, logger: Logger): Promise<Core> {
  const database = config.databaseUrl
    ? { url: config.databaseUrl, relocatedCluster: undefined, stop: async () => {} }
    : await startEmbeddedPostgres(config.dataDir, logger);
  const db = connect(database.url, config.databasePoolSize);
  try {
    if (config.databaseUrl) await waitForDatabase(db, config.databaseUrl, logger);
    await migrate(db, logger);
    await installWorkerSchema(db, database.url, logger);
  } catch (error) {
    await db.end({ timeout: 1 });
    await database.stop();
    throw error;
  }
  let secrets: Secrets;
  let storage: Storage;
  try {
    secrets = secretsFrom(await loadEncryptionKey(config.encryptionKey, config.dataDir));
    storage = await openStorage(config);
  } catch (error) {
    await db.end({ timeout: 1 });
    await database.stop();
    throw error;
  }
  const app: AppContext = { config, db, logger, secrets, storage, renders: new Renders(), publicUrl: config.publicUrl ?? `http://${config.host}:${config.port}` };
  const usage = new UsageRecorder(db, logger, config.usageFlushMs);
  const limiter = new RateLimiter(db, logger);
  const pipeline = new Pipeline(app, usage, limiter);
  return {
    app,
    db,
    authenticate: keyAuthenticator(db),
    databaseUrl: database.url,
    relocatedCluster: database.relocatedCluster,
    operations,
    pipeline,
    runAs: (member, operationId, args) =>
      pipeline.run({
        operation: operations.find((operation) => operation.id === operationId),
        principal: { kind: 'admin', ...member },
        surface: 'admin',
        input: { kind: 'arguments', value: args },
      }),
    async close() {
      await Promise.all([usage.close(), limiter.close()]);
      await db.end({ timeout: 5 });
      await storage.close();
      await database.stop();
    },
  };
}
