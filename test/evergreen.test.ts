import { createHash, randomUUID } from 'node:crypto';
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectThroughForm, createAccount, postsOf, type TestAccount } from './support/bluesky.js';
import { signedIn, type HttpSession } from './support/http-session.js';
import { photo } from './support/images.js';
import { connectLinkedIn, startServiceWithLinkedIn } from './support/linkedin-browser.js';
import { startFakeLinkedIn, type FakeLinkedIn } from './support/linkedin.js';
import { admin } from './support/processes.js';
import { call, eventually, startTestService, type TestService, type Workspace } from './support/service.js';

/**
 * Evergreen recycling through REST (a dashboard session), MCP (an agent's key) and the worker publishing to a real PDS
 * and to LinkedIn's contract fake: a rule picks evergreen posts that went out long enough ago, schedules them again as
 * ordinary schedules carrying their origin, and writes a recycle event per post (what it made, or why not); a run
 * happens once a period whatever runs it, two workers included.
 */

let fake: FakeLinkedIn;
let service: TestService;
let sql: postgres.Sql;
let account: TestAccount;

beforeAll(async () => {
  fake = await startFakeLinkedIn();
  service = await startServiceWithLinkedIn(fake);
  sql = postgres(service.databaseUrl, { max: 4, onnotice: () => {}, transform: postgres.camel });
  account = await createAccount();
});
afterAll(async () => {
  await sql?.end();
  await service?.stop();
  await fake?.stop();
});

interface Team {
  ws: Workspace;
  bluesky: string;
  linkedin: string;
  owner: HttpSession;
}

async function team(): Promise<Team> {
  const ws = await service.workspace({ plan: 'business' });
  return {
    ws,
    bluesky: await connectThroughForm(service.api, ws.apiKey, account),
    linkedin: await connectLinkedIn(service, ws.apiKey, fake, fake.addMember('Ada Lovelace')),
    owner: await signedIn(service, ws.workspaceId, ws.userId),
  };
}

const rest = (key: string, path: string, options: { method?: string; body?: unknown } = {}) => call(`${service.api}${path}`, { key, ...options });
/** Every hour of every day: a recycled schedule's slot is within the hour. */
const EVERY_HOUR = [{ weekdays: [1, 2, 3, 4, 5, 6, 7], times: Array.from({ length: 24 }, (_, hour) => `${String(hour).padStart(2, '0')}:00`) }];

/** A post published now on `channels`, then made to look published `daysAgo` days ago. */
async function published(ws: Workspace, channels: string[], content: string, { isEvergreen = true, daysAgo = 40 } = {}): Promise<string> {
  const created = await rest(ws.apiKey, '/posts', {
    method: 'POST',
    body: { rows: [{ content, isEvergreen }], shared: { selectedIntegrations: channels }, postAction: 'PUBLISH_NOW' },
  });
  expect(created.status, created.text).toBe(201);
  const postId = created.json.postId as string;
  await eventually(
    () => sql<{ status: string }[]>`SELECT status FROM schedules WHERE post_id = ${postId}`,
    (rows) => rows.length > 0 && rows.every((row) => row.status === 'PUBLISHED'),
    30_000,
  );
  await sql`UPDATE schedules SET published_at = published_at - ${daysAgo} * interval '1 day' WHERE post_id = ${postId}`;
  return postId;
}

const eventsOf = async (session: HttpSession, query: string) => {
  const answer = await session.request(`/api/v1/recycle-events?${query}`);
  expect(answer.status, answer.text).toBe(200);
  return answer.json.items as any[];
};
const runsOf = (ruleId: string) => sql<{ period: string }[]>`SELECT period FROM recycle_runs WHERE rule_id = ${ruleId}`;
/** A run of `ruleId` for `period`, as the crontab's job would make it, and its end. */
async function runFor(ruleId: string, period: string) {
  await sql`SELECT graphile_worker.add_job('recycle-rule', json_build_object('ruleId', ${ruleId}::uuid, 'period', ${period}::text))`;
  await eventually(() => runsOf(ruleId), (runs) => runs.some((run) => run.period === period), 20_000);
  await noRecycleJobs();
}
const noRecycleJobs = () =>
  eventually(() => sql`SELECT 1 FROM graphile_worker.jobs WHERE task_identifier = 'recycle-rule'`, (rows) => rows.length === 0, 20_000);

async function createRule(owner: HttpSession, body: Record<string, unknown>) {
  const answer = await owner.request('/api/v1/recycle-rules', { method: 'POST', body: { name: 'Best of', postingWindows: EVERY_HOUR, ...body } });
  expect(answer.status, answer.text).toBe(201);
  return answer.json as { id: string } & Record<string, any>;
}

describe('a recycle rule', () => {
  it('schedules a published evergreen post again on its channels (LinkedIn with a variation); the agent sees it over MCP, reschedules it, and it publishes', async () => {
    const { ws, bluesky, linkedin, owner } = await team();
    const text = `Our guide to spring planting, still true. ${randomUUID().slice(0, 8)}`;
    const postId = await published(ws, [bluesky, linkedin], text, { isEvergreen: false });

    const mcp = new Client({ name: 'agent', version: '1.0.0' });
    await mcp.connect(new StreamableHTTPClientTransport(new URL(`${service.base}/mcp`), { requestInit: { headers: { 'x-api-key': ws.apiKey } } }));
    try {
      // The agent marks it evergreen.
      const marked = await mcp.callTool({ name: 'updatePost', arguments: { id: postId, isEvergreen: true } });
      expect(marked.isError, JSON.stringify(marked)).toBeFalsy();
      const before = Date.now();

      const rule = await createRule(owner, { integrationIds: [bluesky, linkedin], linkedinVariations: ['Still true today.', 'From our archive.'] });
      expect(rule).toMatchObject({ name: 'Best of', frequency: 'DAILY', postsPerRun: 1, minIntervalDays: 30, maxRuns: null, enabled: true, tagIds: [] });
      // The first run is at once.
      const [event] = await eventually(() => eventsOf(owner, `ruleId=${rule.id}`), (items) => items.length === 1, 20_000);
      expect(event).toMatchObject({ ruleId: rule.id, postId, status: 'RECYCLED', skipped: [], linkedinVariation: 'Still true today.' });
      expect(event.scheduleIds).toHaveLength(2);
      const ran = (await owner.request(`/api/v1/recycle-rules/${rule.id}`)).json;
      expect(ran.lastRunPeriod).toBe(event.period);
      expect(event.period).toMatch(/^\d{4}-\d{2}-\d{2}$/);

      // Recycle rules are internal: no tool, and the generic 404 over REST.
      expect((await mcp.listTools()).tools.map((tool) => tool.name).filter((name) => /recycle/i.test(name))).toEqual([]);
      expect((await rest(ws.apiKey, '/recycle-rules')).status).toBe(404);

      const post = (await mcp.callTool({ name: 'getPost', arguments: { id: postId } })).structuredContent as Record<string, any>;
      expect(Date.parse(post.lastRecycledAt)).toBeGreaterThanOrEqual(before - 1000);
      const recycled = post.schedules.filter((schedule: any) => schedule.originRecycleEventId === event.id);
      expect(recycled.map((schedule: any) => schedule.id).sort()).toEqual([...event.scheduleIds].sort());
      for (const schedule of recycled) {
        expect(schedule.status).toBe('SCHEDULED');
        // At the next free slot of the rule's windows: on the hour, within the hour.
        expect(new Date(schedule.scheduledAt).getUTCMinutes()).toBe(0);
        expect(Date.parse(schedule.scheduledAt) - Date.now()).toBeLessThanOrEqual(3_600_000);
      }
      const onLinkedIn = recycled.find((schedule: any) => schedule.integrationId === linkedin);
      const [stored] = await sql<{ scheduledContent: string }[]>`SELECT scheduled_content FROM schedules WHERE id = ${onLinkedIn.id}`;
      expect(stored!.scheduledContent).toBe(`${text}\n\nStill true today.`);

      // On the calendar like any schedule, with their origin.
      const calendar = await mcp.callTool({
        name: 'listSchedules',
        arguments: { startDate: new Date(Date.now() - 60_000).toISOString(), endDate: new Date(Date.now() + 7_200_000).toISOString(), limit: 100 },
      });
      const listed = (calendar.structuredContent as { schedules: { id: string; originRecycleEventId: string | null }[] }).schedules;
      expect(listed.filter((schedule) => schedule.originRecycleEventId === event.id).map((schedule) => schedule.id).sort()).toEqual([...event.scheduleIds].sort());

      // Ordinary schedules: the agent reschedules them like any other, and they publish.
      for (const schedule of recycled) {
        const moved = await mcp.callTool({ name: 'rescheduleSchedule', arguments: { scheduleId: schedule.id, scheduledAt: new Date(Date.now() + 1500).toISOString() } });
        expect(moved.isError, JSON.stringify(moved)).toBeFalsy();
      }
      await eventually(
        () => sql<{ status: string }[]>`SELECT status FROM schedules WHERE id = ANY(${event.scheduleIds}::uuid[])`,
        (rows) => rows.every((row) => row.status === 'PUBLISHED'),
        30_000,
      );
      expect((await postsOf(account)).filter((record) => (record.value as { text: string }).text === text)).toHaveLength(2);
      const onFake = [...fake.posts.values()].filter((item) => item.text.startsWith(text)).map((item) => item.text);
      expect(onFake.sort()).toEqual([text, `${text}\n\nStill true today.`]);

      // The feed says so: the post recycled, its new schedules scheduled.
      const feed = await eventually(() => rest(ws.apiKey, `/events?resourceId=${postId}&type=post.recycled`), (answer) => answer.json.items.length > 0, 10_000);
      expect(feed.json.items.map((item: any) => item.data.lastRecycledAt)).toEqual([post.lastRecycledAt]);
    } finally {
      await mcp.close();
    }
  });

  it('picks only evergreen posts published long enough ago, once a period, up to maxRuns, and says why it skips one', async () => {
    const { ws, bluesky, linkedin, owner } = await team();
    const tag = `x${randomUUID().slice(0, 6)}`;
    const old = await published(ws, [bluesky, linkedin], `An old favourite ${tag}`);
    await published(ws, [bluesky], `Too recent ${tag}`, { daysAgo: 5 });
    await published(ws, [bluesky], `Not evergreen ${tag}`, { isEvergreen: false });
    const draft = await rest(ws.apiKey, '/posts', {
      method: 'POST',
      body: { rows: [{ content: `A draft ${tag}`, isEvergreen: true }], shared: { selectedIntegrations: [bluesky] }, postAction: 'DRAFT' },
    });
    expect(draft.status).toBe(201);

    // Without variations, LinkedIn is skipped with the reason; Bluesky takes the post.
    const rule = await createRule(owner, { integrationIds: [linkedin, bluesky], postsPerRun: 10, maxRuns: 1, enabled: false });
    // Disabled: nothing queued.
    expect(await sql`SELECT 1 FROM graphile_worker.jobs WHERE key = ${`recycle-rule:${rule.id}`}`).toEqual([]);
    const enabled = await owner.request(`/api/v1/recycle-rules/${rule.id}`, { method: 'PATCH', body: { enabled: true } });
    expect(enabled.status, enabled.text).toBe(200);
    const [first] = await eventually(() => eventsOf(owner, `ruleId=${rule.id}`), (items) => items.length === 1, 20_000);
    expect(first).toMatchObject({ postId: old, status: 'RECYCLED', linkedinVariation: null });
    expect(first.skipped).toEqual([
      { integrationId: linkedin, code: 'DUPLICATE_CONTENT', reason: expect.stringContaining('give the rule linkedinVariations') },
    ]);
    const [made] = await sql<{ integrationId: string; status: string }[]>`SELECT integration_id, status FROM schedules WHERE id = ANY(${first.scheduleIds}::uuid[])`;
    expect(made).toEqual({ integrationId: bluesky, status: 'SCHEDULED' });

    // A later period while the recycle waits to publish, its interval passed and no run limit: still not picked.
    await sql`UPDATE posts SET last_recycled_at = now() - interval '40 days' WHERE id = ${old}`;
    await owner.request(`/api/v1/recycle-rules/${rule.id}`, { method: 'PATCH', body: { maxRuns: null } });
    await runFor(rule.id, '2099-01-01');
    expect(await eventsOf(owner, `ruleId=${rule.id}`)).toHaveLength(1);

    // Published since: the same period again (a second job) does nothing, though the post would now be picked.
    await sql`UPDATE schedules SET status = 'PUBLISHED', published_at = now() - interval '40 days' WHERE id = ANY(${first.scheduleIds}::uuid[])`;
    await runFor(rule.id, '2099-01-01');
    expect(await eventsOf(owner, `ruleId=${rule.id}`)).toHaveLength(1);

    // maxRuns 1 keeps it out of a new period; the limit lifted, with a variation, lets it in (below).
    await owner.request(`/api/v1/recycle-rules/${rule.id}`, { method: 'PATCH', body: { maxRuns: 1 } });
    await runFor(rule.id, '2099-01-02');
    expect(await eventsOf(owner, `ruleId=${rule.id}`)).toHaveLength(1);
    await owner.request(`/api/v1/recycle-rules/${rule.id}`, { method: 'PATCH', body: { maxRuns: null, linkedinVariations: ['Worth a second read.'] } });

    // LinkedIn's quota spent: skipped on both with the plan's words, nothing made, and nothing spent on Bluesky either
    // (its share, spent first, rolled back), lastRecycledAt as it was.
    await sql`
      INSERT INTO post_quota_usage (organization_id, platform, month, used) VALUES (${ws.workspaceId}, 'LINKEDIN', date_trunc('month', now() AT TIME ZONE 'UTC')::date, 3000)
      ON CONFLICT (organization_id, platform, month) DO UPDATE SET used = 3000`;
    const quotaBefore = await sql`SELECT platform, used FROM post_quota_usage WHERE organization_id = ${ws.workspaceId} ORDER BY platform`;
    await runFor(rule.id, '2099-01-03');
    const [refused] = await eventsOf(owner, `ruleId=${rule.id}&status=SKIPPED`);
    expect(refused).toMatchObject({ postId: old, status: 'SKIPPED', scheduleIds: [], period: '2099-01-03' });
    expect(refused.skipped.map((skip: any) => [skip.integrationId, skip.code])).toEqual([
      [linkedin, 'POST_QUOTA_EXCEEDED'],
      [bluesky, 'POST_QUOTA_EXCEEDED'],
    ]);
    expect(refused.skipped[0].reason).toMatch(/^The business plan allows 3000 LINKEDIN posts a month; 3000 used this month/);
    expect(await sql`SELECT platform, used FROM post_quota_usage WHERE organization_id = ${ws.workspaceId} ORDER BY platform`).toEqual(quotaBefore);
    const [{ lastRecycledAt }] = await sql<[{ lastRecycledAt: Date }]>`SELECT last_recycled_at FROM posts WHERE id = ${old}`;
    expect(Date.now() - lastRecycledAt.getTime()).toBeGreaterThan(39 * 86_400_000);

    // Quota back: recycled on both, LinkedIn with the variation, and the run's quota spent per channel.
    await sql`UPDATE post_quota_usage SET used = 0 WHERE organization_id = ${ws.workspaceId}`;
    await runFor(rule.id, '2099-01-04');
    const [again] = await eventsOf(owner, `ruleId=${rule.id}`);
    expect(again).toMatchObject({ postId: old, status: 'RECYCLED', skipped: [], linkedinVariation: 'Worth a second read.' });
    expect(again.scheduleIds).toHaveLength(2);
    expect(await sql`SELECT platform, used FROM post_quota_usage WHERE organization_id = ${ws.workspaceId} ORDER BY platform`).toEqual([
      { platform: 'BLUESKY', used: 1 },
      { platform: 'LINKEDIN', used: 1 },
    ]);
    const publishJobs = () => sql`SELECT 1 FROM graphile_worker.jobs WHERE key = ANY(${again.scheduleIds.map((id: string) => `publish-schedule:${id}`)})`;
    expect(await publishJobs()).toHaveLength(2);

    // Under the workspace's approval rule, a change to the waiting recycle sends the post to review: its jobs go, and
    // no rule picks a post waiting for review.
    expect((await owner.request('/api/v1/workspace/settings', { method: 'PATCH', body: { postsNeedApproval: true } })).status).toBe(200);
    const changed = await rest(ws.apiKey, `/posts/${old}`, { method: 'PATCH', body: { firstComment: 'More in our shop.' } });
    expect(changed.json.approvalStatus, changed.text).toBe('pending_review');
    expect(await publishJobs()).toEqual([]);
    await sql`UPDATE schedules SET status = 'PUBLISHED', published_at = now() - interval '40 days' WHERE id = ANY(${again.scheduleIds}::uuid[])`;
    await sql`UPDATE posts SET last_recycled_at = now() - interval '40 days' WHERE id = ${old}`;
    await runFor(rule.id, '2099-01-05');
    expect(await eventsOf(owner, `ruleId=${rule.id}`)).toHaveLength(3);

    // Approved again and published, a LinkedIn recycle needs a variation LinkedIn does not have yet: the only one was
    // used, so LinkedIn is skipped saying so, and Bluesky takes it.
    expect((await owner.request(`/api/v1/posts/${old}/approve`, { method: 'POST', body: {} })).status).toBe(200);
    await sql`UPDATE schedules SET status = 'PUBLISHED', published_at = now() - interval '40 days' WHERE id = ANY(${again.scheduleIds}::uuid[])`;
    await runFor(rule.id, '2099-01-06');
    const [used] = await eventsOf(owner, `ruleId=${rule.id}`);
    expect(used).toMatchObject({ status: 'RECYCLED', linkedinVariation: null });
    expect(used.skipped).toEqual([{ integrationId: linkedin, code: 'DUPLICATE_CONTENT', reason: expect.stringContaining('add new lines') }]);

    // Only `old` was ever picked: the recent, the not evergreen and the draft never were.
    expect(new Set((await eventsOf(owner, `ruleId=${rule.id}`)).map((event) => event.postId))).toEqual(new Set([old]));
  });

  it('says why it skips a channel: no subscription, a channel that cannot publish, no free slot in its horizon', async () => {
    const { ws, bluesky, linkedin, owner } = await team();
    const postId = await published(ws, [bluesky, linkedin], `Reasons ${randomUUID().slice(0, 8)}`);
    const rule = await createRule(owner, { integrationIds: [bluesky, linkedin], linkedinVariations: ['Again.', 'Once more.'], enabled: false });
    expect((await owner.request(`/api/v1/recycle-rules/${rule.id}`, { method: 'PATCH', body: { enabled: true } })).status).toBe(200);
    await eventually(() => runsOf(rule.id), (runs) => runs.length === 1, 20_000);
    // Recycled on both; published, and a while ago, it may be picked again.
    const [made] = await eventsOf(owner, `ruleId=${rule.id}`);
    expect(made.status).toBe('RECYCLED');
    const goneOut = async () => {
      await sql`UPDATE schedules SET status = 'PUBLISHED', published_at = now() - interval '40 days' WHERE origin_recycle_event_id IS NOT NULL AND post_id = ${postId}`;
      await sql`UPDATE posts SET last_recycled_at = now() - interval '40 days' WHERE id = ${postId}`;
    };
    await goneOut();

    await sql`UPDATE organizations SET subscription_status = 'none' WHERE id = ${ws.workspaceId}`;
    await runFor(rule.id, '2099-02-01');
    const [unpaid] = await eventsOf(owner, `ruleId=${rule.id}`);
    expect(unpaid.skipped.map((skip: any) => skip.code)).toEqual(['PAYMENT_REQUIRED', 'PAYMENT_REQUIRED']);
    await sql`UPDATE organizations SET subscription_status = 'active' WHERE id = ${ws.workspaceId}`;

    // The LinkedIn channel's token revoked: skipped there, recycled on Bluesky.
    await sql`UPDATE integrations SET token_status = 'REVOKED' WHERE id = ${linkedin}`;
    await runFor(rule.id, '2099-02-02');
    const [partial] = await eventsOf(owner, `ruleId=${rule.id}`);
    expect(partial.status).toBe('RECYCLED');
    expect(partial.scheduleIds).toHaveLength(1);
    expect(partial.skipped).toEqual([{ integrationId: linkedin, code: 'INVALID_STATE', reason: expect.stringMatching(/token REVOKED.*reconnect it$/) }]);
    await goneOut();
    await sql`UPDATE integrations SET token_status = 'VALID' WHERE id = ${linkedin}`;

    // Its own windows, one slot a day, all taken for the week ahead on Bluesky.
    const daily = [{ weekdays: [1, 2, 3, 4, 5, 6, 7], times: ['03:00'] }];
    await owner.request(`/api/v1/recycle-rules/${rule.id}`, { method: 'PATCH', body: { postingWindows: daily } });
    expect((await owner.request('/api/v1/workspace/settings', { method: 'PATCH', body: { postingWindows: daily } })).status).toBe(200);
    const filler = await rest(ws.apiKey, '/posts', {
      method: 'POST',
      body: { rows: Array.from({ length: 8 }, (_, n) => ({ content: `Filler ${n}` })), shared: { selectedIntegrations: [bluesky] }, postAction: 'NEXT_WINDOW' },
    });
    expect(filler.status, filler.text).toBe(201);
    await runFor(rule.id, '2099-02-03');
    const [full] = await eventsOf(owner, `ruleId=${rule.id}`);
    expect(full.skipped).toEqual([{ integrationId: bluesky, code: 'NO_FREE_SLOT', reason: expect.stringContaining('in the next 7 days') }]);
    expect(full.scheduleIds).toHaveLength(1);
  });

  it('recycles the posts the quota still allows and says why it skips the others', async () => {
    const { ws, bluesky, owner } = await team();
    const tag = randomUUID().slice(0, 8);
    const first = await published(ws, [bluesky], `First in line ${tag}`);
    const second = await published(ws, [bluesky], `Second in line ${tag}`);
    await sql`UPDATE post_quota_usage SET used = 19999 WHERE organization_id = ${ws.workspaceId} AND platform = 'BLUESKY'`;
    const rule = await createRule(owner, { integrationIds: [bluesky], postsPerRun: 2 });
    const events = await eventually(() => eventsOf(owner, `ruleId=${rule.id}`), (items) => items.length === 2, 20_000);
    const byPost = new Map(events.map((event) => [event.postId, event]));
    expect(byPost.get(first)).toMatchObject({ status: 'RECYCLED', skipped: [] });
    expect(byPost.get(second)).toMatchObject({ status: 'SKIPPED', scheduleIds: [], skipped: [{ integrationId: bluesky, code: 'POST_QUOTA_EXCEEDED' }] });
    expect(await sql`SELECT used FROM post_quota_usage WHERE organization_id = ${ws.workspaceId} AND platform = 'BLUESKY'`).toEqual([{ used: 20000 }]);
  });

  it('skips a post with media, saying why, when the workspace uses more storage than its plan now allows', async () => {
    const { ws, bluesky, owner } = await team();
    const bytes = await photo(64, 48);
    const sha256 = createHash('sha256').update(bytes).digest('hex');
    const started = await rest(ws.apiKey, '/uploads/initiate', {
      method: 'POST',
      body: { scenarioId: 'post_attachments', fileName: 'image', fileType: 'image/jpeg', fileSize: bytes.length, checksum: sha256 },
    });
    expect(started.status, started.text).toBe(200);
    expect((await fetch(started.json.signedUrl, { method: 'PUT', body: new Uint8Array(bytes), headers: started.json.requiredHeaders })).status).toBe(200);
    const done = await eventually(
      () => rest(ws.apiKey, '/uploads/complete', { method: 'POST', body: { uploadId: started.json.uploadId, checksum: sha256 } }),
      (answer) => answer.json.variantsStatus !== 'pending',
      20_000,
    );
    const created = await rest(ws.apiKey, '/posts', {
      method: 'POST',
      body: { rows: [{ content: 'A picture worth posting again', isEvergreen: true, media: [{ id: done.json.mediaId }] }], shared: { selectedIntegrations: [bluesky] }, postAction: 'PUBLISH_NOW' },
    });
    expect(created.status, created.text).toBe(201);
    await eventually(() => sql`SELECT status FROM schedules WHERE post_id = ${created.json.postId}`, (rows) => rows[0]?.status === 'PUBLISHED', 30_000);
    await sql`UPDATE schedules SET published_at = now() - interval '40 days' WHERE post_id = ${created.json.postId}`;
    // Moved to a plan of 1 KB (a downgrade): the image it already holds is over the allowance.
    const plan = `tiny${randomUUID().slice(0, 6)}`;
    await sql`INSERT INTO plans (name, rate_limit_per_minute, storage_bytes) VALUES (${plan}, 600, 1024)`;
    await sql`INSERT INTO plan_quotas (plan, platform, monthly_posts) VALUES (${plan}, 'BLUESKY', 100)`;
    await sql`UPDATE organizations SET plan = ${plan} WHERE id = ${ws.workspaceId}`;

    const rule = await createRule(owner, { integrationIds: [bluesky] });
    const [event] = await eventually(() => eventsOf(owner, `ruleId=${rule.id}`), (items) => items.length === 1, 20_000);
    expect(event).toMatchObject({ postId: created.json.postId, status: 'SKIPPED', scheduleIds: [] });
    expect(event.skipped).toEqual([{ integrationId: bluesky, code: 'STORAGE_QUOTA_EXCEEDED', reason: expect.stringContaining(`than the ${plan} plan allows`) }]);
  });

  it('does not put back on a platform what a person took down there', async () => {
    const { ws, bluesky, linkedin, owner } = await team();
    const postId = await published(ws, [bluesky, linkedin], `Taken down ${randomUUID().slice(0, 8)}`);
    const [onLinkedIn] = await sql<{ id: string }[]>`SELECT id FROM schedules WHERE post_id = ${postId} AND integration_id = ${linkedin}`;
    const removed = await rest(ws.apiKey, `/schedules/${onLinkedIn!.id}`, { method: 'DELETE' });
    expect(removed.status, removed.text).toBe(200);
    const rule = await createRule(owner, { integrationIds: [bluesky, linkedin], linkedinVariations: ['Back again.'] });
    const [event] = await eventually(() => eventsOf(owner, `ruleId=${rule.id}`), (items) => items.length === 1, 20_000);
    expect(event).toMatchObject({ postId, status: 'RECYCLED', skipped: [], linkedinVariation: null });
    expect(await sql`SELECT integration_id FROM schedules WHERE id = ANY(${event.scheduleIds}::uuid[])`).toEqual([{ integrationId: bluesky }]);
  });

  it('is refused with the field named for a channel of another workspace; deleting it removes its queued run', async () => {
    const { ws, bluesky, owner } = await team();
    const other = await service.workspace({ plan: 'business' });
    const foreign = (await other.admin('createIntegration', { platform: 'LINKEDIN', name: 'Theirs' })).id;
    const refused = await owner.request('/api/v1/recycle-rules', { method: 'POST', body: { name: 'x', integrationIds: [bluesky, foreign] } });
    expect([refused.status, refused.json]).toEqual([404, { code: 'NOT_FOUND', message: expect.stringMatching(/body\.integrationIds\[1\]$/) }]);
    const repeated = await owner.request('/api/v1/recycle-rules', { method: 'POST', body: { name: 'x', integrationIds: [bluesky, bluesky] } });
    expect([repeated.status, repeated.json.code]).toEqual([400, 'VALIDATION_ERROR']);
    expect(await sql`SELECT 1 FROM recycle_rules WHERE organization_id = ${ws.workspaceId}`).toEqual([]);

    // A rule whose run is queued (in an hour) is deleted: the job goes with it.
    const rule = await createRule(owner, { integrationIds: [bluesky], enabled: false });
    await sql`SELECT graphile_worker.add_job('recycle-rule', json_build_object('ruleId', ${rule.id}::uuid, 'period', 'later'),
      run_at := now() + interval '1 hour', job_key := ${`recycle-rule:${rule.id}`})`;
    expect((await owner.request(`/api/v1/recycle-rules/${rule.id}`, { method: 'DELETE' })).json).toEqual({ success: true });
    expect(await sql`SELECT 1 FROM graphile_worker.jobs WHERE key = ${`recycle-rule:${rule.id}`}`).toEqual([]);
    expect((await owner.request(`/api/v1/recycle-rules/${rule.id}`)).status).toBe(404);
  });
});

describe('two workers', () => {
  it('recycle once when both run the same rule and period at the same time', async () => {
    const { ws, bluesky, owner } = await team();
    const tag = randomUUID().slice(0, 8);
    // Made first, its first run (today's) finds nothing to recycle.
    const rule = await createRule(owner, { integrationIds: [bluesky], postsPerRun: 2 });
    await eventually(() => runsOf(rule.id), (runs) => runs.length === 1, 20_000);
    const posts: string[] = [];
    for (const n of [1, 2, 3, 4, 5]) posts.push(await published(ws, [bluesky], `Evergreen ${n} ${tag}`));
    const second = await startTestService(
      { databaseUrl: service.databaseUrl, encryptionKey: service.service.core.app.config.encryptionKey },
      { api: false, worker: true },
    );
    try {
      for (let round = 0; round < 3; round += 1) {
        const period = `race-${round}`;
        // Jobs under different keys (as two schedulers might make), queued in one go: each worker takes some.
        await sql`SELECT graphile_worker.add_job('recycle-rule', json_build_object('ruleId', ${rule.id}::uuid, 'period', ${period}::text), job_key := k)
          FROM unnest(ARRAY['a', 'b', 'c', 'd']) AS k`;
        await eventually(() => runsOf(rule.id), (runs) => runs.some((run) => run.period === period), 20_000);
        await noRecycleJobs();
      }
      // One run per period, each picking postsPerRun (2) of the five, however many jobs asked.
      expect((await runsOf(rule.id)).map((run) => run.period).filter((period) => period.startsWith('race-')).sort()).toEqual(['race-0', 'race-1', 'race-2']);
      const events = await eventsOf(owner, `ruleId=${rule.id}`);
      expect(events.map((event) => [event.period, event.status]).sort()).toEqual([
        ['race-0', 'RECYCLED'],
        ['race-0', 'RECYCLED'],
        ['race-1', 'RECYCLED'],
        ['race-1', 'RECYCLED'],
        ['race-2', 'RECYCLED'],
      ]);
      expect(events.map((event) => event.postId).sort()).toEqual([...posts].sort());
      const [{ count }] = await sql<[{ count: number }]>`SELECT count(*)::int FROM schedules WHERE origin_recycle_event_id IS NOT NULL AND organization_id = ${ws.workspaceId}`;
      expect(count).toBe(5);

      // The crontab's sweep, run twice at once, queues one run for the rule's new period (its ISO week, once weekly).
      await owner.request(`/api/v1/recycle-rules/${rule.id}`, { method: 'PATCH', body: { enabled: false, frequency: 'WEEKLY' } });
      await sql`UPDATE recycle_rules SET enabled = true WHERE id = ${rule.id}`;
      await sql`SELECT graphile_worker.add_job('recycle-evergreen', '{}'::json, job_key := k) FROM unnest(ARRAY['x', 'y']) AS k`;
      const runs = await eventually(() => runsOf(rule.id), (found) => found.some((run) => /^\d{4}-W\d{2}$/.test(run.period)), 20_000);
      await eventually(() => sql`SELECT 1 FROM graphile_worker.jobs WHERE task_identifier LIKE 'recycle-%'`, (rows) => rows.length === 0, 20_000);
      expect((await runsOf(rule.id)).filter((run) => /^\d{4}-W\d{2}$/.test(run.period))).toHaveLength(1);
      expect(await runsOf(rule.id)).toHaveLength(runs.length);
      expect(runs).toHaveLength(5);
    } finally {
      await second.stop();
    }
  }, 120_000);
});

describe('the admin command', () => {
  it('makes, changes, lists and deletes a rule from a shell, and lists what it did', async () => {
    const { ws, bluesky, linkedin } = await team();
    const env = { DATABASE_URL: service.databaseUrl, ENCRYPTION_KEY: service.service.core.app.config.encryptionKey! };
    const at = ['--workspace', ws.workspaceId];
    const made = await admin(
      ['create-recycle-rule', ...at, '--name', 'Shell', '--channels', `${bluesky},${linkedin}`, '--frequency', 'WEEKLY', '--posts-per-run', '3',
        '--max-runs', '2', '--linkedin-variation', 'One.', '--linkedin-variation', 'Two.', '--disable'],
      env,
    );
    expect(made.json).toMatchObject({
      name: 'Shell', integrationIds: [bluesky, linkedin], frequency: 'WEEKLY', postsPerRun: 3, maxRuns: 2,
      linkedinVariations: ['One.', 'Two.'], postingWindows: null, enabled: false,
    });
    const changed = await admin(['update-recycle-rule', ...at, '--rule', made.json.id, '--max-runs', 'none', '--min-interval-days', '60'], env);
    expect(changed.json).toMatchObject({ maxRuns: null, minIntervalDays: 60, enabled: false, postsPerRun: 3 });
    expect((await admin(['list-recycle-rules', ...at], env)).json.map((rule: { id: string }) => rule.id)).toEqual([made.json.id]);
    expect((await admin(['list-recycle-events', ...at, '--rule', made.json.id], env)).json).toEqual({ items: [], nextCursor: null });
    expect((await admin(['delete-recycle-rule', ...at, '--rule', made.json.id], env)).json).toEqual({ success: true });
    expect((await admin(['list-recycle-rules', ...at], env)).json).toEqual([]);
  }, 90_000);
});
