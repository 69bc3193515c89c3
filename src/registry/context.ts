import type { Config } from '../process/config.js';
import type { Database } from '../db/index.js';
import type { Logger } from '../process/logger.js';
import type { Secrets } from '../auth/secrets.js';
import type { Storage } from '../storage/index.js';
import type { Renders } from './render-cache.js';
import type { ErrorCode } from './errors.js';
import type { Principal } from '../auth/principal.js';

/** Built once (src/service/core.ts) and shared by every surface. */
export interface AppContext {
  config: Config;
  db: Database;
  logger: Logger;
  secrets: Secrets;
  /** The object store of uploads and their variants. */
  storage: Storage;
  /** What the lists rendered lately, served again while their rows are unchanged (src/registry/render-cache.ts). */
  renders: Renders;
  /** PUBLIC_URL, or once this process listens, the address it listens on. */
  publicUrl: string;
  /**
   * What platform calls go through instead of the global fetch: the tests' fault injection, placed where the
   * client's requests really go (after login the client follows the PDS named in the account's DID document).
   */
  platformFetch?: typeof fetch;
}

/**
 * What a handler receives besides its input: the app context itself (so a handler hands it on to what takes one,
 * platform calls included), who calls, and `fail` for declared errors.
 */
export interface HandlerContext<E extends ErrorCode> extends AppContext {
  auth: { userId: string; workspaceId: string; principal: Principal };
  /** Ends the call with one of the operation's declared error codes. */
  fail(code: E, message: string): never;
}
