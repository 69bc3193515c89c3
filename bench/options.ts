/** Command-line options of `npm run bench`. */
import { parseArgs } from 'node:util';
import type { PublishingOptions } from './publishing.js';
import type { RecycleOptions } from './recycle.js';

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
  /** Posts in the workspace of the lists scenario (bench/lists.ts). */
  listPosts: number;
  /** The request scenarios, the publishing engine's, the lists at scale, the webhooks, evergreen recycling, or (undefined) all. */
  only: 'http' | 'publishing' | 'lists' | 'webhooks' | 'recycle' | 'tools' | undefined;
  /** Events delivered in the webhooks scenario (bench/webhooks.ts). */
  webhookEvents: number;
  /** Evergreen recycling (bench/recycle.ts): posts in its workspace, and runs of its rule measured. */
  recycle: RecycleOptions;
  publishing: PublishingOptions;
}

const usage = `Usage: npm run bench -- [--quick] [--only http|publishing|lists|webhooks|recycle|tools] [--runs N] [--warmup SECONDS] [--duration SECONDS]
                          [--calendar-schedules N] [--soak SECONDS] [--publish-schedules N] [--pds-schedules N]
                          [--mastodon-schedules N] [--publish-spread SECONDS] [--platform-latency MS] [--list-posts N]
                          [--recycle-posts N] [--recycle-runs N]

  --quick                 one short run per scenario (1 s warm-up, 2 s measured), a calendar of 20,000 schedules,
                          a 20 s soak, and 200 schedules (50 on the PDS) due within 10 s, as a smoke test; results
                          go to bench/.tmp/results-quick.json instead of bench/results.json
  --only http|publishing|lists|webhooks|recycle|tools
                          the request scenarios (with the soak) only, the publishing engine's only, the lists at
                          scale only, the webhook deliveries only, evergreen recycling only, or the weight of MCP's
                          tools/list only (also reported by every run)
  --webhook-events N      events delivered to a webhook receiver on loopback (1,000 unless --quick: 200)
  --platform-latency MS   how long the slow loopback platform takes to answer each record (200)
  --list-posts N          posts in the lists workspace (100,000 unless --quick: 5,000), measured beside one of 1,000
  --recycle-posts N       posts in the evergreen recycling workspace (10,000 unless --quick: 500)
  --recycle-runs N        recycle runs of 50 posts measured, after one to warm up (20 unless --quick: 3)
  --calendar-schedules N  schedules in the calendar workspace (1,000,000 unless --quick), a multiple of 10
  --soak SECONDS          how long the soak of keys at their rate limits runs (180 s, or 20 s with --quick)
  --publish-schedules N   schedules of each publishing set against the loopback endpoint (1,000 unless --quick)
  --pds-schedules N       the same against the real PDS (1,000 unless --quick)
  --mastodon-schedules N  the same against the strict fake Mastodon instance (1,000 unless --quick: 200)
  --publish-spread S      the delay set is due evenly within S seconds (60 unless --quick)`;

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
        only: { type: 'string' },
        'publish-schedules': { type: 'string' },
        'pds-schedules': { type: 'string' },
        'mastodon-schedules': { type: 'string' },
        'publish-spread': { type: 'string' },
        'list-posts': { type: 'string' },
        'platform-latency': { type: 'string' },
        'webhook-events': { type: 'string' },
        'recycle-posts': { type: 'string' },
        'recycle-runs': { type: 'string' },
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
    ? { runs: 1, warmup: 1, duration: 2, calendarSchedules: 20_000, soak: 20, publishSchedules: 200, pdsSchedules: 50, mastodonSchedules: 200, publishSpread: 10, listPosts: 5_000, webhookEvents: 200, recyclePosts: 500, recycleRuns: 3 }
    : { runs: 3, warmup: 3, duration: 10, calendarSchedules: 1_000_000, soak: 180, publishSchedules: 1000, pdsSchedules: 1000, mastodonSchedules: 1000, publishSpread: 60, listPosts: 100_000, webhookEvents: 1000, recyclePosts: 10_000, recycleRuns: 20 };
  if (values.only !== undefined && !['http', 'publishing', 'lists', 'webhooks', 'recycle', 'tools'].includes(values.only)) {
    console.error(`--only must be http, publishing, lists, webhooks, recycle or tools, got "${values.only}"\n\n${usage}`);
    process.exit(2);
  }
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
    listPosts: positive('list-posts', values['list-posts'], defaults.listPosts),
    only: values.only as Options['only'],
    webhookEvents: positive('webhook-events', values['webhook-events'], defaults.webhookEvents),
    recycle: {
      posts: positive('recycle-posts', values['recycle-posts'], defaults.recyclePosts),
      runs: positive('recycle-runs', values['recycle-runs'], defaults.recycleRuns),
    },
    publishing: {
      schedules: positive('publish-schedules', values['publish-schedules'], defaults.publishSchedules),
      pdsSchedules: positive('pds-schedules', values['pds-schedules'], defaults.pdsSchedules),
      mastodonSchedules: positive('mastodon-schedules', values['mastodon-schedules'], defaults.mastodonSchedules),
      spreadSeconds: positive('publish-spread', values['publish-spread'], defaults.publishSpread),
      platformLatencyMs: positive('platform-latency', values['platform-latency'], 200),
    },
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
