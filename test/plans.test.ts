import { readFile } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { operations } from '../operations/index.js';
import { definePlan, readPlan, setSubscription, setWorkspacePlan } from '../src/admin/plans.js';
import { kebab } from '../src/cli/flags.js';
import { admin, run } from './support/processes.js';
import { call, startTestService, type TestService, type Workspace } from './support/service.js';

let service: TestService;
let ws: Workspace;
let env: Record<string, string>;

beforeAll(async () => {
  service = await startTestService();
  ws = await service.workspace();
  env = { DATABASE_URL: service.databaseUrl };
});
afterAll(() => service?.stop());

describe('plans', () => {
  it('are seeded with LinkedIn metered separately and more tightly than Bluesky, and Mastodon and Threads as Bluesky', async () => {
    for (const name of ['free', 'pro', 'business']) {
      const plan = (await readPlan(service.service.core.db, name))!;
      expect(plan.rateLimitPerMinute).toBeGreaterThan(0);
      expect(plan.storageBytes).toBeGreaterThan(0);
      expect(plan.monthlyPostQuotas.LINKEDIN).toBeLessThan(plan.monthlyPostQuotas.BLUESKY);
      expect(plan.monthlyPostQuotas.MASTODON).toBe(plan.monthlyPostQuotas.BLUESKY);
      expect(plan.monthlyPostQuotas.THREADS).toBe(plan.monthlyPostQuotas.BLUESKY);
    }
    expect(await readPlan(service.service.core.db, 'free')).toEqual({
      name: 'free',
      rateLimitPerMinute: 60,
      storageBytes: 1073741824,
      monthlyPostQuotas: { BLUESKY: 100, LINKEDIN: 20, MASTODON: 100, THREADS: 100 },
    });
  });

  it('are created and changed by define-plan, which needs the numbers of a new plan', async () => {
    const incomplete = await admin(['define-plan', '--plan', 'team', '--rate-limit', '100'], env);
    expect(incomplete.code).toBe(1);
    expect(incomplete.json.code).toBe('VALIDATION_ERROR');

    const created = await admin(
      ['define-plan', '--plan', 'team', '--rate-limit', '100', '--storage-bytes', '5000000000', '--quota', 'BLUESKY=500', '--quota', 'LINKEDIN=50'],
      env,
    );
    expect(created).toEqual({
      code: 0,
      // A platform not given has a quota of 0.
      json: { name: 'team', rateLimitPerMinute: 100, storageBytes: 5000000000, monthlyPostQuotas: { BLUESKY: 500, LINKEDIN: 50, MASTODON: 0, THREADS: 0 } },
    });
    const changed = await admin(['define-plan', '--plan', 'team', '--quota', 'LINKEDIN=60', '--quota', 'MASTODON=400'], env);
    expect(changed.json).toEqual({ ...created.json, monthlyPostQuotas: { BLUESKY: 500, LINKEDIN: 60, MASTODON: 400, THREADS: 0 } });

    const bad = await admin(['define-plan', '--plan', 'team', '--quota', 'MYSPACE=1'], env);
    expect(bad.code).toBe(1);
    expect(bad.json.message).toContain('BLUESKY, LINKEDIN, MASTODON, THREADS');
  });

  it('are set on a workspace by set-plan, and a subscription by set-subscription', async () => {
    const set = await admin(['set-plan', '--workspace', ws.workspaceId, '--plan', 'pro'], env);
    expect(set).toEqual({ code: 0, json: { workspaceId: ws.workspaceId, plan: 'pro', subscriptionStatus: 'active' } });
    const unknown = await admin(['set-plan', '--workspace', ws.workspaceId, '--plan', 'platinum'], env);
    expect(unknown).toEqual({ code: 1, json: { code: 'NOT_FOUND', message: 'No plan named "platinum"' } });
    const bootstrapped = await admin(['bootstrap', '--plan', 'platinum'], env);
    expect(bootstrapped.code).toBe(1);
    expect(bootstrapped.json).toEqual({ code: 'NOT_FOUND', message: expect.stringMatching(/^No plan named "platinum"; the plans are .*business, free, pro/) });

    const none = await admin(['set-subscription', '--workspace', ws.workspaceId, '--status', 'none'], env);
    expect(none.json).toEqual({ workspaceId: ws.workspaceId, plan: 'pro', subscriptionStatus: 'none' });
    const wrong = await admin(['set-subscription', '--workspace', ws.workspaceId, '--status', 'paused'], env);
    expect(wrong.code).toBe(1);
    const missing = await admin(['set-subscription', '--workspace', '00000000-0000-4000-8000-000000000000', '--status', 'active'], env);
    expect(missing.json).toEqual({ code: 'NOT_FOUND', message: 'No such workspace' });
    // Six admin processes, each starting Node and joining the database: about 4 s apiece with the suite beside them.
  }, 60_000);

  it('create-integration prints the channel, which the workspace\'s key then lists', async () => {
    const created = await admin(['create-integration', '--workspace', ws.workspaceId, '--platform', 'LINKEDIN', '--name', 'Company page'], env);
    expect(created.code).toBe(0);
    expect(created.json).toEqual(expect.objectContaining({ id: expect.any(String), platform: 'LINKEDIN', name: 'Company page', tokenStatus: 'MISSING' }));
    const listed = await call(`${service.api}/integrations`, { key: ws.apiKey });
    expect(listed.json.map((integration: { id: string }) => integration.id)).toContain(created.json.id);
    const refused = await admin(['create-integration', '--workspace', ws.workspaceId, '--platform', 'MYSPACE', '--name', 'x'], env);
    expect(refused.code).toBe(1);
    expect(refused.json.code).toBe('VALIDATION_ERROR');
  });

  it('the functions behind the commands are what a billing integration would call', async () => {
    const db = service.service.core.db;
    await definePlan(db, { name: 'solo', rateLimitPerMinute: 30, storageBytes: 1, monthlyPostQuotas: { BLUESKY: 1 } });
    expect((await readPlan(db, 'solo'))!.monthlyPostQuotas).toEqual({ BLUESKY: 1, LINKEDIN: 0, MASTODON: 0, THREADS: 0 });
    expect(await setWorkspacePlan(db, ws.workspaceId, 'solo')).toEqual(expect.objectContaining({ plan: 'solo' }));
    expect(await setSubscription(db, ws.workspaceId, 'active')).toEqual({ workspaceId: ws.workspaceId, plan: 'solo', subscriptionStatus: 'active' });
  });
});

describe('the admin command', () => {
  it('--help lists a command for every operation of the registry, and every command docs/operations.md shows', async () => {
    const help = run(['run', '--silent', 'admin', '--', '--help'], env);
    expect(await help.exited).toBe(0);
    const listed = [...help.output().matchAll(/^ {2}([a-z][a-z-]*) \[options\]/gm)].map(([, name]) => name);
    expect(listed).toEqual(expect.arrayContaining(operations.map((operation) => kebab(operation.id))));
    const documented = [...(await readFile('docs/operations.md', 'utf8')).matchAll(/npm run admin -- ([a-z][a-z-]*)/g)].map(([, name]) => name);
    expect(documented).toContain('list-approvals');
    expect(listed).toEqual(expect.arrayContaining(documented));
  });

  it('takes --limit as a number in each list command that pages: list-approvals, list-keys, list-webhook-deliveries, list-recycle-events', async () => {
    // Two of each: two live posts waiting for approval, two keys, two deliveries (of the posts' events), two recycle events.
    const team = await service.workspace();
    const channel = (await team.admin('createIntegration', { platform: 'LINKEDIN', name: 'In' })).id;
    const webhook = await team.admin('createWebhook', { url: 'https://example.com/hook', eventTypes: ['post.created'] });
    await team.admin('updateWorkspaceSettings', { postsNeedApproval: true });
    await team.admin('createApiKey', { name: 'A second key' });
    for (const content of ['One', 'Two']) {
      const scheduledAt = new Date(Date.now() + 86_400_000).toISOString();
      const body = { rows: [{ content, scheduledAt }], shared: { selectedIntegrations: [channel] }, postAction: 'SCHEDULED_TIME' };
      const created = await call(`${service.api}/posts`, { method: 'POST', key: team.apiKey, body });
      expect(created.status, created.text).toBe(201);
    }
    await service.service.core.db`
      INSERT INTO recycle_events (organization_id, period, status) SELECT ${team.workspaceId}, period, 'SKIPPED' FROM unnest(ARRAY['2026-W01', '2026-W02']) AS period`;
    for (const command of [['list-approvals'], ['list-keys'], ['list-webhook-deliveries', '--webhook', webhook.id], ['list-recycle-events']]) {
      const page = await admin([...command, '--workspace', team.workspaceId, '--limit', '1'], env);
      expect(page, command[0]).toEqual({ code: 0, json: { items: [expect.any(Object)], nextCursor: expect.any(String) } });
    }
    // Four admin processes, one after another, each starting Node and joining the database.
  }, 90_000);
});
