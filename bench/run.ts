/**
 * `npm run bench [-- --quick]`: the service's request pipeline against a bare Express app, over REST and MCP.
 * Starts the service as `npm start` does (embedded Postgres in a temporary DATA_DIR, or DATABASE_URL when set),
 * makes a workspace with tags through the admin command, then times each scenario with autocannon in a child
 * process. Prints a markdown table and writes bench/results.json (bench/.tmp/results-quick.json with --quick).
 * Exits 1 when a scenario saw errors or something failed to start; a missed target is reported, not fatal.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { bootstrap, createTags } from './admin.js';
import { startBaseline } from './baseline.js';
import { measure } from './load.js';
import { parseOptions, type Options } from './options.js';
import { rssMb } from './procs.js';
import { buildReport, figuresOf, hasErrors, renderMarkdown, type Run, type ScenarioFigures } from './report.js';
import { checkScenario, fetchBytes, scenarios, USERS_ME_PATH } from './scenarios.js';
import { startService, type RunningService } from './service.js';

const TAGS = 50;
/** Admin commands at once while making tags: each is a node process of its own. */
const ADMIN_CONCURRENCY = 4;

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

async function measureAll(options: Options, service: RunningService): Promise<ScenarioFigures[]> {
  progress('bootstrapping a workspace and its tags');
  const workspace = await bootstrap(service.env);
  await createTags(service.env, workspace.workspaceId, TAGS, ADMIN_CONCURRENCY);
  const usersMe = await fetchBytes(service.url + USERS_ME_PATH, { 'x-api-key': workspace.apiKey });

  progress('starting the baseline server');
  const baseline = await startBaseline(USERS_ME_PATH, usersMe);
  cleanups.push(baseline.stop);

  const list = scenarios({
    serviceUrl: service.url,
    servicePid: service.serverPid,
    baselineUrl: baseline.url,
    baselinePid: baseline.pid,
    apiKey: workspace.apiKey,
    usersMe,
    tagCount: TAGS,
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
        connections: options.connections,
        warmupSeconds: options.warmupSeconds,
        durationSeconds: options.durationSeconds,
      });
      runs.get(scenario.id)!.push({ ...result, rssAfterMb: rssMb(scenario.pid) });
    }
  }
  return list.map((scenario) => figuresOf(scenario, runs.get(scenario.id)!, rssAtStart.get(scenario.id)));
}

async function main(): Promise<number> {
  const options = parseOptions(process.argv.slice(2));
  progress(`starting the service (${process.env.DATABASE_URL ? 'DATABASE_URL' : 'embedded Postgres in a temporary DATA_DIR'})`);
  const service = await startService();
  let stoppedCleanly = false;
  cleanups.push(async () => {
    stoppedCleanly = (await service.stop()).clean;
  });

  let figures: ScenarioFigures[];
  try {
    figures = await measureAll(options, service);
  } catch (error) {
    progress(`failed: ${(error as Error).message}\n--- service stderr (tail) ---\n${service.stderrTail()}`);
    return 1;
  } finally {
    await cleanUp();
  }
  if (!stoppedCleanly) progress('warning: the service did not stop cleanly on SIGTERM');

  const report = buildReport(options, TAGS, figures, stoppedCleanly);
  console.log(renderMarkdown(report));
  const file = options.quick ? 'bench/.tmp/results-quick.json' : 'bench/results.json';
  const url = new URL(`../${file}`, import.meta.url);
  mkdirSync(new URL('.', url), { recursive: true });
  writeFileSync(url, `${JSON.stringify(report, null, 2)}\n`);
  progress(`results written to ${file}`);

  for (const scenario of figures.filter(hasErrors)) progress(`errors in "${scenario.title}": ${JSON.stringify(scenario.errors)}`);
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
