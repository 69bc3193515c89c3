import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectThroughForm, createAccount, postsOf, type TestAccount } from './support/bluesky.js';
import { signedIn, type HttpSession } from './support/http-session.js';
import { admin } from './support/processes.js';
import { call, eventually, settledScheduleOf, startTestService, type TestService, type Workspace } from './support/service.js';

/**
 * Approval before publishing, through REST, MCP, dashboard sessions and the admin command, with the worker publishing
 * to a real PDS: a rule on the workspace or on an API key holds live posts in `pending_review` (no publish job, no
 * quota spent) until one of their approvers approves them, in one transaction with their jobs; rejected posts go back
 * to review when changed; retry and reschedule refuse held posts; races between reviewers and with a delete.
 */

let service: TestService;
let sql: postgres.Sql;
let account: TestAccount;

beforeAll(async () => {
  service = await startTestService({}, { api: true, worker: true });
  sql = postgres(service.databaseUrl, { max: 4, onnotice: () => {}, transform: postgres.camel });
  account = await createAccount();
});
afterAll(async () => {
  await sql?.end();
  await service?.stop();
});

interface Team {
  ws: Workspace;
  /** A Bluesky channel on the PDS, and a LinkedIn channel without credentials (its posts are never due in these tests). */
  bluesky: string;
  linkedin: string;
  owner: HttpSession;
}

async function team(): Promise<Team> {
  const ws = await service.workspace({ plan: 'business' });
  return {
    ws,
    bluesky: await connectThroughForm(service.api, ws.apiKey, account),
    linkedin: (await ws.admin('createIntegration', { platform: 'LINKEDIN', name: 'In' })).id,
    owner: await signedIn(service, ws.workspaceId, ws.userId),
  };
}

/** A member of the workspace, signed in. */
async function member(ws: Workspace, name: string): Promise<{ id: string; session: HttpSession }> {
  const added = await ws.admin('addMember', { email: `${name.toLowerCase()}-${ws.workspaceId.slice(0, 8)}@example.org`, name });
  const id = added.userId as string;
  return { id, session: await signedIn(service, ws.workspaceId, id) };
}

const rest = (key: string, path: string, options: { method?: string; body?: unknown } = {}) => call(`${service.api}${path}`, { key, ...options });

const inADay = () => new Date(Date.now() + 86_400_000).toISOString();

async function create(key: string, channels: string[], postAction = 'SCHEDULED_TIME', content = 'Our spring catalogue is out today.') {
  const answer = await rest(key, '/posts', {
    method: 'POST',
    body: { rows: [{ content, ...(postAction === 'SCHEDULED_TIME' && { scheduledAt: inADay() }) }], shared: { selectedIntegrations: channels }, postAction },
  });
  expect(answer.status, answer.text).toBe(201);
  return answer.json as { postId: string; message: string };
}

const jobsOf = (postId: string) =>
  sql<{ key: string; runAt: Date }[]>`
    SELECT j.key, j.run_at FROM graphile_worker.jobs j JOIN schedules s ON j.key = 'publish-schedule:' || s.id WHERE s.post_id = ${postId}`;

const quotaUsed = async (workspaceId: string) =>
  (await sql<{ used: number }[]>`SELECT coalesce(sum(used), 0)::int AS used FROM post_quota_usage WHERE organization_id = ${workspaceId}`)[0]!.used;

const post = async (session: HttpSession, postId: string) => (await session.request(`/api/v1/posts/${postId}`)).json;

describe('a key that requires approval (the agent\'s key)', () => {
  it('holds its live posts, over MCP too, until the owner approves one from the dashboard; then it publishes to the PDS', async () => {
    const { ws, bluesky, owner } = await team();
    const key = await owner.request('/api/v1/api-keys', { method: 'POST', body: { name: 'agent', postsNeedApproval: true } });
    expect(key.status, key.text).toBe(201);
    expect(key.json).toMatchObject({ name: 'agent', postsNeedApproval: true });

    const mcp = new Client({ name: 'agent', version: '1.0.0' });
    await mcp.connect(new StreamableHTTPClientTransport(new URL(`${service.base}/mcp`), { requestInit: { headers: { 'x-api-key': key.json.key } } }));
    try {
      const tools = await mcp.listTools();
      expect(tools.tools.find((tool) => tool.name === 'createPost')!.description).toContain('A post may wait for a person');
      const created = await mcp.callTool({
        name: 'createPost',
        arguments: { rows: [{ content: 'An agent wrote this one, and a person reads it first.' }], shared: { selectedIntegrations: [bluesky] }, postAction: 'PUBLISH_NOW' },
      });
      expect(created.isError, JSON.stringify(created)).toBeFalsy();
      const { postId, message, approvalStatus, canSchedule } = created.structuredContent as { postId: string; message: string; approvalStatus: string; canSchedule: boolean };
      expect(message).toBe('1 post with 1 schedule queued for publishing now; waiting for approval (approvalStatus pending_review): nothing publishes until an approver approves');
      expect([approvalStatus, canSchedule]).toEqual(['pending_review', false]);

      const read = await mcp.callTool({ name: 'getPost', arguments: { id: postId } });
      const held = read.structuredContent as Record<string, any>;
      expect(held).toMatchObject({
        approvalStatus: 'pending_review',
        canSchedule: false,
        requiredApproverIds: [ws.userId],
        approvalCompletedAt: null,
        approvalReviewerId: null,
        approvalNote: null,
      });
      expect(Date.parse(held.approvalRequestedAt)).toBeGreaterThan(Date.now() - 60_000);
      expect(held.schedules).toHaveLength(1);
      expect(held.schedules[0]).toMatchObject({ status: 'SCHEDULED', approvalStatus: 'pending_review', approvalRequestedAt: held.approvalRequestedAt });
      // Due now, and the worker is running: only the missing job keeps it from the PDS.
      expect(await jobsOf(postId)).toEqual([]);
      expect(await quotaUsed(ws.workspaceId)).toBe(0);
      await new Promise((resolve) => setTimeout(resolve, 1500));
      expect((await post(owner, postId)).schedules[0].status).toBe('SCHEDULED');

      // The agent's own moves over MCP: a change keeps it waiting, a reschedule is refused with the reason.
      const changed = await mcp.callTool({ name: 'updatePost', arguments: { id: postId, content: 'An agent wrote this one, and a person reads it first.' } });
      expect(changed.structuredContent).toMatchObject({ approvalStatus: 'pending_review', canSchedule: false });
      const moved = await mcp.callTool({ name: 'rescheduleSchedule', arguments: { scheduleId: held.schedules[0].id, scheduledAt: new Date(Date.now() + 3_600_000).toISOString() } });
      expect(moved.isError).toBe(true);
      expect(JSON.parse((moved.content as { text: string }[])[0]!.text)).toEqual({
        code: 'INVALID_STATE',
        message: 'The schedule cannot be rescheduled: its post is waiting for approval (approvalStatus pending_review): an approver must approve it first',
      });

      // Reviewing is not a key's: the generic 404, over REST and as a missing tool.
      for (const path of [`/posts/${postId}/approve`, `/posts/${postId}/reject`]) {
        expect(await rest(key.json.key, path, { method: 'POST', body: {} })).toMatchObject({ status: 404, json: { code: 'NOT_FOUND' } });
      }
      expect((await rest(key.json.key, '/approvals')).status).toBe(404);
      expect(tools.tools.map((tool) => tool.name)).not.toContain('approvePost');

      const queue = await owner.request('/api/v1/approvals');
      expect(queue.status, queue.text).toBe(200);
      expect(queue.json.items.map((item: { id: string }) => item.id)).toEqual([postId]);
      expect(queue.json.nextCursor).toBeNull();

      const approved = await owner.request(`/api/v1/posts/${postId}/approve`, { method: 'POST', body: { note: 'Fine by me' } });
      expect(approved.status, approved.text).toBe(200);
      expect(approved.json).toMatchObject({ id: postId, approvalStatus: 'approved', canSchedule: true, approvalReviewerId: ws.userId, approvalNote: 'Fine by me' });
      expect(approved.json.schedules[0]).toMatchObject({ approvalStatus: 'approved', approvalCompletedAt: approved.json.approvalCompletedAt });
      expect(await quotaUsed(ws.workspaceId)).toBe(1);
      const settled = await settledScheduleOf(sql, postId);
      expect(settled).toMatchObject({ status: 'PUBLISHED', failureReason: null });
      expect((await postsOf(account)).map((record) => (record.value as { text: string }).text)).toContain('An agent wrote this one, and a person reads it first.');
      expect((await owner.request('/api/v1/approvals')).json.items).toEqual([]);

      // The feed serves an event once every transaction older than its own has ended: soon, not at once.
      const events = await eventually(() => rest(ws.apiKey, `/events?resourceId=${postId}`), (answer) => answer.json.items.length >= 8, 10_000);
      // Each event's post as it was after the change: created already waiting.
      expect(events.json.items[0].data).toMatchObject({ approvalStatus: 'pending_review', canSchedule: false });
      expect(events.json.items.map((event: { type: string }) => event.type)).toEqual([
        'post.created',
        'post.approval_requested',
        'post.updated',
        'post.approval_requested',
        'post.approved',
        'schedule.scheduled',
        'schedule.publishing',
        'schedule.published',
      ]);
    } finally {
      await mcp.close();
    }
  });

  it('a key without the rule publishes at once in the same workspace; turning a key\'s rule off leaves its waiting posts waiting', async () => {
    const { ws, bluesky, linkedin, owner } = await team();
    const free = await create(ws.apiKey, [bluesky], 'PUBLISH_NOW', 'Published without anybody looking.');
    expect((await settledScheduleOf(sql, free.postId)).status).toBe('PUBLISHED');
    expect(await post(owner, free.postId)).toMatchObject({ approvalStatus: null, canSchedule: true, requiredApproverIds: [] });

    const key = (await owner.request('/api/v1/api-keys', { method: 'POST', body: { name: 'agent', postsNeedApproval: true } })).json;
    const waiting = await create(key.key, [linkedin]);
    const turnedOff = await owner.request(`/api/v1/api-keys/${key.id}`, { method: 'PATCH', body: { postsNeedApproval: false } });
    expect(turnedOff.status, turnedOff.text).toBe(200);
    expect(turnedOff.json).toMatchObject({ id: key.id, postsNeedApproval: false });
    expect(await post(owner, waiting.postId)).toMatchObject({ approvalStatus: 'pending_review' });
    const after = await create(key.key, [linkedin]);
    expect(await post(owner, after.postId)).toMatchObject({ approvalStatus: null, canSchedule: true });
    expect(await jobsOf(after.postId)).toHaveLength(1);
    expect(await jobsOf(waiting.postId)).toEqual([]);

    // A post of the workspace whose only schedule FAILED: the agent's change to its text goes to review, so that a
    // retry cannot publish unreviewed text.
    const broken = await create(ws.apiKey, [linkedin]);
    await sql`UPDATE schedules SET status = 'FAILED' WHERE post_id = ${broken.postId}`;
    await owner.request(`/api/v1/api-keys/${key.id}`, { method: 'PATCH', body: { postsNeedApproval: true } });
    const rewritten = await rest(key.key, `/posts/${broken.postId}`, { method: 'PATCH', body: { content: 'Rewritten by the agent.' } });
    expect(rewritten.json).toMatchObject({ approvalStatus: 'pending_review', canSchedule: false });
    const [failed] = await sql<{ id: string }[]>`SELECT id FROM schedules WHERE post_id = ${broken.postId}`;
    expect((await rest(key.key, `/posts/schedules/${failed!.id}/retry`, { method: 'POST' })).json.code).toBe('INVALID_STATE');

    // A member may not change the owner's key; the key itself may not change keys.
    const eve = await member(ws, 'Eve');
    expect(await eve.session.request(`/api/v1/api-keys/${key.id}`, { method: 'PATCH', body: { postsNeedApproval: false } })).toMatchObject({
      status: 403,
      json: { code: 'FORBIDDEN', message: 'Only the owner of this workspace may change another member\'s key' },
    });
    expect((await rest(key.key, `/api-keys/${key.id}`, { method: 'PATCH', body: { postsNeedApproval: false } })).status).toBe(404);
  });
});

describe('the engine', () => {
  it('never publishes a held post, whatever job asks for it', async () => {
    const { ws, bluesky, owner } = await team();
    await owner.request('/api/v1/workspace/settings', { method: 'PATCH', body: { postsNeedApproval: true } });
    const { postId } = await create(ws.apiKey, [bluesky], 'PUBLISH_NOW', 'A job for this post was queued by hand.');
    await sql`SELECT graphile_worker.add_job('publish-schedule', json_build_object('scheduleId', id), job_key := 'publish-schedule:' || id)
      FROM schedules WHERE post_id = ${postId}`;
    expect(await eventually(() => jobsOf(postId), (jobs) => jobs.length === 0, 15_000)).toEqual([]);
    expect((await post(owner, postId)).schedules[0]).toMatchObject({ status: 'SCHEDULED', approvalStatus: 'pending_review', publishedAt: null });
    expect(await sql`SELECT 1 FROM events WHERE post_id = ${postId} AND type = 'schedule.publishing'`).toHaveLength(0);
  });
});

describe('the workspace\'s rule', () => {
  it('holds every live post for the named approvers; a rejection keeps who and why; the author\'s change sends it back', async () => {
    const { ws, linkedin, owner } = await team();
    const grace = await member(ws, 'Grace');
    const eve = await member(ws, 'Eve');
    const stranger = '00000000-0000-4000-8000-000000000000';
    expect(await owner.request('/api/v1/workspace/settings', { method: 'PATCH', body: { postsNeedApproval: true, approverIds: [grace.id, stranger] } })).toMatchObject({
      status: 400,
      json: { code: 'VALIDATION_ERROR', message: `body.approverIds[1]: ${stranger} is not a member of this workspace` },
    });
    const rule = await owner.request('/api/v1/workspace/settings', { method: 'PATCH', body: { postsNeedApproval: true, approverIds: [grace.id] } });
    expect(rule.status, rule.text).toBe(200);
    expect(rule.json).toMatchObject({ postsNeedApproval: true, approverIds: [grace.id] });

    const draft = await create(ws.apiKey, [linkedin], 'DRAFT');
    expect(await post(owner, draft.postId)).toMatchObject({ approvalStatus: null, canSchedule: true });
    const { postId } = await create(ws.apiKey, [linkedin]);
    expect(await post(owner, postId)).toMatchObject({ approvalStatus: 'pending_review', requiredApproverIds: [grace.id] });
    const [schedule] = await sql<{ id: string }[]>`SELECT id FROM schedules WHERE post_id = ${postId}`;

    expect(await eve.session.request(`/api/v1/posts/${postId}/approve`, { method: 'POST', body: {} })).toMatchObject({
      status: 403,
      json: { code: 'FORBIDDEN', message: 'You are not among the post\'s approvers (requiredApproverIds) nor a workspace owner' },
    });
    const rejected = await grace.session.request(`/api/v1/posts/${postId}/reject`, { method: 'POST', body: { note: 'Too salesy' } });
    expect(rejected.status, rejected.text).toBe(200);
    expect(rejected.json).toMatchObject({ approvalStatus: 'rejected', canSchedule: false, approvalReviewerId: grace.id, approvalNote: 'Too salesy' });
    expect((await owner.request('/api/v1/approvals?status=rejected')).json.items.map((item: { id: string }) => item.id)).toEqual([postId]);
    const again = await grace.session.request(`/api/v1/posts/${postId}/approve`, { method: 'POST', body: {} });
    expect(again.status).toBe(409);
    expect(again.json.code).toBe('INVALID_STATE');
    expect(again.json.message).toMatch(/^The post is not waiting for approval: it was rejected by Grace at \d{4}-\d\d-\d\dT/);

    // Retry and reschedule refuse a held post, saying why; the schedule keeps its time and has no job.
    const moved = await rest(ws.apiKey, `/posts/schedules/${schedule!.id}/reschedule`, { method: 'POST', body: { scheduledAt: inADay() } });
    expect([moved.status, moved.json]).toEqual([
      409,
      { code: 'INVALID_STATE', message: 'The schedule cannot be rescheduled: its post was rejected by an approver (approvalStatus rejected): change the post to send it back to review' },
    ]);
    await sql`UPDATE schedules SET status = 'FAILED' WHERE id = ${schedule!.id}`;
    const retried = await rest(ws.apiKey, `/posts/schedules/${schedule!.id}/retry`, { method: 'POST' });
    expect(retried.status).toBe(409);
    expect(retried.json.message).toBe('The schedule cannot be retried: its post was rejected by an approver (approvalStatus rejected): change the post to send it back to review');
    await sql`UPDATE schedules SET status = 'SCHEDULED' WHERE id = ${schedule!.id}`;
    expect(await jobsOf(postId)).toEqual([]);

    const changed = await rest(ws.apiKey, `/posts/${postId}`, { method: 'PATCH', body: { content: 'Our spring catalogue: forty new titles.' } });
    expect(changed.status, changed.text).toBe(200);
    expect(changed.json).toEqual({
      postId,
      message: 'Post updated; waiting for approval (approvalStatus pending_review): nothing publishes until an approver approves',
      approvalStatus: 'pending_review',
      canSchedule: false,
    });
    expect(await post(owner, postId)).toMatchObject({ approvalStatus: 'pending_review', approvalReviewerId: null, approvalNote: null, requiredApproverIds: [grace.id] });

    // An owner may approve though not named; the job is queued at the schedule's time.
    const approved = await owner.request(`/api/v1/posts/${postId}/approve`, { method: 'POST', body: {} });
    expect(approved.status, approved.text).toBe(200);
    const [job] = await jobsOf(postId);
    expect(job!.runAt.toISOString()).toBe(approved.json.schedules[0].scheduledAt);

    // Tags alone leave it approved; a change to what it publishes sends it back while the rule holds, its job removed.
    const tag = await ws.admin('createTag', { name: 'Spring' });
    expect((await rest(ws.apiKey, `/posts/${postId}`, { method: 'PATCH', body: { tagIds: [tag.id] } })).json).toEqual({
      postId,
      message: 'Post updated',
      approvalStatus: 'approved',
      canSchedule: true,
    });
    expect(await post(owner, postId)).toMatchObject({ approvalStatus: 'approved' });
    expect(await jobsOf(postId)).toHaveLength(1);
    await rest(ws.apiKey, `/posts/${postId}`, { method: 'PATCH', body: { firstComment: 'Order at the shop.' } });
    expect(await post(owner, postId)).toMatchObject({ approvalStatus: 'pending_review' });
    expect(await jobsOf(postId)).toEqual([]);
    await grace.session.request(`/api/v1/posts/${postId}/approve`, { method: 'POST', body: {} });
    expect(await jobsOf(postId)).toHaveLength(1);
    // The quota was spent once, at the first approval.
    expect(await quotaUsed(ws.workspaceId)).toBe(1);

    // Without the rule, a change leaves an approved post approved.
    await owner.request('/api/v1/workspace/settings', { method: 'PATCH', body: { postsNeedApproval: false } });
    await rest(ws.apiKey, `/posts/${postId}`, { method: 'PATCH', body: { content: 'Our spring catalogue: forty-two new titles.' } });
    expect(await post(owner, postId)).toMatchObject({ approvalStatus: 'approved' });
    expect(await jobsOf(postId)).toHaveLength(1);
  });

  it('drafts made live wait too, and are not counted against the quota until approved; a quota spent by then refuses the approval', async () => {
    const { ws, bluesky, linkedin, owner } = await team();
    const draft = await create(ws.apiKey, [bluesky, linkedin], 'DRAFT');
    await owner.request('/api/v1/workspace/settings', { method: 'PATCH', body: { postsNeedApproval: true } });
    const live = await rest(ws.apiKey, `/posts/${draft.postId}`, { method: 'PATCH', body: { postAction: 'SCHEDULED_TIME', scheduledAt: inADay() } });
    expect(live.status, live.text).toBe(200);
    expect(live.json.message).toBe('Post updated; 2 draft schedules made live; waiting for approval (approvalStatus pending_review): nothing publishes until an approver approves');
    expect(await post(owner, draft.postId)).toMatchObject({ approvalStatus: 'pending_review', requiredApproverIds: [ws.userId] });
    expect(await jobsOf(draft.postId)).toEqual([]);
    expect(await quotaUsed(ws.workspaceId)).toBe(0);

    const month = new Date().toISOString().slice(0, 7) + '-01';
    await sql`INSERT INTO post_quota_usage (organization_id, platform, month, used) VALUES (${ws.workspaceId}, 'LINKEDIN', ${month}, 3000)`;
    const refused = await owner.request(`/api/v1/posts/${draft.postId}/approve`, { method: 'POST', body: {} });
    expect(refused.status).toBe(403);
    expect(refused.json.code).toBe('POST_QUOTA_EXCEEDED');
    expect(refused.json.message).toMatch(/^The business plan allows 3,?000 LINKEDIN posts a month; 3000 used this month, and this request needs 1\./);
    expect(await post(owner, draft.postId)).toMatchObject({ approvalStatus: 'pending_review' });
    expect(await jobsOf(draft.postId)).toEqual([]);
    await sql`UPDATE post_quota_usage SET used = 0 WHERE organization_id = ${ws.workspaceId} AND platform = 'LINKEDIN'`;
    expect((await owner.request(`/api/v1/posts/${draft.postId}/approve`, { method: 'POST', body: {} })).status).toBe(200);
    expect(await jobsOf(draft.postId)).toHaveLength(2);
    expect(await quotaUsed(ws.workspaceId)).toBe(2);
  });

  it('a time that passed while the post waited: approved, it publishes at once', async () => {
    const { ws, bluesky, owner } = await team();
    await owner.request('/api/v1/workspace/settings', { method: 'PATCH', body: { postsNeedApproval: true } });
    const { postId } = await create(ws.apiKey, [bluesky], 'SCHEDULED_TIME', 'Waited a while for a reviewer, and went out the moment one came.');
    await sql`UPDATE schedules SET scheduled_at = now() - interval '2 hours' WHERE post_id = ${postId}`;
    const before = Date.now();
    const approved = await owner.request(`/api/v1/posts/${postId}/approve`, { method: 'POST', body: {} });
    expect(approved.status, approved.text).toBe(200);
    expect(Date.parse(approved.json.schedules[0].scheduledAt)).toBeGreaterThanOrEqual(before - 1000);
    expect(await settledScheduleOf(sql, postId)).toMatchObject({ status: 'PUBLISHED' });
  });
});

describe('races', () => {
  it('two approvers at once: one approval, one job, the quota spent once; the other is told who approved it', async () => {
    const { ws, linkedin, owner } = await team();
    const grace = await member(ws, 'Grace');
    await owner.request('/api/v1/workspace/settings', { method: 'PATCH', body: { postsNeedApproval: true, approverIds: [grace.id] } });
    for (let round = 0; round < 5; round++) {
      const { postId } = await create(ws.apiKey, [linkedin]);
      const answers = await Promise.all([owner, grace.session].map((session) => session.request(`/api/v1/posts/${postId}/approve`, { method: 'POST', body: {} })));
      expect(answers.map((answer) => answer.status).sort()).toEqual([200, 409]);
      const lost = answers.find((answer) => answer.status === 409)!;
      expect(lost.json.message).toMatch(/^The post is not waiting for approval: it was approved by /);
      expect(await jobsOf(postId)).toHaveLength(1);
    }
    expect(await quotaUsed(ws.workspaceId)).toBe(5);
  });

  it('an approval racing a delete: whichever comes second finds the outcome, and no job is left for a deleted post', async () => {
    const { ws, linkedin, owner } = await team();
    await owner.request('/api/v1/workspace/settings', { method: 'PATCH', body: { postsNeedApproval: true } });
    for (let round = 0; round < 5; round++) {
      const { postId } = await create(ws.apiKey, [linkedin]);
      const scheduleIds = (await sql<{ id: string }[]>`SELECT id FROM schedules WHERE post_id = ${postId}`).map((row) => row.id);
      const [approved, deleted] = await Promise.all([
        owner.request(`/api/v1/posts/${postId}/approve`, { method: 'POST', body: {} }),
        rest(ws.apiKey, `/posts/${postId}`, { method: 'DELETE' }),
      ]);
      expect([200, 404]).toContain(approved.status);
      expect(deleted.status, deleted.text).toBe(200);
      expect(await sql`SELECT 1 FROM posts WHERE id = ${postId}`).toHaveLength(0);
      const keys = scheduleIds.map((id) => `publish-schedule:${id}`);
      expect(await sql`SELECT 1 FROM graphile_worker.jobs WHERE key = ANY(${keys})`).toHaveLength(0);
    }
  });
});

describe('the admin command', () => {
  it('sets the rule, lists the queue and approves from a shell', async () => {
    const { ws, linkedin } = await team();
    const env = { DATABASE_URL: service.databaseUrl, ENCRYPTION_KEY: service.service.core.app.config.encryptionKey! };
    const on = await admin(['set-approval', '--workspace', ws.workspaceId, '--on'], env);
    expect(on.json).toMatchObject({ postsNeedApproval: true, approverIds: [] });
    const { postId } = await create(ws.apiKey, [linkedin]);
    const queue = await admin(['list-approvals', '--workspace', ws.workspaceId], env);
    expect(queue.json.items.map((item: { id: string }) => item.id)).toEqual([postId]);
    const approved = await admin(['approve-post', '--workspace', ws.workspaceId, '--post', postId, '--note', 'From the shell'], env);
    expect(approved.json).toMatchObject({ id: postId, approvalStatus: 'approved', approvalNote: 'From the shell' });
    expect(await eventually(() => jobsOf(postId), (jobs) => jobs.length === 1)).toHaveLength(1);
  });
});
