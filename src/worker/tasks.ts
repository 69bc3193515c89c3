import type { TaskList } from 'graphile-worker';

/**
 * The worker's tasks by name. Each task lives in its own file beside this one, validates its payload with zod
 * first, and is idempotent (a job runs at least once). None yet: publishing and media tasks come next.
 */
export const tasks: TaskList = {};
