/**
 * Evergreen recycling (`npm run bench -- --only recycle`; issue 31): a workspace of `posts` posts on a Bluesky and a
 * LinkedIn channel, inserted with set-based SQL as published long ago (with a tenth not evergreen, a tenth published
 * too recently, a twentieth scheduled again, a twentieth published on Bluesky alone, threads, first comments and
 * images among them), and a recycle rule of 50 posts a run on both channels with LinkedIn variations. Then
 * `runRecycle` (src/worker/recycle-rule.ts), called in this process with the service's database and object store as the
 * worker calls it, for `runs` successive periods after one unmeasured, each interleaved with its baseline: a create of
 * 50 rows on two channels (`createPost`, SCHEDULED_TIME, through the one pipeline as bench/in-process.ts runs
 * operations) in a workspace of its own. The pick (the run's candidate query) is timed alone before each run, and
 * EXPLAIN ANALYZEd at this size and at a tenth of it, fresh and after the runs, and with nothing eligible.
 *
 * The runs happen at one instant, so each fills the rule's posting windows further: a run's slot search meets the
 * slots of every run before it (50 to 1,000 taken slots a channel over 20 runs), more than a daily rule meets.
 */
import { performance } from 'node:perf_hooks';
import type postgres from 'postgres';
import { loadConfig } from '../src/process/config.js';
import { openCore, type Core } from '../src/service/core.js';
import { createLogger } from '../src/process/logger.js';
import { rememberThreadLanguages } from '../src/platforms/detected-languages.js';
import type { Sql } from '../src/db/index.js';
import { recycleCandidates, runRecycle } from '../src/worker/recycle-rule.js';
import { bootstrap, createIntegration, defineGenerousPlan, type Workspace } from './admin.js';
import { insertUnstoredPhoto, numberedPostId, openDatabase } from './calendar.js';
import { ALLOWANCE, PLAN } from './fixture.js';
import type { RunningService } from './service.js';
import { compactPostCounts } from '../src/worker/compact-post-facet-counts.js';

const POSTS_PER_RUN = 50;
const MIN_INTERVAL_DAYS = 30;
const VARIATIONS = ['Still worth a read.', 'From the archive.', 'In case you missed it.'];
/** Each posting window's times, the most a window takes. */
const TIMES_PER_WINDOW = 48;

export interface RecycleOptions {
  posts: number;
  runs: number;
}

export interface Timing {
  p50Ms: number;
  p99Ms: number;
}

export interface PickPlan {
  label: string;
  posts: number;
  planningMs: number;
  executionMs: number;
  /** Whether the posts are read through posts_evergreen_idx, in the order the run takes them. */
  usesEvergreenIndex: boolean;
  /** How the posts are read, e.g. "Index Scan on posts_evergreen_idx". */
  postsScan: string;
  /** Evergreen posts read to find the ones picked (those picked, and those the conditions turned down). */
  postsRead: number;
  picked: number;
  /** Shared buffers hit and read by the statement. */
  buffers: number;
}

export interface RecycleFigures {
  posts: number;
  /** Posts the rule may pick when the runs start. */
  eligible: number;
  runs: number;
  postsPerRun: number;
  /** Free posting slots a channel has within the run's horizon (7 days: a DAILY rule) before the first run. */
  slotsPerChannel: number;
  /** The large workspace made: its SQL inserts, VACUUM (ANALYZE), the language of each Bluesky text, its rule. */
  insertSeconds: number;
  /** One run of the rule: the whole transaction and what follows it (runRecycle as the worker calls it). */
  run: Timing & { firstMs: number; lastMs: number };
  perRecycledPost: Timing;
  /** The candidate query alone, on a connection of its own, rolled back, right before each run. */
  pick: Timing;
  /** The baseline: createPost of 50 rows on two channels (SCHEDULED_TIME), in this process through the pipeline. */
  create: Timing;
  /** run p50 / create p50. */
  runVsCreate: number;
  runsMs: number[];
  plans: PickPlan[];
}


interface RecycleWorkspace extends Workspace {
  posts: number;
  channels: [string, string];
  ruleId: string;
  eligible: number;
}

export async function measureRecycle(service: RunningService, options: RecycleOptions, progress: (line: string) => void): Promise<RecycleFigures> {
  await defineGenerousPlan(service.env, PLAN, ALLOWANCE);
  const database = await openDatabase(service.env);
  const core = await openCore(loadConfig(service.env), createLogger('warn'));
  try {
    const { sql } = database;
    // Enough slots for every run on the rule's six weekdays, with a fifth to spare. Today's is left out, so that no
    // recycled schedule falls due (and the service's worker publishes it) while the bench runs.
    const windows = postingWindows(Math.min(7, Math.ceil(((options.runs + 1) * POSTS_PER_RUN * 1.2) / (6 * TIMES_PER_WINDOW))));
    const smallPosts = Math.max(10, Math.round(options.posts / 10));
    progress(`recycle: inserting ${options.posts.toLocaleString('en-US')} posts, and ${smallPosts.toLocaleString('en-US')} beside them`);
    // The three workspaces and their channels at once: each is a few admin commands, each a node process.
    const [largeChannels, smallChannels, writes] = await Promise.all([
      channelled(service.env, `Recycle ${options.posts}`),
      channelled(service.env, `Recycle ${smallPosts}`),
      channelled(service.env, 'Recycle baseline'),
    ]);
    const started = performance.now();
    const large = await makeRecycleWorkspace(largeChannels, core, sql, options.posts, windows);
    const insertSeconds = (performance.now() - started) / 1000;
    const small = await makeRecycleWorkspace(smallChannels, core, sql, smallPosts, windows);
    // The rule's slots within its horizon (7 days: DAILY), made the way nextFreeSlots makes them (operations/posts/slots.ts).
    const [{ slots }] = await sql<[{ slots: number }]>`
      SELECT count(DISTINCT (day::date + time::time) AT TIME ZONE o.time_zone)::int AS slots
      FROM organizations o,
        generate_series((now() AT TIME ZONE o.time_zone)::date::timestamp, (now() AT TIME ZONE o.time_zone)::date::timestamp + interval '8 days',
          interval '1 day') AS day,
        jsonb_array_elements(${JSON.stringify(windows)}::text::jsonb) AS w, jsonb_array_elements_text(w -> 'weekdays') AS weekday,
        jsonb_array_elements_text(w -> 'times') AS time
      WHERE o.id = ${large.workspaceId} AND extract(isodow FROM day) = weekday::int
        AND (day::date + time::time) AT TIME ZONE o.time_zone > now() AND (day::date + time::time) AT TIME ZONE o.time_zone <= now() + interval '7 days'`;
    progress(`recycle: ${large.eligible} of ${options.posts} posts eligible, ${slots} slots a channel within 7 days; ${options.runs} runs after one to warm up`);

    const plans = [
      await explainPick(sql, large, 'fresh'),
      await explainPick(sql, small, 'fresh'),
      await explainPick(sql, large, 'fresh, generic plan', { generic: true }),
      await explainPick(sql, large, 'nothing eligible (every evergreen post read)', { minIntervalDays: 3650 }),
      await explainPick(sql, small, 'nothing eligible (every evergreen post read)', { minIntervalDays: 3650 }),
    ];

    const runsMs: number[] = [];
    const picksMs: number[] = [];
    const createsMs: number[] = [];
    const firstAt = Date.now() + 60 * 86_400_000;
    for (let round = 0; round <= options.runs; round++) {
      // Which goes first alternates, so drift falls on both alike.
      const recycle = async () => {
        const period = `bench-${round}`;
        const pickStarted = performance.now();
        const expected = await pick(sql, large);
        const pickMs = performance.now() - pickStarted;
        const runStarted = performance.now();
        const ran = await runRecycle(core.db, core.app.storage, large.ruleId, period);
        const runMs = performance.now() - runStarted;
        await checkRun(sql, large, period, ran, expected);
        if (round > 0) {
          picksMs.push(pickMs);
          runsMs.push(runMs);
        }
      };
      const create = async () => {
        const rows = Array.from({ length: POSTS_PER_RUN }, (_, index) => ({
          content: `Baseline post ${round}.${index}: what we shipped this week, and what comes next. https://example.com/blog/${round}-${index}`,
          scheduledAt: new Date(firstAt + (round * POSTS_PER_RUN + index) * 600_000).toISOString(),
        }));
        const createStarted = performance.now();
        const outcome = await core.runAs(writes, 'createPost', { rows, shared: { selectedIntegrations: writes.channels }, postAction: 'SCHEDULED_TIME' });
        const createMs = performance.now() - createStarted;
        const count = outcome.ok ? (outcome.body as { scheduleCount: number }).scheduleCount : undefined;
        if (outcome.status !== 201 || count !== POSTS_PER_RUN * 2) throw new Error(`recycle baseline: createPost answered ${outcome.status}: ${JSON.stringify(outcome.body).slice(0, 300)}`);
        if (round > 0) createsMs.push(createMs);
      };
      if (round % 2) {
        await create();
        await recycle();
      } else {
        await recycle();
        await create();
      }
      if (round > 0) progress(`recycle: run ${round}/${options.runs}: ${runsMs.at(-1)!.toFixed(0)} ms (pick ${picksMs.at(-1)!.toFixed(1)} ms), create ${createsMs.at(-1)!.toFixed(0)} ms`);
    }
    plans.push(await explainPick(sql, large, `after ${options.runs + 1} runs`));

    const run = timing(runsMs);
    const create = timing(createsMs);
    return {
      posts: options.posts,
      eligible: large.eligible,
      runs: options.runs,
      postsPerRun: POSTS_PER_RUN,
      slotsPerChannel: slots,
      insertSeconds: round(insertSeconds),
      run: { ...run, firstMs: round(runsMs[0]!), lastMs: round(runsMs.at(-1)!) },
      perRecycledPost: timing(runsMs.map((ms) => ms / POSTS_PER_RUN)),
      pick: timing(picksMs),
      create,
      runVsCreate: round(run.p50Ms / create.p50Ms),
      runsMs: runsMs.map(round),
      plans,
    };
  } finally {
    await core.close();
    await database.close();
  }
}

/** `count` windows of 48 local times each, two minutes apart from 12:00, on every weekday but today's (UTC, the workspace's zone). */
function postingWindows(count: number): { weekdays: number[]; times: string[] }[] {
  const today = ((new Date().getUTCDay() + 6) % 7) + 1;
  const weekdays = [1, 2, 3, 4, 5, 6, 7].filter((day) => day !== today);
  return Array.from({ length: count }, (_, window) => ({
    weekdays,
    times: Array.from({ length: TIMES_PER_WINDOW }, (_, index) => {
      const minutes = 12 * 60 + (window * TIMES_PER_WINDOW + index) * 2;
      return `${String(Math.floor(minutes / 60)).padStart(2, '0')}:${String(minutes % 60).padStart(2, '0')}`;
    }),
  }));
}

async function channelled(env: NodeJS.ProcessEnv, name: string): Promise<Workspace & { channels: [string, string] }> {
  const workspace = await bootstrap(env, PLAN);
  const channels = await Promise.all([
    createIntegration(env, workspace.workspaceId, 'BLUESKY', `${name} on Bluesky`),
    createIntegration(env, workspace.workspaceId, 'LINKEDIN', `${name} on LinkedIn`),
  ]);
  return { ...workspace, channels: channels as [string, string] };
}

/**
 * Post n (1 = the newest) of the workspace, by n mod 20: 0 and 10 not evergreen; 1 and 11 published 5 days ago (too
 * recently for the rule); 2 published long ago and scheduled again on Bluesky (waiting to publish); 3 published on
 * Bluesky alone; the others published on both channels 35 days to a year ago. Among them: a Bluesky thread of three
 * every 25th, a first comment every 7th, an image every 10th (n mod 10 = 5).
 */
async function makeRecycleWorkspace(
  workspace: Workspace & { channels: [string, string] },
  core: Core,
  sql: postgres.Sql,
  posts: number,
  windows: { weekdays: number[]; times: string[] }[],
): Promise<RecycleWorkspace> {
  const ws = workspace.workspaceId;
  const [bluesky, linkedin] = workspace.channels;
  const postId = numberedPostId(sql, ws);
  // The root schedule of post n on a channel, derived like the post's id, so its thread parts can name it.
  const rootId = (channel: postgres.PendingQuery<postgres.Row[]>) => sql`overlay(overlay(md5(${ws}::text || ':' || n || ':' || ${channel}::text) placing '4' from 13) placing '8' from 17)::uuid`;
  const age = sql`CASE WHEN n % 10 = 1 THEN interval '5 days' ELSE interval '35 days' + (n * 37 % 330) * interval '1 day' END`;
  const ids = await sql.begin(async (tx) => {
    // Channels made by the admin command have no credentials; a rule only recycles to channels that can publish.
    await tx`UPDATE integrations SET token_status = 'VALID' WHERE organization_id = ${ws}`;
    const mediaId = await insertUnstoredPhoto(tx, ws);
    const made = await tx<{ id: string }[]>`
      INSERT INTO posts (id, organization_id, user_id, content, is_evergreen, created_at, updated_at)
      SELECT ${postId}, ${ws}::uuid, ${workspace.userId}::uuid,
        'Evergreen ' || n || ': how we plan a week of posts in ten minutes, and the checklist we use. https://example.com/guides/' || n,
        n % 10 <> 0, now() - ${age} - interval '1 day', now() - ${age} - interval '1 day'
      FROM generate_series(1, ${posts}::int) AS n
      RETURNING id`;
    await tx`
      INSERT INTO schedules (id, organization_id, post_id, integration_id, user_id, status, scheduled_at, published_at, scheduled_content,
        first_comment, platform_post_id, quota_spent, created_at, updated_at)
      SELECT ${rootId(sql`c.id`)}, ${ws}::uuid, ${postId}, c.id, ${workspace.userId}::uuid, 'PUBLISHED', now() - ${age}, now() - ${age},
        'Evergreen ' || n || ': how we plan a week of posts in ten minutes, and the checklist we use. https://example.com/guides/' || n,
        CASE WHEN n % 7 = 0 THEN 'The checklist: https://example.com/checklist' END, 'bench-' || n, true, now() - ${age}, now() - ${age}
      FROM generate_series(1, ${posts}::int) AS n
      CROSS JOIN (VALUES (${bluesky}::uuid), (${linkedin}::uuid)) AS c (id)
      WHERE c.id = ${bluesky}::uuid OR n % 20 <> 3`;
    await tx`
      INSERT INTO schedules (organization_id, post_id, integration_id, user_id, status, scheduled_at, published_at, scheduled_content,
        thread_root_schedule_id, thread_order, created_at, updated_at)
      SELECT ${ws}::uuid, ${postId}, ${bluesky}::uuid, ${workspace.userId}::uuid, 'PUBLISHED', now() - ${age}, now() - ${age},
        'Part ' || part || ' of the thread about post ' || n || '.', ${rootId(sql`${bluesky}::uuid`)}, part, now() - ${age}, now() - ${age}
      FROM generate_series(1, ${posts}::int) AS n CROSS JOIN generate_series(1, 2) AS part
      WHERE n % 25 = 7`;
    // Scheduled again by hand, far ahead: not recycled while it waits.
    await tx`
      INSERT INTO schedules (organization_id, post_id, integration_id, user_id, status, scheduled_at, scheduled_content, quota_spent)
      SELECT ${ws}::uuid, ${postId}, ${bluesky}::uuid, ${workspace.userId}::uuid, 'SCHEDULED', now() + interval '90 days' + n * interval '1 minute',
        'Evergreen ' || n || ', once more.', true
      FROM generate_series(1, ${posts}::int) AS n WHERE n % 20 = 2`;
    await tx`
      INSERT INTO attachments (post_id, organization_id, media_id, "order", alt_text)
      SELECT ${postId}, ${ws}::uuid, ${mediaId}::uuid, 0, 'A photo' FROM generate_series(1, ${posts}::int) AS n WHERE n % 10 = 5`;
    return made.map((post) => post.id);
  });
  // What autovacuum and the crontab do after this many inserts (see bench/lists.ts).
  await compactPostCounts(sql);
  await sql`VACUUM (ANALYZE) integrations, posts, post_search, schedules, attachments, recycle_events, post_facets, post_facet_counts, post_day_counts`;
  // The languages of the Bluesky texts, as createPost detects them when a post is written (a recycle reuses the text).
  for (let index = 0; index < ids.length; index += 1000) await rememberThreadLanguages(core.db, ids.slice(index, index + 1000));

  // The rule, made through its operation, disabled; its real periods taken before it is enabled, so that neither its
  // first run (queued by the create) nor the crontab's sweep runs it in the service's worker beside the bench.
  const member = { userId: workspace.userId, workspaceId: ws };
  const outcome = await core.runAs(member, 'createRecycleRule', {
    name: 'Evergreen, 50 a day',
    integrationIds: [bluesky, linkedin],
    frequency: 'DAILY',
    postsPerRun: POSTS_PER_RUN,
    minIntervalDays: MIN_INTERVAL_DAYS,
    postingWindows: windows,
    linkedinVariations: VARIATIONS,
    enabled: false,
  });
  if (outcome.status !== 201) throw new Error(`createRecycleRule answered ${outcome.status}: ${JSON.stringify(outcome.body).slice(0, 300)}`);
  const ruleId = (outcome.body as { id: string }).id;
  await sql`
    INSERT INTO recycle_runs (rule_id, period)
    SELECT r.id, recycle_period(r.frequency, o.time_zone, now() + k * interval '1 day')
    FROM recycle_rules r JOIN organizations o ON o.id = r.organization_id, generate_series(0, 2) AS k
    WHERE r.id = ${ruleId}
    ON CONFLICT DO NOTHING`;
  await sql`UPDATE recycle_rules SET enabled = true WHERE id = ${ruleId}`;
  const eligible = Array.from({ length: posts }, (_, index) => index + 1).filter((n) => n % 10 !== 0 && n % 10 !== 1 && n % 20 !== 2).length;
  return { ...workspace, posts, ruleId, eligible };
}

const ROLLBACK = Symbol('rollback');

/** `work` in a transaction that is rolled back: the pick locks the posts it picks. */
async function rolledBack<T>(sql: postgres.Sql, work: (tx: postgres.TransactionSql) => Promise<T>): Promise<T> {
  let result: T | undefined;
  await sql
    .begin(async (tx) => {
      result = await work(tx);
      throw ROLLBACK;
    })
    .catch((error: unknown) => {
      if (error !== ROLLBACK) throw error;
    });
  return result!;
}

/** The rule's candidate query (the run's own, src/worker/recycle-rule.ts) in `workspace`, with `minIntervalDays`. */
const candidates = (tx: postgres.TransactionSql, workspace: RecycleWorkspace, minIntervalDays: number) =>
  recycleCandidates(tx as unknown as Sql, workspace.ruleId, {
    organizationId: workspace.workspaceId,
    tagIds: [],
    integrationIds: workspace.channels,
    minIntervalDays,
    maxRuns: null,
    postsPerRun: POSTS_PER_RUN,
  });

/** The posts the rule's next run picks, in order. */
function pick(sql: postgres.Sql, workspace: RecycleWorkspace): Promise<string[]> {
  return rolledBack(sql, async (tx) => (await candidates(tx, workspace, MIN_INTERVAL_DAYS)).map((row) => row.id));
}

/** A run recycled a full run of posts, to every channel each was published to, and picked what the pick alone picked. */
async function checkRun(sql: postgres.Sql, workspace: RecycleWorkspace, period: string, ran: { recycled: number; skipped: number } | null, expected: string[]): Promise<void> {
  if (!ran || ran.recycled !== POSTS_PER_RUN || ran.skipped !== 0) throw new Error(`recycle run ${period}: ${JSON.stringify(ran)}, expected ${POSTS_PER_RUN} recycled`);
  const events = await sql<{ postId: string; skipped: string }[]>`
    SELECT e.post_id AS "postId", e.skipped::text AS skipped FROM recycle_events e JOIN recycle_runs r ON r.id = e.run_id
    WHERE r.rule_id = ${workspace.ruleId} AND r.period = ${period}`;
  const skipped = events.find((event) => event.skipped !== '[]');
  if (skipped) throw new Error(`recycle run ${period}: a channel was skipped: ${skipped.skipped}`);
  const picked = new Set(events.map((event) => event.postId));
  if (picked.size !== expected.length || expected.some((id) => !picked.has(id))) {
    throw new Error(`recycle run ${period}: the run picked other posts than its candidate query alone picked just before`);
  }
}

interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Index Name'?: string;
  'Actual Rows'?: number;
  'Actual Loops'?: number;
  'Rows Removed by Filter'?: number;
  'Shared Hit Blocks'?: number;
  'Shared Read Blocks'?: number;
  Plans?: PlanNode[];
}

/** EXPLAIN ANALYZE of the pick in `workspace` (rolled back), with its custom plan unless `generic`. */
async function explainPick(
  sql: postgres.Sql,
  workspace: RecycleWorkspace,
  label: string,
  { generic = false, minIntervalDays = MIN_INTERVAL_DAYS } = {},
): Promise<PickPlan> {
  const [explained] = await rolledBack(sql, async (tx) => {
    await tx.unsafe(`SET LOCAL plan_cache_mode = ${generic ? 'force_generic_plan' : 'force_custom_plan'}`);
    return tx<{ 'QUERY PLAN': [{ Plan: PlanNode; 'Planning Time': number; 'Execution Time': number }] }[]>`
      EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) ${candidates(tx, workspace, minIntervalDays)}`;
  });
  const { Plan: plan, 'Planning Time': planningMs, 'Execution Time': executionMs } = explained!['QUERY PLAN'][0];
  const nodes: PlanNode[] = [];
  const walk = (node: PlanNode) => {
    nodes.push(node);
    node.Plans?.forEach(walk);
  };
  walk(plan);
  // The posts' own scan: the node on posts outside the subqueries (those read other tables).
  const scan = nodes.find((node) => node['Relation Name'] === 'posts');
  const read = scan ? ((scan['Actual Rows'] ?? 0) + (scan['Rows Removed by Filter'] ?? 0)) * (scan['Actual Loops'] ?? 1) : 0;
  return {
    label,
    posts: workspace.posts,
    planningMs: round(planningMs),
    executionMs: round(executionMs),
    usesEvergreenIndex: scan?.['Index Name'] === 'posts_evergreen_idx',
    postsScan: scan ? `${scan['Node Type']}${scan['Index Name'] ? ` on ${scan['Index Name']}` : ' on posts'}` : 'none',
    postsRead: read,
    picked: plan['Actual Rows'] ?? 0,
    buffers: (plan['Shared Hit Blocks'] ?? 0) + (plan['Shared Read Blocks'] ?? 0),
  };
}

const round = (value: number) => Math.round(value * 100) / 100;
const quantile = (sorted: number[], q: number) => sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))]!;

function timing(values: number[]): Timing {
  const sorted = [...values].sort((a, b) => a - b);
  return { p50Ms: round(quantile(sorted, 0.5)), p99Ms: round(quantile(sorted, 0.99)) };
}

export function renderRecycle(figures: RecycleFigures): string {
  const posts = figures.posts.toLocaleString('en-US');
  return [
    `### Evergreen recycling (${posts} posts, ${figures.eligible.toLocaleString('en-US')} eligible; ${figures.runs} runs of ${figures.postsPerRun} posts on two channels)`,
    '',
    `The workspace made in ${figures.insertSeconds} s (inserts, VACUUM ANALYZE, languages, rule). Each run and each create is timed alone, one after the other.`,
    '',
    '| | p50 ms | p99 ms |',
    '|---|--:|--:|',
    `| a recycle run (runRecycle, ${figures.postsPerRun} posts) | ${figures.run.p50Ms} | ${figures.run.p99Ms} |`,
    `| a recycle run, per recycled post | ${figures.perRecycledPost.p50Ms} | ${figures.perRecycledPost.p99Ms} |`,
    `| its pick alone (the candidate query) | ${figures.pick.p50Ms} | ${figures.pick.p99Ms} |`,
    `| baseline: createPost, ${figures.postsPerRun} rows on two channels (SCHEDULED_TIME) | ${figures.create.p50Ms} | ${figures.create.p99Ms} |`,
    '',
    `A recycle run of ${figures.postsPerRun} posts costs **${figures.runVsCreate}×** a create of ${figures.postsPerRun} posts (p50). ` +
      `First run ${figures.run.firstMs} ms, last ${figures.run.lastMs} ms (${figures.slotsPerChannel} slots a channel within the 7-day horizon; each run takes ${figures.postsPerRun} more).`,
    '',
    '| the pick, EXPLAIN ANALYZE | posts | plan | posts read | picked | planning ms | execution ms | buffers |',
    '|---|--:|---|--:|--:|--:|--:|--:|',
    ...figures.plans.map((plan) =>
      `| ${plan.label} | ${plan.posts.toLocaleString('en-US')} | ${plan.postsScan}${plan.usesEvergreenIndex ? '' : ' (not posts_evergreen_idx)'} | ${plan.postsRead} | ${plan.picked} | ${plan.planningMs} | ${plan.executionMs} | ${plan.buffers} |`,
    ),
  ].join('\n');
}
