import { randomBytes, randomUUID } from 'node:crypto';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../src/process/free-port.js';
import type { Principal } from '../src/auth/principal.js';
import type { RateLimiter } from '../src/registry/rate-limit.js';
import { admin, run, stop, waitFor, type Running } from './support/processes.js';
import { call, eventually, freshDatabase, startTestService, type Answer, type TestService } from './support/service.js';

/**
 * Rate limits per plan, in the one pipeline: the headers on every keyed answer, 429 RATE_LIMITED over REST
 * and a tool error over MCP, the programmatic and browser buckets apart, the admin command not limited, and
 * one limit shared exactly by three `npm run api` processes on one database. Plans with small limits are made with the
 * admin command, as an operator would. A window opens at a workspace's first request, so each test has a
 * fresh workspace and its whole minute ahead of it.
 */

let service: TestService;
let sql: postgres.Sql;
let env: Record<string, string>;

beforeAll(async () => {
  service = await startTestService();
  sql = postgres(service.databaseUrl, { max: 2, onnotice: () => {} });
  env = { DATABASE_URL: service.databaseUrl, ENCRYPTION_KEY: randomBytes(32).toString('base64') };
  for (const [plan, limit] of [['tiny', 3], ['small', 5], ['thousand', 1000]] as const) {
    expect((await admin(['define-plan', '--plan', plan, '--rate-limit', String(limit), '--storage-bytes', '1000'], env)).code).toBe(0);
  }
}, 120_000);
afterAll(async () => {
  await sql?.end();
  await service?.stop();
});

const usersMe = (key: string) => call(`${service.api}/users/me`, { key });
const mcpCall = (key: string, name = 'getCurrentUser') =>
  call(`${service.base}/mcp`, { method: 'POST', key, body: { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name, arguments: {} } } });

/** The draft-09 structured fields: `"bucket";q=N;w=60` and `"bucket";r=N;t=N`. */
function rateLimitOf(answer: Answer) {
  const policy = /^"(\w+)";q=(\d+);w=(\d+)$/.exec(answer.headers.get('ratelimit-policy') ?? '');
  const current = /^"(\w+)";r=(\d+);t=(\d+)$/.exec(answer.headers.get('ratelimit') ?? '');
  if (!policy || !current) return undefined;
  return { policy: policy[1], quota: Number(policy[2]), window: Number(policy[3]), name: current[1], remaining: Number(current[2]), reset: Number(current[3]) };
}

/**
 * The flushes of the test service's rate limiter (in this process; every FLUSH_MS, 100 ms), to wait for one rather than for a
 * time: `next()` resolves when the next one starts. The limiter is the pipeline's own (private to it: read here only).
 */
function watchFlushes() {
  const limiter = (service.service.core.pipeline as unknown as { limiter: RateLimiter }).limiter;
  const flush = limiter.flush;
  let waiting: (() => void)[] = [];
  // The limiter's timer calls `this.flush()`, so a property of the instance is what it calls from now on.
  limiter.flush = function (closing?: boolean) {
    const started = waiting;
    waiting = [];
    for (const resolve of started) resolve();
    return flush.call(this, closing);
  };
  return {
    next: () => new Promise<void>((resolve) => waiting.push(resolve)),
    restore: () => {
      delete (limiter as Partial<RateLimiter>).flush;
    },
  };
}

describe('rate limits', () => {
  it('over REST: every keyed answer under /api/v1 carries the RateLimit headers; past the limit, 429 RATE_LIMITED with Retry-After', async () => {
    const ws = await service.workspace({ plan: 'small' });
    const answers = [
      await usersMe(ws.apiKey),
      await call(`${service.api}/no-such-thing`, { key: ws.apiKey }),
      await call(`${service.api}/posts`, { method: 'POST', key: ws.apiKey, raw: '{not json' }),
      await usersMe(ws.apiKey),
      await usersMe(ws.apiKey),
    ];
    expect(answers.map((answer) => answer.status)).toEqual([200, 404, 400, 200, 200]);
    for (const [index, answer] of answers.entries()) {
      const limit = rateLimitOf(answer)!;
      expect(limit).toMatchObject({ policy: 'programmatic', quota: 5, window: 60, name: 'programmatic', remaining: 4 - index });
      expect(limit.reset).toBeGreaterThan(0);
      expect(limit.reset).toBeLessThanOrEqual(60);
    }

    const refused = await usersMe(ws.apiKey);
    expect(refused.status).toBe(429);
    expect(refused.json.code).toBe('RATE_LIMITED');
    expect(refused.json.message).toMatch(/plan "small" allows 5 API, MCP and command-line requests a minute/);
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(Number(refused.headers.get('retry-after'))).toBeLessThanOrEqual(60);
    expect(rateLimitOf(refused)).toMatchObject({ quota: 5, remaining: 0 });
    // A refused request does nothing, writes included.
    const create = await call(`${service.api}/posts`, { method: 'POST', key: ws.apiKey, body: { rows: [{ content: 'Over the limit' }], postAction: 'DRAFT' } });
    expect(create.status).toBe(429);
    expect((await sql`SELECT 1 FROM posts WHERE content = 'Over the limit'`).length).toBe(0);

    // No key, no headers: nothing is revealed about any workspace.
    const anonymous = await call(`${service.api}/users/me`);
    expect(anonymous.status).toBe(401);
    expect(anonymous.headers.get('ratelimit')).toBeNull();
  });

  it('counts down one by one across the leases\' flushes: a lone client sees `r` fall by exactly one each answer', async () => {
    const ws = await service.workspace({ plan: 'thousand' });
    const flushes = watchFlushes();
    const remaining: number[] = [];
    try {
      // Bounded by a count of requests, never by a time (an idle machine answers over a thousand in 1.5 s, and would
      // spend the window): five rounds of requests back to back, each going on until the limiter's next flush starts,
      // at most 100 a round, and when a round's hundred are answered first it waits for that flush. So every flush
      // counted comes after requests of its round (it has their demand to lease for and its unused tokens to give
      // back), and the next requests cross its statement: at most 520 of the 1,000, however fast or slow the machine.
      for (let round = 0; round < 5; round++) {
        let started = false;
        const flush = flushes.next().then(() => (started = true));
        for (let sent = 0; sent < 100 && !started; sent++) remaining.push(rateLimitOf(await usersMe(ws.apiKey))!.remaining);
        await flush;
      }
      for (let sent = 0; sent < 20; sent++) remaining.push(rateLimitOf(await usersMe(ws.apiKey))!.remaining);
    } finally {
      flushes.restore();
    }
    expect(remaining.length).toBeLessThanOrEqual(520);
    expect(remaining).toEqual(Array.from({ length: remaining.length }, (_, index) => 999 - index));
  });

  it('refuses a call it cannot count: with the window row locked past the lease\'s 2 s lock timeout, 500 INTERNAL, nothing done', async () => {
    const ws = await service.workspace({ plan: 'thousand' });
    await sql.begin(async (tx) => {
      await tx`INSERT INTO rate_limit_windows (organization_id, bucket, started_at, count) VALUES (${ws.workspaceId}, 'programmatic', now(), 0)`;
      await tx`SELECT 1 FROM rate_limit_windows WHERE organization_id = ${ws.workspaceId} FOR UPDATE`;
      const refused = await call(`${service.api}/posts`, { method: 'POST', key: ws.apiKey, body: { rows: [{ content: 'Uncounted' }], postAction: 'DRAFT' } });
      expect(refused.status).toBe(500);
      expect(refused.json.code).toBe('INTERNAL');
    });
    expect((await sql`SELECT 1 FROM posts WHERE organization_id = ${ws.workspaceId}`).length).toBe(0);
    expect((await usersMe(ws.apiKey)).status).toBe(200);
  });

  it('gives back, when it stops, every token it holds: the window row then counts exactly the calls admitted', async () => {
    const stopping = await startTestService({ databaseUrl: service.databaseUrl });
    const ws = await stopping.workspace({ plan: 'thousand' });
    for (let i = 0; i < 30; i++) expect((await call(`${stopping.api}/users/me`, { key: ws.apiKey })).status).toBe(200);
    await stopping.stop();
    expect((await sql`SELECT count FROM rate_limit_windows WHERE organization_id = ${ws.workspaceId}`)[0]!.count).toBe(30);
  });

  it('over MCP: tool calls count in the same bucket as REST; past the limit a tool error RATE_LIMITED, and the HTTP answer carries the headers', async () => {
    const ws = await service.workspace({ plan: 'tiny' });
    expect((await usersMe(ws.apiKey)).status).toBe(200);
    const answers = [await mcpCall(ws.apiKey), await mcpCall(ws.apiKey)];
    for (const [index, answer] of answers.entries()) {
      expect(answer.json.result.isError).toBeUndefined();
      expect(rateLimitOf(answer)).toMatchObject({ policy: 'programmatic', quota: 3, remaining: 1 - index });
    }
    const refused = await mcpCall(ws.apiKey);
    expect(refused.status).toBe(200);
    expect(refused.json.result.isError).toBe(true);
    const body = JSON.parse(refused.json.result.content[0].text);
    expect(body.code).toBe('RATE_LIMITED');
    expect(body.message).toMatch(/plan "tiny" allows 3 API, MCP and command-line requests a minute, and they are spent; try again in \d+ s/);
    expect(rateLimitOf(refused)).toMatchObject({ quota: 3, remaining: 0 });
    // And REST is refused too: one bucket for both.
    expect((await usersMe(ws.apiKey)).json.code).toBe('RATE_LIMITED');
  });

  it('counts browser sessions in a bucket of their own: spending one leaves the other whole', async () => {
    const pipeline = service.service.core.pipeline;
    const getCurrentUser = service.service.core.operations.find((operation) => operation.id === 'getCurrentUser');
    const ws = await service.workspace({ plan: 'tiny' });
    const session: Principal = { kind: 'session', sessionId: randomUUID(), userId: ws.userId, workspaceId: ws.workspaceId };
    const asSession = () => pipeline.run({ operation: getCurrentUser, principal: session, surface: 'api', input: { kind: 'arguments', value: {} } });

    for (let i = 0; i < 3; i++) expect((await usersMe(ws.apiKey)).status).toBe(200);
    expect((await usersMe(ws.apiKey)).status).toBe(429);
    const inBrowser = [await asSession(), await asSession(), await asSession()];
    expect(inBrowser.map((outcome) => [outcome.status, outcome.rateLimit?.bucket, outcome.rateLimit?.remaining])).toEqual([
      [200, 'browser', 2],
      [200, 'browser', 1],
      [200, 'browser', 0],
    ]);
    const refused = await asSession();
    expect(refused.status).toBe(429);
    expect(refused.body).toMatchObject({ code: 'RATE_LIMITED', message: expect.stringMatching(/3 browser requests a minute/) });

    // The other way round, in a fresh workspace: the browser bucket spent, keys still answered.
    const other = await service.workspace({ plan: 'tiny' });
    const otherSession: Principal = { kind: 'session', sessionId: randomUUID(), userId: other.userId, workspaceId: other.workspaceId };
    for (let i = 0; i < 4; i++) await pipeline.run({ operation: getCurrentUser, principal: otherSession, surface: 'api', input: { kind: 'arguments', value: {} } });
    const keyed = await usersMe(other.apiKey);
    expect(keyed.status).toBe(200);
    expect(rateLimitOf(keyed)).toMatchObject({ policy: 'programmatic', remaining: 2 });
  });

  it('does not limit the admin command', async () => {
    const ws = await service.workspace({ plan: 'tiny' });
    for (let i = 0; i < 3; i++) await usersMe(ws.apiKey);
    expect((await usersMe(ws.apiKey)).status).toBe(429);
    for (let i = 0; i < 5; i++) {
      const outcome = await service.service.core.runAs(ws, 'getCurrentUser', {});
      expect(outcome.status).toBe(200);
      expect(outcome.rateLimit).toBeUndefined();
    }
    const command = await admin(['create-tag', '--workspace', ws.workspaceId, '--name', 'Made by the operator'], env);
    expect(command.code).toBe(0);
    expect(command.json.name).toBe('Made by the operator');
  });

  it('applies a plan change to a window already open', async () => {
    const ws = await service.workspace({ plan: 'tiny' });
    for (let i = 0; i < 3; i++) await usersMe(ws.apiKey);
    expect((await usersMe(ws.apiKey)).status).toBe(429);
    expect((await admin(['set-plan', '--workspace', ws.workspaceId, '--plan', 'small'], env)).code).toBe(0);
    // Refused requests are not counted, so asking until the new limit shows costs nothing.
    const admitted = await eventually(() => usersMe(ws.apiKey), (answer) => answer.status === 200);
    expect(rateLimitOf(admitted)).toMatchObject({ quota: 5, remaining: 1 });
  });
});

describe('three API processes on one database', () => {
  const started: Running[] = [];
  let processEnv: Record<string, string>;
  let databaseUrl: string;
  let ports: number[];
  let db: postgres.Sql;

  beforeAll(async () => {
    databaseUrl = await freshDatabase();
    processEnv = { DATABASE_URL: databaseUrl, ENCRYPTION_KEY: randomBytes(32).toString('base64'), HOST: '127.0.0.1' };
    ports = [await freePort(), await freePort(), await freePort()];
    // One at a time: the first applies the migrations, the others find them applied.
    for (const port of ports) {
      const api = run(['run', 'api'], { ...processEnv, PORT: String(port) });
      started.push(api);
      await waitFor(api, /API and MCP running/, 90_000);
    }
    db = postgres(databaseUrl, { max: 1, onnotice: () => {} });
  }, 300_000);
  afterAll(async () => {
    await db?.end();
    for (const running of started) await stop(running);
  });

  /**
   * Hammers the three processes at once, eight requests in flight at each, until the limit's worth has been
   * admitted and then each process has refused eight more (a count, not a time: a slow machine's process may answer
   * nothing in a given second, a fast one thousands): the admitted total is the limit exactly, and every process
   * refuses the rest. Sixty seconds is only the safety bound (`within`).
   */
  async function hammer(limit: number) {
    const plan = `shared-${limit}`;
    expect((await admin(['define-plan', '--plan', plan, '--rate-limit', String(limit), '--storage-bytes', '1000'], processEnv)).code).toBe(0);
    const { json: ws } = await admin(['bootstrap', '--json', '--plan', plan], processEnv);
    const admitted = [0, 0, 0];
    const refused = [0, 0, 0];
    const statuses = new Set<number>();
    let reached = false;
    const refusedAfter = [0, 0, 0];
    const startedAt = Date.now();
    const done = () => (reached && refusedAfter.every((count) => count >= 8)) || Date.now() - startedAt > 60_000;
    const client = async (index: number) => {
      while (!done()) {
        const answer = await fetch(`http://127.0.0.1:${ports[index]}/api/v1/users/me`, { headers: { 'x-api-key': ws.apiKey } });
        await answer.arrayBuffer();
        statuses.add(answer.status);
        if (answer.status === 200) admitted[index]!++;
        else refused[index]!++;
        if (answer.status !== 200 && reached) refusedAfter[index]!++;
        if (admitted.reduce((a, b) => a + b) >= limit) reached = true;
      }
    };
    await Promise.all(ports.flatMap((_, index) => Array.from({ length: 8 }, () => client(index))));
    const counted = async () => (await db`SELECT count FROM rate_limit_windows WHERE organization_id = ${ws.workspaceId}`)[0]?.count as number;
    // Ended because every process refused past the limit (the counts are the machine's speed's business only until then).
    return { admitted, refused, statuses, counted, within: reached && refusedAfter.every((count) => count >= 8) };
  }

  for (const limit of [20, 1200]) {
    it(`share a limit of ${limit} exactly: hammered at once, they admit the limit and not one request more`, async () => {
      const { admitted, refused, statuses, counted, within } = await hammer(limit);
      expect(within).toBe(true);
      expect(admitted.reduce((a, b) => a + b)).toBe(limit);
      expect([...statuses].sort()).toEqual([200, 429]);
      // Each process was asked past the limit, and refused.
      for (const index of [0, 1, 2]) expect(refused[index]).toBeGreaterThan(0);
      // Every token of the window was granted, and none is held any more than it was used.
      expect(await counted()).toBe(limit);
    }, 120_000);
  }

  it('give back what they lease and do not use: another process admits it', async () => {
    expect((await admin(['define-plan', '--plan', 'handed-on', '--rate-limit', '10', '--storage-bytes', '1000'], processEnv)).code).toBe(0);
    const { json: ws } = await admin(['bootstrap', '--json', '--plan', 'handed-on'], processEnv);
    const at = (port: number) => call(`http://127.0.0.1:${port}/api/v1/users/me`, { key: ws.apiKey });
    const counted = async () => (await db`SELECT count FROM rate_limit_windows WHERE organization_id = ${ws.workspaceId}`)[0]?.count as number;

    // The first process admits six; it leases ahead of its demand, and gives back what it did not use at its next flush
    // after it is no longer asked: within three flushes (the first after the burst may still lease a token ahead).
    // Waited for by its effect, not for a time (a busy machine's child process may not flush in any given time): the row
    // is written again after the burst (a flush with the burst's demand tops the lease up, or gives back beyond it:
    // the count is then more than six) and then counts exactly the six admitted (the flush after, with no demand, gave
    // all back). A row written again with a count of six can only be the second. Its version is read before the sixth
    // request, not after: on a busy machine both flushes may be over by the time the sixth answer is read, and a
    // version read then would never change again. The sixth request's own lease, if it takes one, is at least two
    // tokens while five are left (twice its demand, a quarter of the five rounded up), so the count is then seven.
    const row = async () => (await db<{ version: string; count: number }[]>`
      SELECT xmin::text AS version, count FROM rate_limit_windows WHERE organization_id = ${ws.workspaceId}`)[0]!;
    for (let i = 0; i < 5; i++) expect((await at(ports[0]!)).status).toBe(200);
    const beforeLast = await row();
    expect((await at(ports[0]!)).status).toBe(200);
    const givenBack = await eventually(row, ({ version, count }) => version !== beforeLast.version && count === 6, 20_000);
    expect(givenBack.version).not.toBe(beforeLast.version);
    expect(givenBack.count).toBe(6);
    // The second finds the four that are left, says so in its headers, and refuses the fifth.
    const fromSecond = [];
    for (let i = 0; i < 5; i++) fromSecond.push(await at(ports[1]!));
    expect(fromSecond.map((answer) => answer.status)).toEqual([200, 200, 200, 200, 429]);
    expect(fromSecond.map((answer) => rateLimitOf(answer)?.remaining)).toEqual([3, 2, 1, 0, 0]);
    // And the first, asked again, refuses at once: nothing is left anywhere.
    expect((await at(ports[0]!)).status).toBe(429);
    expect((await at(ports[2]!)).status).toBe(429);
    expect(await counted()).toBe(10);
  }, 60_000);
});
