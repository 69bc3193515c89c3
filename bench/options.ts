/** Command-line options of `npm run bench`. */
import { parseArgs } from 'node:util';

export interface Options {
  quick: boolean;
  runs: number;
  warmupSeconds: number;
  durationSeconds: number;
  connections: number;
  /** Schedules in the calendar workspace (GET /schedules at its start and at its end). */
  calendarSchedules: number;
  /** How long the soak runs (bench/soak.ts). */
  soakSeconds: number;
}

const usage = `Usage: npm run bench -- [--quick] [--runs N] [--warmup SECONDS] [--duration SECONDS] [--calendar-schedules N] [--soak SECONDS]

  --quick                 one short run per scenario (1 s warm-up, 2 s measured) and a calendar of 20,000
                          schedules, as a smoke test; results go to bench/.tmp/results-quick.json instead of
                          bench/results.json
  --calendar-schedules N  schedules in the calendar workspace (1,000,000 unless --quick), a multiple of 10
  --soak SECONDS          how long the soak of keys at their rate limits runs (180 s, or 20 s with --quick)`;

export function parseOptions(argv: string[]): Options {
  let values;
  try {
    ({ values } = parseArgs({
      args: argv,
      options: {
        quick: { type: 'boolean', default: false },
        runs: { type: 'string' },
        warmup: { type: 'string' },
        duration: { type: 'string' },
        'calendar-schedules': { type: 'string' },
        soak: { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
    }));
  } catch (error) {
    console.error(`${(error as Error).message}\n\n${usage}`);
    process.exit(2);
  }
  if (values.help) {
    console.log(usage);
    process.exit(0);
  }
  // A smaller calendar keeps the quick pass (CI runs it) fast: the bulk insert of a million rows takes minutes.
  const defaults = values.quick
    ? { runs: 1, warmup: 1, duration: 2, calendarSchedules: 20_000, soak: 20 }
    : { runs: 3, warmup: 3, duration: 10, calendarSchedules: 1_000_000, soak: 180 };
  const calendarSchedules = positive('calendar-schedules', values['calendar-schedules'], defaults.calendarSchedules);
  if (calendarSchedules % 10 !== 0 || calendarSchedules < 100) {
    console.error(`--calendar-schedules must be a multiple of 10, at least 100 (ten channels; two full pages and more), got ${calendarSchedules}\n\n${usage}`);
    process.exit(2);
  }
  return {
    quick: values.quick,
    runs: positive('runs', values.runs, defaults.runs),
    warmupSeconds: positive('warmup', values.warmup, defaults.warmup, true),
    durationSeconds: positive('duration', values.duration, defaults.duration),
    connections: 32,
    calendarSchedules,
    soakSeconds: positive('soak', values.soak, defaults.soak),
  };
}

function positive(name: string, raw: string | undefined, fallback: number, zeroAllowed = false): number {
  if (raw === undefined) return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < (zeroAllowed ? 0 : 1)) {
    console.error(`--${name} must be a ${zeroAllowed ? 'non-negative' : 'positive'} integer, got "${raw}"\n\n${usage}`);
    process.exit(2);
  }
  return value;
}
