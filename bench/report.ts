/** Figures from the runs: medians, error totals, the ratios against their targets, the table and the JSON. */
import { cpus } from 'node:os';
import type { InProcessFigure } from './in-process.js';
import type { LoadResult } from './load.js';
import type { CpuPerRequest } from './procs.js';
import type { Options } from './options.js';
import type { PublishingFigures } from './publishing.js';
import type { Scenario, ScenarioId } from './scenarios.js';
import type { BurstFigures, SoakFigures } from './soak.js';

export interface Run extends LoadResult {
  /** Resident memory of the answering process right after this run. */
  rssAfterMb: number | undefined;
}

export interface ScenarioFigures {
  id: ScenarioId;
  title: string;
  /** Medians over the runs. */
  requestsPerSecond: number;
  latencyP50Ms: number;
  latencyP99Ms: number;
  /** Totals over the runs. */
  errors: { wrongStatus: number; status5xx: number; toolErrors: number; connectionErrors: number };
  /** Of the process that answers (the baseline server, or the service's node process): before any load, and after this scenario's last run. */
  rssMb: { afterStart: number | undefined; afterRun: number | undefined };
  /** Medians over the runs, of the CPU a request cost while measured (`process`: the answering process's). */
  cpuMsPerRequest: CpuPerRequest | undefined;
  runs: Run[];
}

export interface Ratio {
  id: string;
  description: string;
  value: number;
  comparison: '>=' | '<=';
  target: number;
  met: boolean;
}

export interface Report {
  date: string;
  quick: boolean;
  node: string;
  cpus: number;
  note: string;
  settings: { connections: number; warmupSeconds: number; durationSeconds: number; runs: number; tags: number };
  /** The big calendar of the calendar scenarios: how many schedules, and what making it took. */
  calendar: CalendarFigures;
  scenarios: ScenarioFigures[];
  ratios: Ratio[];
  /** The list operations alone, in the bench's process without HTTP (bench/in-process.ts): the ceiling of their REST figures. */
  inProcess: InProcessFigure[];
  /** Keys at their rate limits for a few minutes (bench/soak.ts). */
  soak: SoakFigures;
  /** Parallel creates under one Idempotency-Key. */
  idempotencyBurst: BurstFigures;
  /** Whether any scenario saw a wrong status, a 5xx, a tool error or a connection error, or the soak or the burst a problem. */
  errors: boolean;
  serviceStoppedCleanly: boolean;
}

const NOTE =
  'All processes share this machine: the load generator (autocannon, one child process), the service (node) and ' +
  'its Postgres compete for the same cores, so absolute figures are lower than on dedicated hardware; ' +
  'the ratios compare runs made under the same conditions.';

export function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
}

export function figuresOf(scenario: Scenario, runs: Run[], rssAfterStart: number | undefined): ScenarioFigures {
  const total = (key: keyof ScenarioFigures['errors']) => runs.reduce((sum, run) => sum + run[key], 0);
  return {
    id: scenario.id,
    title: scenario.title,
    requestsPerSecond: median(runs.map((run) => run.requestsPerSecond)),
    latencyP50Ms: median(runs.map((run) => run.latencyP50Ms)),
    latencyP99Ms: median(runs.map((run) => run.latencyP99Ms)),
    errors: { wrongStatus: total('wrongStatus'), status5xx: total('status5xx'), toolErrors: total('toolErrors'), connectionErrors: total('connectionErrors') },
    rssMb: { afterStart: rssAfterStart, afterRun: runs.at(-1)?.rssAfterMb },
    cpuMsPerRequest: medianCpu(runs.flatMap((run) => run.cpuMsPerRequest ?? [])),
    runs,
  };
}

function medianCpu(samples: CpuPerRequest[]): CpuPerRequest | undefined {
  if (samples.length === 0) return undefined;
  const of = (key: keyof CpuPerRequest) => median(samples.map((sample) => sample[key]));
  return { process: of('process'), postgres: of('postgres'), other: of('other'), idle: of('idle') };
}

export function hasErrors(figures: ScenarioFigures): boolean {
  return Object.values(figures.errors).some((count) => count > 0);
}

export function ratiosOf(figures: ScenarioFigures[]): Ratio[] {
  const of = (id: ScenarioId) => figures.find((f) => f.id === id)!;
  const ratio = (id: string, description: string, value: number, comparison: Ratio['comparison'], target: number): Ratio => ({
    id,
    description,
    value,
    comparison,
    target,
    met: comparison === '>=' ? value >= target : value <= target,
  });
  const throughput = (service: ScenarioId, baseline: ScenarioId) => of(service).requestsPerSecond / of(baseline).requestsPerSecond;
  const p50 = (slower: ScenarioId, faster: ScenarioId) => of(slower).latencyP50Ms / of(faster).latencyP50Ms;
  return [
    ratio('restThroughputVsBaseline', 'REST users/me throughput / baseline throughput (same bytes)', throughput('rest-users-me', 'baseline-users-me'), '>=', 0.4),
    // At a fixed number of connections the mean latency is connections / throughput (Little's law), so the ratio of
    // the means is the inverse ratio of the throughputs.
    ratio('mcpMeanVsRestMean', 'MCP 2025 users/me mean latency / REST users/me mean latency', throughput('rest-users-me', 'mcp-users-me'), '<=', 1.3),
    ratio('mcpPostsMeanVsRestMean', 'MCP 2025 listPosts mean latency / REST GET /posts mean latency', throughput('rest-posts', 'mcp-posts'), '<=', 1.3),
    ratio('mcp2026MeanVsRestMean', 'MCP 2026 users/me mean latency / REST users/me mean latency', throughput('rest-users-me', 'mcp2026-users-me'), '<=', 1.3),
    ratio('mcp2026PostsMeanVsRestMean', 'MCP 2026 listPosts mean latency / REST GET /posts mean latency', throughput('rest-posts', 'mcp2026-posts'), '<=', 1.3),
    ratio('postsThroughputVsBaseline', 'REST GET /posts throughput / baseline throughput (same bytes)', throughput('rest-posts', 'baseline-posts'), '>=', 0.4),
    ratio(
      'schedulesThroughputVsBaseline',
      'REST GET /schedules throughput / baseline throughput (same bytes)',
      throughput('rest-schedules', 'baseline-schedules'),
      '>=',
      0.4,
    ),
    ratio('calendarEndVsStartP50', 'GET /schedules p50 latency: page at the end / first page', p50('calendar-end', 'calendar-start'), '<=', 1.5),
  ];
}

export interface CalendarFigures {
  schedules: number;
  posts: number;
  insertSeconds: number;
  analyzeSeconds: number;
}

export function buildReport(
  options: Options,
  tags: number,
  calendar: CalendarFigures,
  scenarios: ScenarioFigures[],
  inProcess: InProcessFigure[],
  soaked: { soak: SoakFigures; burst: BurstFigures },
  serviceStoppedCleanly: boolean,
): Report {
  return {
    date: new Date().toISOString(),
    quick: options.quick,
    node: process.version,
    cpus: cpus().length,
    note: NOTE,
    settings: { connections: options.connections, warmupSeconds: options.warmupSeconds, durationSeconds: options.durationSeconds, runs: options.runs, tags },
    calendar,
    scenarios,
    ratios: ratiosOf(scenarios),
    inProcess,
    soak: soaked.soak,
    idempotencyBurst: soaked.burst,
    errors: scenarios.some(hasErrors) || inProcess.some((figure) => figure.wrongAnswers > 0) || soaked.soak.problems.length > 0 || soaked.burst.problems.length > 0,
    serviceStoppedCleanly,
  };
}

const row = (cells: (string | number)[]) => `| ${cells.join(' | ')} |`;
const fixed = (value: number | undefined, digits: number) => (value === undefined || Number.isNaN(value) ? 'n/a' : value.toFixed(digits));

/** Markdown, so it can be pasted into docs/benchmarks.md as it is. */
export function renderMarkdown(report: Report): string {
  const { settings } = report;
  const lines = [
    `${report.quick ? 'Quick run' : 'Run'} of ${report.date}: Node ${report.node}, ${report.cpus} CPU cores shared by the load generator, the service and Postgres; ` +
      `${settings.connections} connections, ${settings.runs} run${settings.runs > 1 ? 's' : ''} of ${settings.warmupSeconds} s warm-up + ${settings.durationSeconds} s per scenario` +
      `${settings.runs > 1 ? ', medians' : ''}; errors are totals ("wrong status": not 2xx, or not 201 for POST /posts); ` +
      `RSS is of the process that answers (the baseline server, or the service's node process). ` +
      `The calendar workspace holds ${report.calendar.schedules.toLocaleString('en-US')} schedules of ${report.calendar.posts.toLocaleString('en-US')} posts, ` +
      `inserted in ${report.calendar.insertSeconds.toFixed(1)} s (ANALYZE ${report.calendar.analyzeSeconds.toFixed(1)} s).`,
    '',
    '| Scenario | req/s | p50 ms | p99 ms | wrong status | 5xx | tool errors | conn. errors | RSS MiB (start → after) |',
    '|---|--:|--:|--:|--:|--:|--:|--:|--:|',
    ...report.scenarios.map((s) => row([
        s.title,
        fixed(s.requestsPerSecond, 0),
        fixed(s.latencyP50Ms, 2),
        fixed(s.latencyP99Ms, 2),
        s.errors.wrongStatus,
        s.errors.status5xx,
        s.errors.toolErrors,
        s.errors.connectionErrors,
        `${fixed(s.rssMb.afterStart, 0)} → ${fixed(s.rssMb.afterRun, 0)}`,
      ]),
    ),
    '',
    '| Ratio | Value | Target | Met |',
    '|---|--:|--:|---|',
    ...report.ratios.map((r) => row([r.description, fixed(r.value, 2), `${r.comparison === '>=' ? '≥' : '≤'} ${r.target}`, r.met ? 'yes' : 'no'])),
    '',
    ...renderCpu(report),
    '',
    ...renderInProcess(report),
    '',
    ...renderSoak(report.soak, report.idempotencyBurst),
  ];
  return lines.join('\n');
}

const cpuCells = (cpu: CpuPerRequest | undefined) => [cpu?.process, cpu?.postgres, cpu?.other, cpu?.idle].map((ms) => fixed(ms, 2));

/**
 * Where a request's CPU went, machine-wide: what limits a figure on shared cores. A request cannot be answered faster
 * than the machine's cores divided by all the CPU it costs, the load generator's included.
 */
function renderCpu(report: Report): string[] {
  return [
    'CPU a request while measured, in ms (medians over the runs): the answering process (the baseline server or the ' +
      "service's node process), every Postgres process, the rest of the machine (the load generator, the bench), and " +
      `what was left idle. With ${report.cpus} cores, no scenario exceeds ${report.cpus} × 1000 / (the first three together) requests a second.`,
    '',
    '| Scenario | answering process | Postgres | other | idle |',
    '|---|--:|--:|--:|--:|',
    ...report.scenarios.map((s) => row([s.title, ...cpuCells(s.cpuMsPerRequest)])),
  ];
}

/** The ceiling of each list's REST figure: its operation alone, against the same baseline. */
function renderInProcess(report: Report): string[] {
  const baseline = (id: InProcessFigure['id']) => report.scenarios.find((s) => s.id === `baseline-${id}`)!.requestsPerSecond;
  return [
    `The list operations alone: run in the bench's own process through the pipeline (as the admin command runs them), ` +
      `${report.settings.connections} calls at once, no HTTP, no socket, no key check; every answer checked against the bytes the service sent over HTTP. ` +
      'No work on the HTTP side can lift a REST figure above its operation\'s.',
    '',
    '| Operation | calls/s | / its baseline (bare Express, same bytes) | CPU ms a call: Node, Postgres, other, idle | wrong answers |',
    '|---|--:|--:|--:|--:|',
    ...report.inProcess.map((f) =>
      row([f.operationId, fixed(f.callsPerSecond, 0), fixed(f.callsPerSecond / baseline(f.id), 2), cpuCells(f.cpuMsPerCall).join(' / '), f.wrongAnswers]),
    ),
  ];
}

function renderSoak(soak: SoakFigures, burst: BurstFigures): string[] {
  const { writes } = soak;
  return [
    `Soak: ${soak.keys} keys, each of its own workspace on a plan of ${soak.limitPerMinute} requests a minute, one request at a time, ` +
      `spending the limit in the first half of each window, for ${soak.seconds} s: ${soak.requests} requests.`,
    '',
    '| Request | sent | succeeded | RATE_LIMITED |',
    '|---|--:|--:|--:|',
    ...Object.entries(soak.byKind).map(([kind, tally]) => row([kind, tally.sent, tally.admitted, tally.limited])),
    '',
    '| Check | Value |',
    '|---|--:|',
    row(['5xx answers', soak.status5xx]),
    row(['requests without an answer (writes retried with their Idempotency-Key)', soak.connectionErrors]),
    row(['answers neither a success nor RATE_LIMITED', soak.unexpectedAnswers]),
    row(['RATE_LIMITED before the window\'s limit was spent', soak.early429s]),
    row(['admitted after the window\'s limit was spent', soak.overLimit]),
    row(['answers whose RateLimit count skipped or repeated', soak.countMismatches]),
    row(['answers without the RateLimit headers', soak.missingHeaders]),
    row(['creates answered 201 / posts in the database', `${writes.createsSucceeded} / ${writes.postsInDatabase}`]),
    row(['post ids answered twice', writes.duplicatePostIds]),
    row(['rescheduled schedules not holding their last successful time', `${writes.reschedulesMismatched} of ${writes.reschedulesChecked}`]),
    row(['service RSS MiB, start → end', `${fixed(soak.rssMb.start, 0)} → ${fixed(soak.rssMb.end, 0)}`]),
    '',
    `Idempotency: ${burst.requests} parallel POST /posts with one Idempotency-Key and one body: ${burst.postsCreated} post created; ` +
      `answers ${Object.entries(burst.statuses).map(([status, count]) => `${count} × ${status}`).join(', ')}; ` +
      `the 201s ${burst.sameAnswers ? 'all the same answer' : 'differ'}.`,
    ...(soak.problems.length + burst.problems.length ? ['', `Problems: ${[...soak.problems, ...burst.problems].join('; ')}.`] : []),
  ];
}

export interface PublishingReport extends PublishingFigures {
  ratios: Ratio[];
}

/** The engine's targets (issue 14), against the loopback endpoint: the PDS figures are reported beside them. */
export function publishingReport(figures: PublishingFigures): PublishingReport {
  const loopback = figures.targets.find((target) => target.id === 'loopback')!;
  const p99 = loopback.delay.p99Ms;
  const rate = loopback.throughput.perSecond / figures.emptyJobs.perSecond;
  const floor = figures.floorJobs.perSecond / figures.emptyJobs.perSecond;
  return {
    ...figures,
    ratios: [
      { id: 'publishDelayP99', description: 'p99 delay from scheduledAt to the platform call, ms (loopback)', value: p99, comparison: '<=', target: 1000, met: p99 <= 1000 },
      {
        id: 'publishThroughputVsEmptyJobs',
        description: 'schedules published a second (loopback) / graphile-worker empty jobs a second',
        value: rate,
        comparison: '>=',
        target: 0.5,
        met: rate >= 0.5,
      },
      {
        id: 'floorThroughputVsEmptyJobs',
        description: 'floor jobs a second (claim, one call, record) / graphile-worker empty jobs a second: the most any engine reaches here',
        value: floor,
        comparison: '>=',
        target: 0.5,
        met: floor >= 0.5,
      },
    ],
  };
}

const loopbackRate = (figures: PublishingFigures) => figures.targets.find((target) => target.id === 'loopback')!.throughput.perSecond;

export function renderPublishing(report: PublishingReport): string {
  return [
    `Publishing engine: the service's worker (concurrency ${report.workerConcurrency}, polling every ${report.pollIntervalMs} ms); ` +
      `delay = the record's createdAt (set right before the call) − scheduledAt, over schedules due evenly within the spread; ` +
      `throughput = schedules due at once / (last publishedAt − the commit that made them due). graphile-worker's empty jobs: ` +
      `${report.emptyJobs.jobs} at once, same concurrency and polling, ${fixed(report.emptyJobs.perSecond, 0)} jobs/s. ` +
      `Floor jobs (the least an engine does per schedule: claim a row by compare-and-set, POST one record with Node's fetch (as @atproto/api sends) ` +
      `to the same loopback endpoint, run in a process of its own, record the outcome): ${report.floorJobs.jobs} at once, the same runner settings, ${fixed(report.floorJobs.perSecond, 0)} jobs/s; ` +
      `the engine publishes ${fixed(loopbackRate(report) / report.floorJobs.perSecond, 2)} as many a second as the floor runs. ` +
      `Idle, with nothing due, the database committed ${fixed(report.idle.transactionsPerSecond, 1)} transactions a second over ${report.idle.seconds} s (the worker's polling, sweeps and crontab).`,
    '',
    '| Target | schedules (delay) | spread s | delay p50 ms | delay p99 ms | delay max ms | schedules (at once) | published/s | at once: delay p50 ms | at once: delay p99 ms |',
    '|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|',
    ...report.targets.map((t) =>
      row([
        t.title,
        t.delay.schedules,
        t.delay.spreadSeconds,
        fixed(t.delay.p50Ms, 0),
        fixed(t.delay.p99Ms, 0),
        fixed(t.delay.maxMs, 0),
        t.throughput.schedules,
        fixed(t.throughput.perSecond, 0),
        fixed(t.throughput.p50DelayMs, 0),
        fixed(t.throughput.p99DelayMs, 0),
      ]),
    ),
    ...report.targets.flatMap((t) => (t.once ? ['', mastodonLine(report, t)] : [])),
    '',
    '| Ratio | Value | Target | Met |',
    '|---|--:|--:|---|',
    ...report.ratios.map((r) => row([r.description, fixed(r.value, 2), `${r.comparison === '>=' ? '≥' : '≤'} ${r.target}`, r.met ? 'yes' : 'no'])),
  ].join('\n');
}

/** A Mastodon target's rate beside Bluesky's on the minimal endpoint and the floor, and what the instance saw of it. */
function mastodonLine(report: PublishingReport, target: PublishingReport['targets'][number]): string {
  const once = target.once!;
  const answers = Object.entries(once.answers)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([answer, count]) => `${count} × ${answer}`)
    .join(', ');
  return (
    `Mastodon: published ${fixed(target.throughput.perSecond / loopbackRate(report), 2)} as many a second as Bluesky on the minimal endpoint, ` +
    `${fixed(target.throughput.perSecond / report.floorJobs.perSecond, 2)} of the floor; delay = when the status's first POST reached the instance − scheduledAt. ` +
    `Exactly once: ${once.schedules} schedules PUBLISHED, ${once.statuses} statuses, each with its own text and Idempotency-Key; ` +
    `${once.sends} POST /api/v1/statuses, ${once.resends} of them a key's second or later send. The instance answered: ${answers}.`
  );
}
