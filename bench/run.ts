/**
 * `npm run bench [-- --quick] [-- --only http|publishing]`: the service's request pipeline against a bare Express
 * app serving the same bytes, over REST and MCP; creates; a calendar page at the start and at the end of a million
 * schedules; a soak of several keys at their rate limits, with 20 parallel creates under one Idempotency-Key
 * (bench/soak.ts); and the publishing engine (bench/publishing.ts): delay past scheduledAt and schedules a second,
 * beside graphile-worker's empty-job rate; webhook deliveries (bench/webhooks.ts); and evergreen recycling
 * (bench/recycle.ts): a recycle run of 50 posts among 10,000 against a create of 50 posts.
 * Starts the service as `npm start` does (embedded Postgres in a temporary DATA_DIR, or DATABASE_URL when set),
 * makes its workspaces through the admin command and REST (bench/fixture.ts) and the big calendar with SQL
 * (bench/calendar.ts), then times each scenario with autocannon in a child process. Prints a markdown table and
 * writes bench/results.json (bench/.tmp/results-quick.json with --quick).
 * Exits 1 when a scenario saw errors or something failed to start; a missed target is reported, not fatal.
 */
import { measureToolList, renderToolList } from './tool-list.js';
import { mkdirSync, writeFileSync } from 'node:fs';
import { startBaseline } from './baseline.js';
import { makeCalendar, openDatabase, type Calendar } from './calendar.js';
import { defineGenerousPlan } from './admin.js';
import { makeFixture, PLAN } from './fixture.js';
import { measure } from './load.js';
import { parseOptions, type Options } from './options.js';
import { rssMb } from './procs.js';
import { measureInProcess, type InProcessFigure } from './in-process.js';
import { LIST_REQUESTS, makeListsWorkspace, measureLists, renderLists, type ListFigure } from './lists.js';
import { measurePublishing } from './publishing.js';
import { measureRecycle, renderRecycle, type RecycleFigures } from './recycle.js';
import { buildReport, figuresOf, hasErrors, publishingReport, renderMarkdown, renderPublishing, type PublishingReport, type Report, type Run, type ScenarioFigures } from './report.js';
import { measureWebhooks, renderWebhooks, type WebhookFigures } from './webhooks.js';
import { checkScenario, fetchBytes, POSTS_PATH, scenarios, SCHEDULES_PATH, USERS_ME_PATH } from './scenarios.js';
import { startService, type RunningService } from './service.js';
import { runSoak, type BurstFigures, type SoakFigures } from './soak.js';

const TAGS = 50;
/** How far ahead the timed creates schedule their posts: SCHEDULED_TIME refuses a time in the past. */
const CREATE_AHEAD_MS = 30 * 24 * 3600_000;

const started = Date.now();
const progress = (message: string) => console.error(`[bench ${((Date.now() - started) / 1000).toFixed(0).padStart(3)} s] ${message}`);

/** What has been started, stopped in reverse order, once, whatever happens. */
const cleanups: (() => Promise<unknown>)[] = [];
async function cleanUp() {
  for (let cleanup = cleanups.pop(); cleanup; cleanup = cleanups.pop()) {
    await cleanup().catch((error: unknown) => progress(`cleanup failed: ${String(error)}`));
  }
}
let interrupted = false;
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    interrupted = true;
    progress(`${signal}: stopping`);
    void cleanUp().then(() => process.exit(130));
  });
}

async function makeBigCalendar(options: Options, service: RunningService): Promise<Calendar> {
  progress(`inserting the calendar workspace's ${options.calendarSchedules.toLocaleString('en-US')} schedules`);
  const database = await openDatabase(service.env);
  try {
    const calendar = await makeCalendar(service.env, database.sql, options.calendarSchedules);
    progress(`inserted in ${calendar.insertSeconds.toFixed(1)} s, analyzed in ${calendar.analyzeSeconds.toFixed(1)} s`);
    return calendar;
  } finally {
    await database.close();
  }
}

async function measureAll(options: Options, service: RunningService): Promise<{ calendar: Calendar; figures: ScenarioFigures[]; inProcess: InProcessFigure[] }> {
  progress('making the fixture: a plan, workspaces, tags, channels, posts');
  const fixture = await makeFixture(service.env, service.url, TAGS);
  const calendar = await makeBigCalendar(options, service);

  const keyed = { 'x-api-key': fixture.lists.apiKey };
  const [usersMe, posts, schedules] = await Promise.all(
    [USERS_ME_PATH, POSTS_PATH, SCHEDULES_PATH].map((path) => fetchBytes(service.url + path, keyed)),
  );
  progress(`captured users/me (${usersMe!.length} bytes), GET /posts (${posts!.length} bytes), GET /schedules (${schedules!.length} bytes); starting the baseline server`);
  const baseline = await startBaseline({ [USERS_ME_PATH]: usersMe!, [POSTS_PATH]: posts!, [SCHEDULES_PATH]: schedules! });
  cleanups.push(baseline.stop);

  const list = scenarios({
    serviceUrl: service.url,
    servicePid: service.serverPid,
    baselineUrl: baseline.url,
    baselinePid: baseline.pid,
    lists: { apiKey: fixture.lists.apiKey, tagCount: TAGS, usersMe: usersMe!, posts: posts!, schedules: schedules! },
    writes: {
      apiKey: fixture.writes.apiKey,
      integrationIds: fixture.writes.integrationIds,
      scheduledAt: new Date(Date.now() + CREATE_AHEAD_MS).toISOString(),
    },
    calendar,
  });
  for (const scenario of list) await checkScenario(scenario);
  const rssAtStart = new Map(list.map((scenario) => [scenario.id, rssMb(scenario.pid)]));

  // Rounds of every scenario in turn, each round starting one scenario later, rather than each scenario's runs
  // back to back: drift (a warming JIT, a growing heap, a busy neighbour) then spreads over all scenarios
  // instead of always favouring the ones that run first.
  const runs = new Map(list.map((scenario) => [scenario.id, [] as Run[]]));
  for (let round = 1; round <= options.runs; round++) {
    const shift = (round - 1) % list.length;
    for (const scenario of [...list.slice(shift), ...list.slice(0, shift)]) {
      if (interrupted) throw new Error('interrupted');
      progress(`round ${round}/${options.runs}: ${scenario.title}`);
      const result = await measure({
        ...scenario.request,
        answeringPid: scenario.pid,
        connections: options.connections,
        warmupSeconds: options.warmupSeconds,
        durationSeconds: options.durationSeconds,
      });
      runs.get(scenario.id)!.push({ ...result, rssAfterMb: rssMb(scenario.pid) });
    }
  }
  progress('the list operations alone, in this process, without HTTP');
  const inProcess = await measureInProcess(
    service.env,
    fixture.lists,
    [
      { id: 'posts', operationId: 'listPosts', bytes: posts! },
      { id: 'schedules', operationId: 'listSchedules', bytes: schedules! },
    ],
    { concurrency: options.connections, warmupSeconds: options.warmupSeconds, durationSeconds: options.durationSeconds },
  );
  return { calendar, inProcess, figures: list.map((scenario) => figuresOf(scenario, runs.get(scenario.id)!, rssAtStart.get(scenario.id))) };
}

async function measureEngine(options: Options, service: RunningService): Promise<PublishingReport> {
  const database = await openDatabase(service.env);
  try {
    return publishingReport(await measurePublishing(options.publishing, service, database, progress));
  } finally {
    await database.close();
  }
}

/** The lists at scale: a workspace of `listPosts` posts and one of 1,000, each request timed in both. */
async function measureListsAtScale(options: Options, service: RunningService): Promise<{ posts: number; insertSeconds: number; figures: ListFigure[] }> {
  const database = await openDatabase(service.env);
  try {
    progress(`lists: inserting ${options.listPosts.toLocaleString('en-US')} posts, and 1,000 beside them`);
    // The plan the fixture makes (a generous rate limit: the timing loop must not meet it); again, for --only lists.
    await defineGenerousPlan(service.env, PLAN, 1_000_000);
    const large = await makeListsWorkspace(service.env, database.sql, options.listPosts);
    const small = await makeListsWorkspace(service.env, database.sql, 1000);
    progress(`lists: inserted in ${large.insertSeconds.toFixed(1)} s; timing ${LIST_REQUESTS.length} requests`);
    const figures = await measureLists(service.url, large, small, options.quick ? 20 : 100, progress);
    return { posts: options.listPosts, insertSeconds: large.insertSeconds, figures };
  } finally {
    await database.close();
  }
}

async function main(): Promise<number> {
  const options = parseOptions(process.argv.slice(2));
  // The tool list's weight needs no service: measured in every run, and alone with --only tools.
  const toolList = measureToolList();
  console.log(`${renderToolList(toolList)}\n`);
  if (options.only === 'tools') {
    mkdirSync(new URL('../bench/.tmp/', import.meta.url), { recursive: true });
    writeFileSync(new URL('../bench/.tmp/results-tools.json', import.meta.url), `${JSON.stringify({ date: new Date().toISOString(), toolList }, null, 2)}\n`);
    progress('results written to bench/.tmp/results-tools.json');
    return 0;
  }
  progress(`starting the service (${process.env.DATABASE_URL ? 'DATABASE_URL' : 'embedded Postgres in a temporary DATA_DIR'})`);
  const service = await startService();
  let stoppedCleanly = false;
  cleanups.push(async () => {
    stoppedCleanly = (await service.stop()).clean;
  });

  let measured: { calendar: Calendar; figures: ScenarioFigures[]; inProcess: InProcessFigure[]; soaked: { soak: SoakFigures; burst: BurstFigures } } | undefined;
  let publishing: PublishingReport | undefined;
  let lists: Awaited<ReturnType<typeof measureListsAtScale>> | undefined;
  let webhooks: WebhookFigures | undefined;
  let recycle: RecycleFigures | undefined;
  try {
    if (options.only === undefined || options.only === 'http') {
      const { calendar, figures, inProcess } = await measureAll(options, service);
      // After the timed scenarios, so its load does not disturb them; on the same service, in the same run.
      measured = { calendar, figures, inProcess, soaked: await runSoak(service, options.soakSeconds, progress) };
    }
    if (options.only === undefined || options.only === 'publishing') publishing = await measureEngine(options, service);
    if (options.only === undefined || options.only === 'webhooks') webhooks = await measureWebhooks(service, options.webhookEvents, progress);
    if (options.only === undefined || options.only === 'recycle') recycle = await measureRecycle(service, options.recycle, progress);
    // Last: its hundred thousand posts then weigh on nothing else measured.
    if (options.only === undefined || options.only === 'lists') lists = await measureListsAtScale(options, service);
  } catch (error) {
    progress(`failed: ${(error as Error).message}\n--- service stderr (tail) ---\n${service.stderrTail()}`);
    return 1;
  } finally {
    await cleanUp();
  }
  if (!stoppedCleanly) progress('warning: the service did not stop cleanly on SIGTERM');

  let report: Report | undefined;
  if (measured) {
    const { schedules, posts, insertSeconds, analyzeSeconds } = measured.calendar;
    report = buildReport(options, TAGS, { schedules, posts, insertSeconds, analyzeSeconds }, measured.figures, measured.inProcess, measured.soaked, stoppedCleanly);
    console.log(renderMarkdown(report));
  }
  if (publishing) console.log(`${report ? '\n' : ''}${renderPublishing(publishing)}`);
  if (lists) console.log(`${report || publishing ? '\n' : ''}${renderLists(lists.figures, lists.posts)}`);
  if (webhooks) console.log(`${report || publishing || lists ? '\n' : ''}${renderWebhooks(webhooks)}`);
  if (recycle) console.log(`${report || publishing || lists || webhooks ? '\n' : ''}${renderRecycle(recycle)}`);
  // A partial run (--only) never replaces the full results.
  const file = options.only
    ? `bench/.tmp/results-${options.only}${options.quick ? '-quick' : ''}.json`
    : options.quick
      ? 'bench/.tmp/results-quick.json'
      : 'bench/results.json';
  const url = new URL(`../${file}`, import.meta.url);
  mkdirSync(new URL('.', url), { recursive: true });
  const written = { ...(report ?? { date: new Date().toISOString(), quick: options.quick, node: process.version, serviceStoppedCleanly: stoppedCleanly }), publishing, lists, webhooks, recycle, toolList };
  writeFileSync(url, `${JSON.stringify(written, null, 2)}\n`);
  progress(`results written to ${file}`);

  if (!report) return 0;
  for (const scenario of measured!.figures.filter(hasErrors)) progress(`errors in "${scenario.title}": ${JSON.stringify(scenario.errors)}`);
  for (const problem of [...measured!.soaked.soak.problems, ...measured!.soaked.burst.problems]) progress(`soak: ${problem}`);
  if (report.errors) progress(`--- service stderr (tail) ---\n${service.stderrTail()}`);
  return report.errors ? 1 : 0;
}

main().then(
  (code) => process.exit(code),
  async (error: unknown) => {
    progress(`failed: ${error instanceof Error ? error.message : String(error)}`);
    await cleanUp();
    process.exit(1);
  },
);
