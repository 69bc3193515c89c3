/**
 * The soak (issue 16): several keys, each of a workspace of its own on a plan with a real rate limit, send a
 * mix of reads and writes (list and create posts, list schedules, reschedule, MCP calls) at a pace that spends
 * the limit in the first half of each window, for a few minutes. Each key is one client sending one request at
 * a time, so what the RateLimit headers say can be checked answer by answer. Afterwards the database is counted
 * against what the clients saw succeed. Then 20 parallel creates with one Idempotency-Key. Requests go through
 * the service's real surfaces; only the setup's target lookup and the checks read the database.
 */
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type postgres from 'postgres';
import { bootstrap, createIntegration, defineGenerousPlan, type Workspace } from './admin.js';
import { openDatabase } from './calendar.js';
import { rssMb } from './procs.js';
import { MCP_PROTOCOL_VERSION, POSTS_PATH, SCHEDULES_PATH } from './scenarios.js';
import type { RunningService } from './service.js';

const SOAK_PLAN = 'soak';
const BURST_PLAN = 'soak-burst';
/** Requests a minute of each soak key's plan. */
export const SOAK_LIMIT = 120;
export const SOAK_KEYS = 4;
/** Schedules each client moves around with reschedule, made before the soak starts. */
const TARGETS = 3;
const PARALLEL_CREATES = 20;
/** Quotas the soak cannot spend: only the rate limit may refuse. */
const ALLOWANCE = 100_000_000;
/** Attempts of a write whose answer was lost (a connection error) or still running; the same Idempotency-Key each time. */
const WRITE_ATTEMPTS = 10;

type Kind = 'listPosts' | 'createPost' | 'listSchedules' | 'reschedule' | 'mcpListPosts';
/** A cycle of twenty: 30 % list posts, 20 % creates, 20 % list schedules, 15 % reschedules, 15 % MCP calls. */
const MIX: Kind[] = (
  'listPosts createPost listSchedules listPosts reschedule mcpListPosts listPosts createPost listSchedules listPosts ' +
  'reschedule mcpListPosts listPosts createPost listSchedules listPosts reschedule mcpListPosts createPost listSchedules'
).split(' ') as Kind[];
const KINDS: Kind[] = ['listPosts', 'createPost', 'listSchedules', 'reschedule', 'mcpListPosts'];

export interface SoakFigures {
  seconds: number;
  keys: number;
  limitPerMinute: number;
  requests: number;
  byKind: Record<Kind, { sent: number; admitted: number; limited: number }>;
  status5xx: number;
  /** Connection errors (reads are not retried; writes are, with their Idempotency-Key, and count here only when they never got an answer). */
  connectionErrors: number;
  /** Answers that were neither the operation's success nor RATE_LIMITED (the first few, described). */
  unexpectedAnswers: number;
  unexpectedSamples: string[];
  /** RATE_LIMITED while the window still had requests left, by the headers of the answer before it or its own. */
  early429s: number;
  /** Admitted after an answer in the same window said none were left. */
  overLimit: number;
  /** Answers whose `r` was not one less than the answer before it in the same window (this client is the key's only user). */
  countMismatches: number;
  /** Answers without both RateLimit headers. */
  missingHeaders: number;
  writes: { createsSucceeded: number; postsInDatabase: number; duplicatePostIds: number; reschedulesChecked: number; reschedulesMismatched: number };
  rssMb: { start: number | undefined; end: number | undefined };
  problems: string[];
}

export interface BurstFigures {
  requests: number;
  statuses: Record<string, number>;
  postsCreated: number;
  /** Whether every 201 carried the same body: the first answer, replayed. */
  sameAnswers: boolean;
  problems: string[];
}

interface Client extends Workspace {
  integrationId: string;
  /** Schedules this client reschedules, and the time its last successful reschedule of each set. */
  targets: Map<string, string | undefined>;
  setupPosts: number;
}

interface Answer {
  kind: Kind;
  status: number;
  /** RATE_LIMITED, as a 429 or as an MCP tool error. */
  limited: boolean;
  /** The operation's own success: 2xx, and a tool result that is not an error. */
  succeeded: boolean;
  body: unknown;
  receivedAt: number;
  rateLimit: { remaining: number; reset: number } | undefined;
}

interface ClientRun {
  answers: Answer[];
  connectionErrors: number;
  createdPostIds: string[];
}

export async function runSoak(service: RunningService, seconds: number, progress: (message: string) => void): Promise<{ soak: SoakFigures; burst: BurstFigures }> {
  progress(`soak: ${SOAK_KEYS} workspaces on a plan of ${SOAK_LIMIT} requests a minute`);
  await defineGenerousPlan(service.env, SOAK_PLAN, ALLOWANCE, SOAK_LIMIT);
  await defineGenerousPlan(service.env, BURST_PLAN, ALLOWANCE);
  const database = await openDatabase(service.env);
  try {
    const clients = await Promise.all(Array.from({ length: SOAK_KEYS }, () => makeClient(service, database.sql, SOAK_PLAN)));
    // The limit is spent in the first half of each window (of the run, when it is shorter than two windows), then refused.
    const fillSeconds = Math.min(30, seconds / 2);
    const intervalMs = (fillSeconds * 1000) / SOAK_LIMIT;
    progress(`soak: ${seconds} s, each key sending one request at a time, every ${intervalMs.toFixed(0)} ms`);
    const rssStart = rssMb(service.serverPid);
    const runs = await Promise.all(clients.map((client) => soakClient(service.url, client, Date.now() + seconds * 1000, intervalMs)));
    const rssEnd = rssMb(service.serverPid);
    const soak = await soakFigures(database.sql, clients, runs, seconds, { start: rssStart, end: rssEnd });

    progress(`idempotency: ${PARALLEL_CREATES} parallel creates with one Idempotency-Key`);
    const burst = await idempotencyBurst(service, database.sql);
    return { soak, burst };
  } finally {
    await database.close();
  }
}

/** A workspace with one channel and TARGETS scheduled posts; the setup requests happen before the soak's windows matter. */
async function makeClient(service: RunningService, sql: postgres.Sql, plan: string): Promise<Client> {
  const workspace = await bootstrap(service.env, plan);
  const integrationId = await createIntegration(service.env, workspace.workspaceId, 'BLUESKY', 'Soak on Bluesky');
  const postIds: string[] = [];
  for (let i = 0; i < TARGETS; i++) {
    const answer = await createPost(service.url, workspace.apiKey, integrationId, `Soak target ${i + 1}`, randomUUID());
    if (answer.status !== 201) throw new Error(`soak setup: POST /posts answered ${answer.status}: ${JSON.stringify(answer.body)}`);
    postIds.push(...(answer.body as { postIds: string[] }).postIds);
  }
  const schedules = await sql<{ id: string }[]>`SELECT id FROM schedules WHERE post_id = ANY(${postIds}::uuid[]) ORDER BY id`;
  return { ...workspace, integrationId, targets: new Map(schedules.map((schedule) => [schedule.id, undefined])), setupPosts: postIds.length };
}

/** One key's client: one request at a time, every `intervalMs` (never catching up in a burst), until `endAt`. */
async function soakClient(url: string, client: Client, endAt: number, intervalMs: number): Promise<ClientRun> {
  const run: ClientRun = { answers: [], connectionErrors: 0, createdPostIds: [] };
  const targets = [...client.targets.keys()];
  for (let index = 0, next = Date.now(); Date.now() < endAt; index++) {
    await sleep(Math.max(0, next - Date.now()));
    next = Math.max(next + intervalMs, Date.now());
    const kind = MIX[index % MIX.length]!;
    if (kind === 'createPost') {
      const key = randomUUID();
      const answer = await write(run, () => createPost(url, client.apiKey, client.integrationId, `Soak post ${key}`, key));
      if (answer?.status === 201) run.createdPostIds.push(...(answer.body as { postIds: string[] }).postIds);
    } else if (kind === 'reschedule') {
      const target = targets[index % targets.length]!;
      // Distinct times, a few weeks ahead: the last successful one must be what the database holds.
      const scheduledAt = new Date(Date.now() + 21 * 86_400_000 + index * 60_000).toISOString();
      const key = randomUUID();
      const answer = await write(run, () =>
        send(url, 'reschedule', 'POST', `/api/v1/posts/schedules/${target}/reschedule`, client.apiKey, { scheduledAt }, { 'idempotency-key': key }),
      );
      if (answer?.succeeded) client.targets.set(target, scheduledAt);
    } else {
      try {
        if (kind === 'listPosts') run.answers.push(await send(url, kind, 'GET', POSTS_PATH, client.apiKey));
        else if (kind === 'listSchedules') run.answers.push(await send(url, kind, 'GET', SCHEDULES_PATH, client.apiKey));
        else run.answers.push(await send(url, kind, 'POST', '/mcp', client.apiKey, { jsonrpc: '2.0', id: index, method: 'tools/call', params: { name: 'listPosts', arguments: { limit: 5 } } }));
      } catch {
        run.connectionErrors++;
      }
    }
  }
  return run;
}

/**
 * A write until it has a definite answer: after a connection error or 409 IDEMPOTENCY_KEY_IN_PROGRESS it is
 * sent again with the same key (a create that did happen is then replayed, not repeated); every answer is recorded.
 */
async function write(run: ClientRun, attempt: () => Promise<Answer>): Promise<Answer | undefined> {
  for (let i = 0; i < WRITE_ATTEMPTS; i++) {
    let answer: Answer;
    try {
      answer = await attempt();
    } catch {
      await sleep(200);
      continue;
    }
    run.answers.push(answer);
    if ((answer.body as { code?: string })?.code !== 'IDEMPOTENCY_KEY_IN_PROGRESS') return answer;
    await sleep(100);
  }
  run.connectionErrors++;
  return undefined;
}

function createPost(url: string, apiKey: string, integrationId: string, content: string, idempotencyKey: string): Promise<Answer> {
  const body = {
    rows: [{ content, scheduledAt: new Date(Date.now() + 30 * 86_400_000).toISOString() }],
    shared: { selectedIntegrations: [integrationId] },
    postAction: 'SCHEDULED_TIME',
  };
  return send(url, 'createPost', 'POST', POSTS_PATH, apiKey, body, { 'idempotency-key': idempotencyKey });
}

async function send(url: string, kind: Kind, method: 'GET' | 'POST', path: string, apiKey: string, body?: unknown, headers: Record<string, string> = {}): Promise<Answer> {
  const response = await fetch(url + path, {
    method,
    headers: {
      'x-api-key': apiKey,
      ...(body !== undefined && { 'content-type': 'application/json' }),
      ...(path === '/mcp' && { accept: 'application/json, text/event-stream', 'mcp-protocol-version': MCP_PROTOCOL_VERSION }),
      ...headers,
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  const receivedAt = Date.now();
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = text;
  }
  let limited = response.status === 429;
  let succeeded = response.ok;
  if (path === '/mcp' && response.ok) {
    const result = (parsed as { result?: { isError?: boolean; content?: { text: string }[] } }).result;
    const toolError = result?.isError ? (JSON.parse(result.content?.[0]?.text ?? '{}') as { code?: string }) : undefined;
    limited = toolError?.code === 'RATE_LIMITED';
    succeeded = result !== undefined && !result.isError;
    if (toolError) parsed = toolError;
  }
  return { kind, status: response.status, limited, succeeded, body: parsed, receivedAt, rateLimit: rateLimitOf(response.headers) };
}

function rateLimitOf(headers: Headers): Answer['rateLimit'] {
  const current = /^"\w+";r=(\d+);t=(\d+)$/.exec(headers.get('ratelimit') ?? '');
  if (!current || !/^"\w+";q=\d+;w=\d+$/.test(headers.get('ratelimit-policy') ?? '')) return undefined;
  return { remaining: Number(current[1]), reset: Number(current[2]) };
}

/** Checks each client's answers in order against the windows their headers describe, then counts the database. */
async function soakFigures(sql: postgres.Sql, clients: Client[], runs: ClientRun[], seconds: number, rss: SoakFigures['rssMb']): Promise<SoakFigures> {
  const figures: SoakFigures = {
    seconds,
    keys: clients.length,
    limitPerMinute: SOAK_LIMIT,
    requests: 0,
    byKind: Object.fromEntries(KINDS.map((kind) => [kind, { sent: 0, admitted: 0, limited: 0 }])) as SoakFigures['byKind'],
    status5xx: 0,
    connectionErrors: 0,
    unexpectedAnswers: 0,
    unexpectedSamples: [],
    early429s: 0,
    overLimit: 0,
    countMismatches: 0,
    missingHeaders: 0,
    writes: { createsSucceeded: 0, postsInDatabase: 0, duplicatePostIds: 0, reschedulesChecked: 0, reschedulesMismatched: 0 },
    rssMb: rss,
    problems: [],
  };
  for (const [index, run] of runs.entries()) {
    const client = clients[index]!;
    figures.connectionErrors += run.connectionErrors;
    let windowEnd: number | undefined;
    let lastRemaining: number | undefined;
    for (const answer of run.answers) {
      figures.requests++;
      const tally = figures.byKind[answer.kind];
      tally.sent++;
      if (answer.status >= 500) figures.status5xx++;
      if (answer.limited) tally.limited++;
      else if (answer.succeeded) tally.admitted++;
      else if (++figures.unexpectedAnswers <= 5) figures.unexpectedSamples.push(`${answer.kind}: ${answer.status} ${JSON.stringify(answer.body).slice(0, 200)}`);
      if (!answer.rateLimit) {
        figures.missingHeaders++;
        continue;
      }
      const { remaining, reset } = answer.rateLimit;
      // `t` is whole seconds, rounded up: the same window's end, seen from two answers, differs by about a second.
      const end = answer.receivedAt + reset * 1000;
      if (windowEnd === undefined || end > windowEnd + 5000) {
        windowEnd = end;
        lastRemaining = undefined;
      }
      if (answer.limited) {
        if (remaining > 0 || (lastRemaining !== undefined && lastRemaining > 0)) figures.early429s++;
      } else {
        if (lastRemaining === 0) figures.overLimit++;
        else if (lastRemaining !== undefined && remaining !== lastRemaining - 1) figures.countMismatches++;
      }
      lastRemaining = remaining;
    }

    const created = new Set(run.createdPostIds);
    figures.writes.createsSucceeded += run.createdPostIds.length;
    figures.writes.duplicatePostIds += run.createdPostIds.length - created.size;
    const [row] = await sql<{ posts: number }[]>`SELECT count(*)::int AS posts FROM posts WHERE organization_id = ${client.workspaceId}`;
    figures.writes.postsInDatabase += row!.posts - client.setupPosts;
    const found = await sql<{ id: string }[]>`SELECT id FROM posts WHERE id = ANY(${[...created]}::uuid[])`;
    if (found.length !== created.size) figures.problems.push(`${created.size - found.length} created posts are not in the database`);
    for (const [scheduleId, expected] of client.targets) {
      if (expected === undefined) continue;
      figures.writes.reschedulesChecked++;
      const [schedule] = await sql<{ scheduledAt: Date }[]>`SELECT scheduled_at AS "scheduledAt" FROM schedules WHERE id = ${scheduleId}`;
      if (schedule?.scheduledAt.toISOString() !== expected) figures.writes.reschedulesMismatched++;
    }
  }
  const { writes } = figures;
  if (figures.status5xx) figures.problems.push(`${figures.status5xx} answers were 5xx`);
  if (figures.connectionErrors) figures.problems.push(`${figures.connectionErrors} requests never got an answer`);
  if (figures.unexpectedAnswers) figures.problems.push(`${figures.unexpectedAnswers} answers were neither a success nor RATE_LIMITED`);
  if (figures.early429s) figures.problems.push(`${figures.early429s} RATE_LIMITED answers came before the limit was spent`);
  if (figures.overLimit) figures.problems.push(`${figures.overLimit} requests were admitted after the limit was spent`);
  if (figures.countMismatches) figures.problems.push(`${figures.countMismatches} answers counted the window wrongly`);
  if (figures.missingHeaders) figures.problems.push(`${figures.missingHeaders} answers lacked the RateLimit headers`);
  if (writes.postsInDatabase !== writes.createsSucceeded) {
    figures.problems.push(`${writes.createsSucceeded} creates succeeded but ${writes.postsInDatabase} posts are in the database`);
  }
  if (writes.duplicatePostIds) figures.problems.push(`${writes.duplicatePostIds} post ids were answered twice`);
  if (writes.reschedulesMismatched) figures.problems.push(`${writes.reschedulesMismatched} schedules do not hold their last successful reschedule`);
  const limited = KINDS.reduce((sum, kind) => sum + figures.byKind[kind].limited, 0);
  if (limited === 0) figures.problems.push('no request was refused: the soak did not reach the limit');
  return figures;
}

/** PARALLEL_CREATES creates at once with one key and one body: one post, and every 201 the same answer. */
async function idempotencyBurst(service: RunningService, sql: postgres.Sql): Promise<BurstFigures> {
  const client = await makeClient(service, sql, BURST_PLAN);
  const key = randomUUID();
  const content = `Created once: ${key}`;
  const body = { rows: [{ content, scheduledAt: new Date(Date.now() + 30 * 86_400_000).toISOString() }], shared: { selectedIntegrations: [client.integrationId] }, postAction: 'SCHEDULED_TIME' };
  const answers = await Promise.all(
    Array.from({ length: PARALLEL_CREATES }, () => send(service.url, 'createPost', 'POST', POSTS_PATH, client.apiKey, body, { 'idempotency-key': key })),
  );
  const statuses: Record<string, number> = {};
  for (const answer of answers) {
    const label = answer.status === 201 ? '201' : `${answer.status} ${(answer.body as { code?: string }).code ?? ''}`.trim();
    statuses[label] = (statuses[label] ?? 0) + 1;
  }
  const created = answers.filter((answer) => answer.status === 201).map((answer) => JSON.stringify(answer.body));
  const [row] = await sql<{ posts: number }[]>`SELECT count(*)::int AS posts FROM posts WHERE content = ${content}`;
  const figures: BurstFigures = { requests: answers.length, statuses, postsCreated: row!.posts, sameAnswers: new Set(created).size <= 1, problems: [] };
  if (figures.postsCreated !== 1) figures.problems.push(`${figures.postsCreated} posts instead of 1`);
  if (!figures.sameAnswers) figures.problems.push('the 201 answers differ');
  const others = answers.filter((answer) => answer.status !== 201 && (answer.body as { code?: string }).code !== 'IDEMPOTENCY_KEY_IN_PROGRESS');
  if (others.length) figures.problems.push(`${others.length} answers were neither 201 nor 409 IDEMPOTENCY_KEY_IN_PROGRESS`);
  return figures;
}
