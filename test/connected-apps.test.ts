import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Principal } from '../src/auth/principal.js';
import { signedIn, type HttpSession } from './support/http-session.js';
import { admin } from './support/processes.js';
import { call, eventually, startTestService, type TestService, type Workspace } from './support/service.js';

/**
 * Connected apps (OAuth connections, migration 028) as the dashboard manages them, over REST with a dashboard session:
 * listed, their approval rule changed, disconnected (the row and every token of it gone), by whom, and not by a key.
 * No OAuth client flow is run here: the connections are written in SQL as the consent step writes them.
 */
let service: TestService;
let ws: Workspace;
let other: Workspace;
let owner: HttpSession;
let member: HttpSession;
let memberId: string;

const sql = () => service.service.core.db;

beforeAll(async () => {
  service = await startTestService();
  ws = await service.workspace({ workspaceName: 'Apps', ownerName: 'Ada Lovelace' });
  other = await service.workspace({ workspaceName: 'Elsewhere', ownerName: 'Someone Else' });
  const added = await ws.admin('addMember', { email: `grace-${ws.workspaceId.slice(0, 8)}@example.org`, name: 'Grace Hopper' });
  memberId = added.userId;
  [owner, member] = await Promise.all([signedIn(service, ws.workspaceId, ws.userId), signedIn(service, ws.workspaceId, memberId)]);
});

afterAll(() => service?.stop());

interface Connection {
  workspaceId: string;
  userId: string;
  clientName: string;
  resource: 'mcp' | 'api/v1';
  scopes: string[];
  postsNeedApproval?: boolean;
  createdAt: Date;
  lastUsedAt?: Date | null;
  logoUri?: string | null;
}

/** A connection as the consent step writes it (src/http/oauth.ts), with an access token of it. */
async function connect(connection: Connection): Promise<string> {
  const id = randomBytes(18).toString('base64url');
  const db = sql();
  await db`
    INSERT INTO oauth_connections (id, organization_id, user_id, client_id, client_name, logo_uri, redirect_host, resource, scopes,
      posts_need_approval, created_at, last_used_at, expires_at)
    VALUES (${id}, ${connection.workspaceId}, ${connection.userId}, ${`https://${connection.clientName.toLowerCase().replace(/\W+/g, '-')}.example/client.json`},
      ${connection.clientName}, ${connection.logoUri ?? null}, 'chat.example', ${`${service.base}/${connection.resource}`}, ${connection.scopes},
      ${connection.postsNeedApproval ?? true}, ${connection.createdAt}, ${connection.lastUsedAt ?? null}, now() + interval '1 year')`;
  await db`
    INSERT INTO oauth_artifacts (id_hash, kind, connection_id, payload, expires_at)
    VALUES (${randomBytes(32)}, 'AccessToken', ${id}, ${db.json({ grantId: id, kind: 'AccessToken' })}, now() + interval '1 hour')`;
  return id;
}

const rows = async (id: string) => ({
  connections: (await sql()<{ postsNeedApproval: boolean }[]>`SELECT posts_need_approval FROM oauth_connections WHERE id = ${id}`).map((row) => row.postsNeedApproval),
  artifacts: (await sql()<{ kind: string }[]>`SELECT kind FROM oauth_artifacts WHERE connection_id = ${id}`).map((row) => row.kind),
});

/**
 * A call of the owner's connected app `connectionId` (as Claude, reading and writing posts), through the pipeline every
 * surface uses, as the bearer authenticator would hand it over once it found the token.
 */
function asApp(connectionId: string, operationId: string, args: Record<string, unknown> = {}) {
  const principal: Principal = { kind: 'connection', connectionId, appName: 'Claude', scopes: ['posts:read', 'posts:write'], userId: ws.userId, workspaceId: ws.workspaceId };
  return service.service.core.pipeline.run({
    operation: service.service.core.operations.find((operation) => operation.id === operationId),
    principal,
    surface: 'mcp',
    input: { kind: 'arguments', value: args },
  });
}

const minutesAgo = (minutes: number) => new Date(Date.now() - minutes * 60_000);

let ownersMcp: string;
let ownersApi: string;
let membersApp: string;
let elsewhere: string;

describe('the connected apps of a workspace', () => {
  beforeAll(async () => {
    ownersMcp = await connect({
      workspaceId: ws.workspaceId,
      userId: ws.userId,
      clientName: 'Claude',
      resource: 'mcp',
      scopes: ['posts:read', 'posts:write'],
      createdAt: minutesAgo(30),
      lastUsedAt: minutesAgo(5),
      logoUri: 'https://chat.example/logo.png',
    });
    ownersApi = await connect({
      workspaceId: ws.workspaceId,
      userId: ws.userId,
      clientName: 'Scheduler GPT',
      resource: 'api/v1',
      scopes: ['posts:read'],
      postsNeedApproval: false,
      createdAt: minutesAgo(20),
    });
    membersApp = await connect({ workspaceId: ws.workspaceId, userId: memberId, clientName: 'Grace’s agent', resource: 'mcp', scopes: ['posts:read', 'media:write'], createdAt: minutesAgo(10) });
    elsewhere = await connect({ workspaceId: other.workspaceId, userId: other.userId, clientName: 'Not yours', resource: 'mcp', scopes: ['posts:read'], createdAt: minutesAgo(1) });
  });

  it('lists every member’s connections, newest first, with what each reaches and may do, to the owner and to a member alike', async () => {
    const listed = await owner.request('/api/v1/connected-apps');
    expect(listed.status, listed.text).toBe(200);
    expect(listed.json.nextCursor).toBeNull();
    expect(listed.json.items.map((app: { id: string }) => app.id)).toEqual([membersApp, ownersApi, ownersMcp]);
    const [grace, scheduler, claude] = listed.json.items;
    expect(claude).toEqual({
      id: ownersMcp,
      appName: 'Claude',
      logoUri: 'https://chat.example/logo.png',
      redirectHost: 'chat.example',
      resource: 'mcp',
      scopes: ['posts:read', 'posts:write'],
      postsNeedApproval: true,
      createdAt: expect.stringMatching(/Z$/),
      lastUsedAt: expect.stringMatching(/Z$/),
      expiresAt: expect.stringMatching(/Z$/),
      createdBy: { id: ws.userId, name: 'Ada Lovelace' },
    });
    expect(Date.parse(claude.expiresAt)).toBeGreaterThan(Date.now() + 300 * 86_400_000);
    expect(scheduler).toMatchObject({ appName: 'Scheduler GPT', resource: 'api', scopes: ['posts:read'], postsNeedApproval: false, lastUsedAt: null, logoUri: null });
    expect(grace).toMatchObject({ appName: 'Grace’s agent', createdBy: { id: memberId, name: 'Grace Hopper' }, postsNeedApproval: true });

    // A member sees them all, as a member sees every key of the workspace (GET /api-keys).
    const seenByMember = await member.request('/api/v1/connected-apps');
    expect(seenByMember.status, seenByMember.text).toBe(200);
    expect(seenByMember.json).toEqual(listed.json);
    // The other workspace's is in neither.
    expect(JSON.stringify(listed.json)).not.toContain(elsewhere);
  });

  it('pages with limit and cursor', async () => {
    const first = await owner.request('/api/v1/connected-apps?limit=2');
    expect(first.json.items.map((app: { id: string }) => app.id)).toEqual([membersApp, ownersApi]);
    expect(first.json.nextCursor).toEqual(expect.any(String));
    const second = await owner.request(`/api/v1/connected-apps?limit=2&cursor=${first.json.nextCursor}`);
    expect(second.json).toEqual({ items: [expect.objectContaining({ id: ownersMcp })], nextCursor: null });
  });

  it('changes a connection’s approval rule for the owner, answering the connected app', async () => {
    const off = await owner.request(`/api/v1/connected-apps/${ownersMcp}`, { method: 'PATCH', body: { postsNeedApproval: false } });
    expect(off.status, off.text).toBe(200);
    expect(off.json).toMatchObject({ id: ownersMcp, appName: 'Claude', postsNeedApproval: false, createdBy: { name: 'Ada Lovelace' } });
    expect(await rows(ownersMcp)).toEqual({ connections: [false], artifacts: ['AccessToken'] });
    const listed = await owner.request('/api/v1/connected-apps');
    expect(listed.json.items.find((app: { id: string }) => app.id === ownersMcp).postsNeedApproval).toBe(false);

    const on = await owner.request(`/api/v1/connected-apps/${ownersMcp}`, { method: 'PATCH', body: { postsNeedApproval: true } });
    expect(on.json.postsNeedApproval).toBe(true);
    expect((await rows(ownersMcp)).connections).toEqual([true]);
  });

  it('holds the app’s live posts for approval while the rule is on, and no longer once it is turned off', async () => {
    const channel = (await ws.admin('createIntegration', { platform: 'LINKEDIN', name: 'In' })).id;
    const write = async () => {
      const answer = await asApp(ownersMcp, 'createPost', {
        rows: [{ content: 'A post an agent wrote.', scheduledAt: new Date(Date.now() + 86_400_000).toISOString() }],
        shared: { selectedIntegrations: [channel] },
        postAction: 'SCHEDULED_TIME',
      });
      expect(answer.ok, JSON.stringify(answer.body)).toBe(true);
      return (answer.body as { approvalStatus: string | null }).approvalStatus;
    };
    expect(await write()).toBe('pending_review');
    expect((await owner.request(`/api/v1/connected-apps/${ownersMcp}`, { method: 'PATCH', body: { postsNeedApproval: false } })).status).toBe(200);
    expect(await write()).toBeNull();
    expect((await owner.request(`/api/v1/connected-apps/${ownersMcp}`, { method: 'PATCH', body: { postsNeedApproval: true } })).status).toBe(200);
  });

  it('refuses a change without the rule, or with another field', async () => {
    for (const body of [{}, { postsNeedApproval: 'no' }, { postsNeedApproval: false, scopes: ['posts:write'] }]) {
      const refused = await owner.request(`/api/v1/connected-apps/${ownersMcp}`, { method: 'PATCH', body });
      expect(refused.status, JSON.stringify(body)).toBe(400);
      expect(refused.json.code).toBe('VALIDATION_ERROR');
    }
    expect((await rows(ownersMcp)).connections).toEqual([true]);
  });

  it('lets a member change and disconnect only the apps they connected; the owner any', async () => {
    for (const [method, body] of [['PATCH', { postsNeedApproval: false }], ['DELETE', undefined]] as const) {
      const refused = await member.request(`/api/v1/connected-apps/${ownersMcp}`, { method, body });
      expect(refused.status, refused.text).toBe(403);
      expect(refused.json.code).toBe('FORBIDDEN');
    }
    expect(await rows(ownersMcp)).toEqual({ connections: [true], artifacts: ['AccessToken'] });
    // What the rule says stays what the member sees.
    const seen = (await member.request('/api/v1/connected-apps')).json.items.find((app: { id: string }) => app.id === ownersMcp);
    expect(seen.postsNeedApproval).toBe(true);

    const own = await member.request(`/api/v1/connected-apps/${membersApp}`, { method: 'PATCH', body: { postsNeedApproval: false } });
    expect(own.status, own.text).toBe(200);
    expect(own.json.postsNeedApproval).toBe(false);
    const byOwner = await owner.request(`/api/v1/connected-apps/${membersApp}`, { method: 'PATCH', body: { postsNeedApproval: true } });
    expect(byOwner.status, byOwner.text).toBe(200);
    expect((await rows(membersApp)).connections).toEqual([true]);
  });

  it('answers NOT_FOUND for another workspace’s connection and for one that does not exist, changing nothing', async () => {
    for (const id of [elsewhere, 'no-such-connection']) {
      for (const [method, body] of [['PATCH', { postsNeedApproval: false }], ['DELETE', undefined]] as const) {
        const answer = await owner.request(`/api/v1/connected-apps/${id}`, { method, body });
        expect(answer.status, `${method} ${id}: ${answer.text}`).toBe(404);
        expect(answer.json.code).toBe('NOT_FOUND');
      }
    }
    expect(await rows(elsewhere)).toEqual({ connections: [true], artifacts: ['AccessToken'] });
  });

  it('is internal: an API key, and a connected app itself, get the generic 404', async () => {
    for (const [method, path, body] of [
      ['GET', '/connected-apps', undefined],
      ['PATCH', `/connected-apps/${ownersMcp}`, { postsNeedApproval: false }],
      ['DELETE', `/connected-apps/${ownersMcp}`, undefined],
    ] as const) {
      const answer = await call(`${service.api}${path}`, { method, key: ws.apiKey, body });
      expect(answer.status, `${method} ${path}`).toBe(404);
      expect(answer.json).toEqual({ code: 'NOT_FOUND', message: expect.any(String) });
    }
    // A connected app's own calls, through the pipeline every surface uses (no OAuth client flow here).
    const run = (operationId: string, args: Record<string, unknown> = {}) => asApp(ownersMcp, operationId, args);
    for (const [operationId, args] of [['listConnectedApps', {}], ['revokeConnectedApp', { id: ownersMcp }], ['updateConnectedApp', { id: ownersMcp, postsNeedApproval: false }]] as const) {
      const answer = await run(operationId, args);
      expect(answer, operationId).toMatchObject({ ok: false, status: 404, body: { code: 'NOT_FOUND' } });
    }
    expect(await rows(ownersMcp)).toEqual({ connections: [true], artifacts: ['AccessToken'] });

    // A public call of the app is its last use, on the list once the usage batch is written.
    const before = Date.parse((await owner.request('/api/v1/connected-apps')).json.items.find((item: { id: string }) => item.id === ownersMcp).lastUsedAt);
    expect((await run('getCurrentUser')).ok).toBe(true);
    await eventually(
      async () => Date.parse((await owner.request('/api/v1/connected-apps')).json.items.find((item: { id: string }) => item.id === ownersMcp).lastUsedAt),
      (lastUsed) => lastUsed > before,
    );
  });

  it('disconnects: the row and every code and token of it are deleted; a second disconnect finds nothing', async () => {
    const db = sql();
    await db`
      INSERT INTO oauth_artifacts (id_hash, kind, connection_id, payload, expires_at)
      VALUES (${randomBytes(32)}, 'RefreshToken', ${ownersMcp}, ${db.json({ grantId: ownersMcp })}, now() + interval '30 days')`;
    expect((await rows(ownersMcp)).artifacts.sort()).toEqual(['AccessToken', 'RefreshToken']);

    const revoked = await owner.request(`/api/v1/connected-apps/${ownersMcp}`, { method: 'DELETE' });
    expect(revoked.status, revoked.text).toBe(200);
    expect(revoked.json).toEqual({ success: true });
    expect(await rows(ownersMcp)).toEqual({ connections: [], artifacts: [] });
    const [left] = await db<{ count: number }[]>`SELECT count(*)::int AS count FROM oauth_artifacts WHERE connection_id = ${ownersMcp}`;
    expect(left!.count).toBe(0);
    expect((await owner.request('/api/v1/connected-apps')).json.items.map((app: { id: string }) => app.id)).toEqual([membersApp, ownersApi]);
    // The others' tokens are untouched.
    expect((await rows(ownersApi)).artifacts).toEqual(['AccessToken']);

    const again = await owner.request(`/api/v1/connected-apps/${ownersMcp}`, { method: 'DELETE' });
    expect(again.status).toBe(404);

    // A member disconnects their own; the owner disconnects a member's.
    expect((await member.request(`/api/v1/connected-apps/${membersApp}`, { method: 'DELETE' })).status).toBe(200);
    expect(await rows(membersApp)).toEqual({ connections: [], artifacts: [] });
    const theirs = await connect({ workspaceId: ws.workspaceId, userId: memberId, clientName: 'Another', resource: 'mcp', scopes: ['posts:read'], createdAt: new Date() });
    expect((await owner.request(`/api/v1/connected-apps/${theirs}`, { method: 'DELETE' })).status).toBe(200);
    expect(await rows(theirs)).toEqual({ connections: [], artifacts: [] });
  });

  it('is the admin command’s too: list-apps, update-app --no-approval, disconnect-app', async () => {
    const env = { DATABASE_URL: service.databaseUrl };
    const id = await connect({ workspaceId: ws.workspaceId, userId: memberId, clientName: 'By command', resource: 'mcp', scopes: ['posts:read'], createdAt: new Date() });
    const listed = await admin(['list-apps', '--workspace', ws.workspaceId, '--limit', '1'], env);
    expect(listed).toMatchObject({ code: 0, json: { items: [{ id, appName: 'By command', postsNeedApproval: true, createdBy: { name: 'Grace Hopper' } }] } });
    const changed = await admin(['update-app', '--workspace', ws.workspaceId, '--app', id, '--no-approval'], env);
    expect(changed).toMatchObject({ code: 0, json: { id, postsNeedApproval: false } });
    expect(await admin(['disconnect-app', '--workspace', ws.workspaceId, '--app', id], env)).toEqual({ code: 0, json: { success: true } });
    expect(await rows(id)).toEqual({ connections: [], artifacts: [] });
  }, 60_000);
});
