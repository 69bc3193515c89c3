import type { Task } from 'graphile-worker';
import { EVENT_RETENTION_DAYS } from '../../operations/events/list.js';
import type { AppContext } from '../registry/context.js';
import { CronPayload, TASK } from './queue.js';
import { DETECTION_RETENTION_DAYS } from '../platforms/detected-languages.js';
import { defineTask } from './task.js';

/** Rows deleted a statement: a long backlog goes in short transactions that hold few locks. */
const BATCH = 5_000;

/**
 * Deletes the events older than EVENT_RETENTION_DAYS (queued each hour by the worker's crontab, src/worker/queue.ts),
 * MCP subscriptions not renewed for as long (a client that went away without ending its session), and languages
 * detected longer ago than DETECTION_RETENTION_DAYS (a post published later is detected again). Running it
 * twice, or at once in two workers, deletes each row once.
 */
function pruneEventsTask(app: AppContext): Task {
  return async (payload) => {
    CronPayload.parse(payload ?? {});
    await app.db`DELETE FROM mcp_subscriptions WHERE created_at < now() - ${EVENT_RETENTION_DAYS} * interval '1 day'`;
    await app.db`DELETE FROM detected_languages WHERE detected_at < now() - ${DETECTION_RETENTION_DAYS} * interval '1 day'`;
    for (;;) {
      const deleted = await app.db`
        DELETE FROM events WHERE seq IN (
          SELECT seq FROM events WHERE created_at < now() - ${EVENT_RETENTION_DAYS} * interval '1 day' LIMIT ${BATCH} FOR UPDATE SKIP LOCKED)`;
      if (deleted.count < BATCH) return;
    }
  };
}

export default defineTask(TASK.pruneEvents, pruneEventsTask);
