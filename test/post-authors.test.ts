import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import postgres from 'postgres';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { signedIn, type HttpSession } from './support/http-session.js';
import { call, startTestService, type TestService, type Workspace } from './support/service.js';

/**
 * A post's `createdBy` (migration 027): the API key it was written with, by name (its current one, kept through a
 * revocation, and the one it had then once the key's row is gone), or the member who wrote it; null for posts written
 * before it was recorded. The same over REST, MCP, the approvals queue and the events.
 */
let service: TestService;
let ws: Workspace;
let owner: HttpSession;
let sql: postgres.Sql;
let channel: string;

beforeAll(async () => {
  service = await startTestService();
  ws = await service.workspace({ ownerName: 'Grace Hopper', plan: 'business' });
  owner = await signedIn(service, ws.workspaceId, ws.userId);
  sql = postgres(service.databaseUrl, { max: 2, onnotice: () => {} });
  channel = (await ws.admin('createIntegration', { platform: 'BLUESKY', name: 'Sky' })).id;
});
afterAll(async () => {
  await sql?.end();
  await service?.stop();
});

const draft = (content: string) => ({ rows: [{ content }], shared: { selectedIntegrations: [channel] }, postAction: 'DRAFT' });

async function newKey(name: string, postsNeedApproval = false): Promise<{ id: string; key: string }> {
  const created = await owner.request('/api/v1/api-keys', { method: 'POST', body: { name, postsNeedApproval } });
  expect(created.status, created.text).toBe(201);
  return created.json;
}

async function writeWith(key: string, body: unknown): Promise<string> {
  const created = await call(`${service.api}/posts`, { method: 'POST', key, body });
  expect(created.status, created.text).toBe(201);
  return created.json.postId;
}

const read = async (postId: string) => (await call(`${service.api}/posts/${postId}`, { key: ws.apiKey })).json;

it('names the key a post was written with, over REST and MCP; a member\'s post names the member', async () => {
  const agent = await newKey('agent-1');
  const byKey = await writeWith(agent.key, draft('Written by an agent.'));
  expect((await read(byKey)).createdBy).toEqual({ kind: 'key', name: 'agent-1', apiKeyId: agent.id });

  const inDashboard = await owner.request('/api/v1/posts', { method: 'POST', body: draft('Written in the dashboard.') });
  expect(inDashboard.status, inDashboard.text).toBe(201);
  expect((await read(inDashboard.json.postId)).createdBy).toEqual({ kind: 'member', name: 'Grace Hopper', apiKeyId: null });
  const byAdmin = await ws.admin('createPost', draft('Written with the admin command.'));
  expect((await read(byAdmin.postId)).createdBy).toEqual({ kind: 'member', name: 'Grace Hopper', apiKeyId: null });

  const mcp = new Client({ name: 'test', version: '1.0.0' });
  await mcp.connect(new StreamableHTTPClientTransport(new URL(`${service.base}/mcp`), { requestInit: { headers: { 'x-api-key': agent.key } } }));
  try {
    const created = await mcp.callTool({ name: 'createPost', arguments: draft('Written by an agent over MCP.') });
    expect(created.isError, JSON.stringify(created)).toBeFalsy();
    const { postId } = created.structuredContent as { postId: string };
    const got = await mcp.callTool({ name: 'getPost', arguments: { id: postId } });
    expect((got.structuredContent as { createdBy: unknown }).createdBy).toEqual({ kind: 'key', name: 'agent-1', apiKeyId: agent.id });
  } finally {
    await mcp.close();
  }
  // The duplicate of the key's post is the member's own (who made the copy).
  const copy = await owner.request(`/api/v1/posts/${byKey}/duplicate`, { method: 'POST', body: {} });
  expect(copy.status, copy.text).toBe(201);
  expect((await read(copy.json.postId)).createdBy).toEqual({ kind: 'member', name: 'Grace Hopper', apiKeyId: null });
});

it('follows a renamed key, keeps naming a revoked one, and names a key whose row is gone by the name it had', async () => {
  const agent = await newKey('agent-2');
  const postId = await writeWith(agent.key, draft('Kept by name.'));
  expect((await read(postId)).createdBy.name).toBe('agent-2'); // rendered now, and kept (src/registry/render-cache.ts)
  // Using the key writes its last use (its row changes): the post is still the same.
  await call(`${service.api}/users/me`, { key: agent.key });

  expect((await owner.request(`/api/v1/api-keys/${agent.id}`, { method: 'PATCH', body: { name: 'Research agent' } })).status).toBe(200);
  expect((await read(postId)).createdBy).toEqual({ kind: 'key', name: 'Research agent', apiKeyId: agent.id });
  expect((await owner.request(`/api/v1/api-keys/${agent.id}`, { method: 'DELETE', body: {} })).status).toBe(200);
  expect((await read(postId)).createdBy).toEqual({ kind: 'key', name: 'Research agent', apiKeyId: agent.id });

  // No operation deletes a key; its row goes with its member's user (ON DELETE CASCADE), or by hand.
  await sql`DELETE FROM api_keys WHERE id = ${agent.id}`;
  expect((await read(postId)).createdBy).toEqual({ kind: 'key', name: 'agent-2', apiKeyId: null });
});

it('is null for a post written before Postwise recorded it', async () => {
  const [legacy] = await sql<{ id: string }[]>`
    INSERT INTO posts (organization_id, user_id, content) VALUES (${ws.workspaceId}, ${ws.userId}, 'Written before migration 027') RETURNING id`;
  const post = await read(legacy!.id);
  expect(post.createdBy).toBeNull();
  expect(post.user).toMatchObject({ id: ws.userId, name: 'Grace Hopper' });
});

it('the approvals queue and the post.created event carry it', async () => {
  const agent = await newKey('agent-3', true);
  const inADay = new Date(Date.now() + 86_400_000).toISOString();
  const postId = await writeWith(agent.key, {
    rows: [{ content: 'Held for a person.', scheduledAt: inADay }],
    shared: { selectedIntegrations: [channel] },
    postAction: 'SCHEDULED_TIME',
  });
  const queue = await owner.request('/api/v1/approvals');
  expect(queue.json.items.find((item: { id: string }) => item.id === postId).createdBy).toEqual({ kind: 'key', name: 'agent-3', apiKeyId: agent.id });
  const events = await call(`${service.api}/events?type=post.created&resourceId=${postId}`, { key: ws.apiKey });
  expect(events.status, events.text).toBe(200);
  expect(events.json.items[0].data.createdBy).toEqual({ kind: 'key', name: 'agent-3', apiKeyId: agent.id });
});
