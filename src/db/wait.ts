import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from '../process/logger.js';
import { StartupError } from '../process/startup.js';
import type { Database } from './index.js';

/** How long a start waits for DATABASE_URL to answer (its Postgres may be starting beside the service). */
export const DATABASE_WAIT_MS = 20_000;

/**
 * Waits until the database answers, retrying what a starting server or network answers (refused, not
 * found, starting up, and a password or database not there yet, as when its init scripts still run), with one
 * log line; then gives up with a line that names the database and what is wrong. Logs never show the password.
 */
export async function waitForDatabase(db: Database, url: string, logger: Logger, waitMs = DATABASE_WAIT_MS): Promise<void> {
  const where = describeUrl(url);
  let logged = false;
  for (const since = Date.now(); ; await sleep(500)) {
    try {
      await db`SELECT 1`;
      if (logged) logger.info('the database answers', { database: where });
      return;
    } catch (error) {
      const reason = whyUnreachable(error);
      if (!reason) throw error;
      if (Date.now() - since >= waitMs) {
        throw new StartupError(`DATABASE_URL (${where}) ${reason.text} after ${waitMs / 1000} s of retries; ${reason.fix}`, { cause: error });
      }
      if (!logged) logger.warn(`waiting up to ${waitMs / 1000} s for the database`, { database: where, reason: reason.text });
      logged = true;
    }
  }
}

function whyUnreachable(error: unknown): { text: string; fix: string } | undefined {
  const code = (error as { code?: string }).code;
  const running = 'check that Postgres runs there and that DATABASE_URL names it';
  switch (code) {
    case 'ECONNREFUSED':
      return { text: 'refused the connection', fix: running };
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return { text: 'names a host that was not found', fix: 'check the host in DATABASE_URL' };
    case 'ETIMEDOUT':
    case 'CONNECT_TIMEOUT':
    case 'EHOSTUNREACH':
    case 'ENETUNREACH':
    case 'ECONNRESET':
      return { text: `did not answer (${code})`, fix: running };
    case '57P03':
      return { text: 'is still starting up', fix: 'give it time or look at its log' };
    case '28P01':
    case '28000':
      return { text: 'refused the user name or password', fix: "check DATABASE_URL's user and password" };
    case '3D000':
      return { text: 'has no such database', fix: 'create it, or name an existing one in DATABASE_URL' };
    default:
      return undefined;
  }
}

/** user@host:port/database, without the password. */
function describeUrl(url: string): string {
  try {
    const parsed = new URL(url);
    return `${decodeURIComponent(parsed.username)}@${parsed.host}${parsed.pathname}`;
  } catch {
    return 'unparsable URL';
  }
}
