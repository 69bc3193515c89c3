import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import postgres from 'postgres';
import { call, startTestService, type TestService, type Workspace } from './support/service.js';

let service: TestService;
let owner: Workspace;
let other: Workspace;

beforeAll(async () => {
  service = await startTestService();
  owner = await service.workspace();
  other = await service.workspace();
});
afterAll(() => service?.stop());

const me = (key?: string) => call(`${service.api}/users/me`, { key });

describe('API keys', () => {
  it('answers 401 UNAUTHORIZED to a missing, malformed or unknown key', async () => {
    for (const key of [undefined, '', 'not-a-key', `${owner.apiKey.slice(0, -4)}zzzz`, `pw_${'A'.repeat(43)}`]) {
      const answer = await me(key);
      expect(answer.status, `key ${JSON.stringify(key)}`).toBe(401);
      expect(answer.json).toEqual({ code: 'UNAUTHORIZED', message: expect.any(String) });
    }
  });

  it('stores only the SHA-256 of a key, never the key', async () => {
    const db = postgres(service.databaseUrl, { max: 1 });
    const rows = await db`SELECT * FROM api_keys`;
    await db.end();
    const stored = JSON.stringify(rows);
    expect(stored).not.toContain(owner.apiKey);
    expect(stored).not.toContain(owner.apiKey.slice(12));
    expect(rows.every((row) => Buffer.isBuffer(row.key_hash) && row.key_hash.length === 32)).toBe(true);
  });

  it('binds a key to its user and workspace', async () => {
    expect((await me(owner.apiKey)).json.id).toBe(owner.userId);
    expect((await me(other.apiKey)).json.id).toBe(other.userId);
  });

  it('stops a revoked key on the very next request', async () => {
    const created = await owner.admin('createApiKey', { name: 'to revoke' });
    expect(created.key).toMatch(/^pw_[A-Za-z0-9_-]{43}$/);
    expect((await me(created.key)).status).toBe(200);
    await owner.admin('revokeApiKey', { id: created.id });
    expect((await me(created.key)).status).toBe(401);
    expect((await me(owner.apiKey)).status).toBe(200);
  });

  it('stops a key at its expiry', async () => {
    const expiresAt = Date.now() + 4000;
    const created = await owner.admin('createApiKey', { name: 'short-lived', expiresAt: new Date(expiresAt).toISOString() });
    expect(created.expiresAt).not.toBeNull();
    expect((await me(created.key)).status).toBe(200);
    await new Promise((resolve) => setTimeout(resolve, expiresAt - Date.now() + 100));
    expect((await me(created.key)).status).toBe(401);
  });

  it('answers each of many concurrent calls for its own key, though their lookups share queries', async () => {
    const revoked = await owner.admin('createApiKey', { name: 'revoked at once' });
    await owner.admin('revokeApiKey', { id: revoked.id });
    const keys = [owner.apiKey, other.apiKey, revoked.key, `pw_${'B'.repeat(43)}`, owner.apiKey];
    const expected = [owner.userId, other.userId, 401, 401, owner.userId];
    const answers = await Promise.all(Array.from({ length: 40 }, (_, i) => me(keys[i % keys.length])));
    answers.forEach((answer, i) => {
      const want = expected[i % keys.length];
      if (want === 401) expect(answer.status).toBe(401);
      else expect(answer.json.id).toBe(want);
    });
  });

  it('refuses an expiry in the past', async () => {
    await expect(owner.admin('createApiKey', { expiresAt: '2020-01-01T00:00:00Z' })).rejects.toThrow(/VALIDATION_ERROR.*expiresAt/);
  });

  it('lists every key once across pages, newest first, even keys made in the same transaction', async () => {
    const fresh = await service.workspace();
    await service.service.core.db.begin(async (tx) => {
      for (let i = 0; i < 5; i++) {
        await tx`INSERT INTO api_keys (organization_id, user_id, name, prefix, key_hash)
          VALUES (${fresh.workspaceId}, ${fresh.userId}, ${`k${i}`}, 'pw_x', ${Buffer.from(`hash-${fresh.workspaceId}-${i}`)})`;
      }
    });
    const names: string[] = [];
    let cursor: string | undefined;
    do {
      const page = await fresh.admin('listApiKeys', { limit: 2, cursor });
      names.push(...page.items.map((item: { name: string }) => item.name));
      cursor = page.nextCursor ?? undefined;
    } while (cursor);
    expect(names).toHaveLength(6);
    expect(new Set(names)).toEqual(new Set(['First key', 'k0', 'k1', 'k2', 'k3', 'k4']));
  });

  it('shows a key once: listing keys gives prefixes, never the key', async () => {
    const listed = await owner.admin('listApiKeys');
    expect(listed.items.length).toBeGreaterThanOrEqual(1);
    expect(JSON.stringify(listed)).not.toContain(owner.apiKey);
    expect(listed.items.every((item: { prefix: string; key?: string }) => owner.apiKey.startsWith(item.prefix) || item.key === undefined)).toBe(true);
  });

  it('revokes the keys of a member removed from the workspace', async () => {
    const member = await owner.admin('addMember', { email: 'Member@Example.com', name: 'Mem' });
    expect(member.user.email).toBe('member@example.com');
    // A key of the member's own, made as the admin command does with --user.
    const key = await service.service.core.runAs({ userId: member.userId, workspaceId: owner.workspaceId }, 'createApiKey', { name: 'member key' });
    const memberKey = (key.body as { key: string }).key;
    expect((await me(memberKey)).json.id).toBe(member.userId);

    expect(await owner.admin('removeMember', { userId: member.userId })).toEqual({ success: true });
    expect((await me(memberKey)).status).toBe(401);
    const keys = await owner.admin('listApiKeys');
    expect(keys.items.find((item: { userId: string }) => item.userId === member.userId).revokedAt).not.toBeNull();
  });

  it('does not remove the owner', async () => {
    await expect(owner.admin('removeMember', { userId: owner.userId })).rejects.toThrow(/CONFLICT/);
    expect((await me(owner.apiKey)).status).toBe(200);
  });
});

describe('the 404 rule', () => {
  it('answers an internal operation exactly as an unknown path, never 403', async () => {
    const unknown = await call(`${service.api}/no-such-thing`, { key: owner.apiKey });
    expect(unknown.status).toBe(404);
    expect(unknown.json).toEqual({ code: 'NOT_FOUND', message: expect.any(String) });
    const internal = [
      await call(`${service.api}/api-keys`, { key: owner.apiKey }),
      await call(`${service.api}/api-keys`, { method: 'POST', key: owner.apiKey, body: { name: 'a key from a key' } }),
      await call(`${service.api}/tags`, { method: 'POST', key: owner.apiKey, body: { name: 'x' } }),
      await call(`${service.api}/members`, { method: 'POST', key: owner.apiKey, body: { email: 'x@example.com' } }),
      await call(`${service.api}/members/${owner.userId}`, { method: 'DELETE', key: owner.apiKey, body: {} }),
      await call(`${service.api}/users/me`, { method: 'DELETE', key: owner.apiKey }),
    ];
    for (const answer of internal) {
      expect(answer.status).toBe(404);
      expect(answer.text).toBe(unknown.text);
      expect(answer.headers.get('content-type')).toBe(unknown.headers.get('content-type'));
    }
    // And nothing was created by those calls: a key cannot create keys.
    expect((await owner.admin('listApiKeys')).items.some((item: { name: string }) => item.name === 'a key from a key')).toBe(false);
  });

  it('answers a row of another workspace exactly as a row that does not exist', async () => {
    const theirs = await other.admin('createTag', { name: 'Theirs' });
    const foreign = await call(`${service.api}/tags/${theirs.id}`, { key: owner.apiKey });
    const missing = await call(`${service.api}/tags/00000000-0000-4000-8000-000000000000`, { key: owner.apiKey });
    expect(foreign.status).toBe(404);
    expect(foreign.text).toBe(missing.text);
    expect((await call(`${service.api}/tags/${theirs.id}`, { key: other.apiKey })).json.name).toBe('Theirs');
    const listed = await call(`${service.api}/tags`, { key: owner.apiKey });
    expect(listed.json.items.map((tag: { id: string }) => tag.id)).not.toContain(theirs.id);
  });

  it('asks for a key before anything else, so nothing about paths leaks without one', async () => {
    const first = await call(`${service.api}/no-such-thing`);
    for (const path of ['/no-such-thing', '/api-keys', '/users/me', '/tags/%E0', '/api-keys/%E0', '/nope/%E0']) {
      for (const method of ['GET', 'DELETE']) {
        const answer = await call(`${service.api}${path}`, { method });
        expect(answer.status, `${method} ${path}`).toBe(401);
        expect(answer.text).toBe(first.text);
      }
    }
  });

  it('answers a path that does not decode with the generic 404, whichever route it resembles', async () => {
    const unknown = await call(`${service.api}/no-such-thing`, { key: owner.apiKey });
    for (const path of ['/tags/%E0', '/api-keys/%E0', '/nope/%E0']) {
      const answer = await call(`${service.api}${path}`, { method: 'DELETE', key: owner.apiKey });
      expect(answer.status, path).toBe(404);
      expect(answer.text).toBe(unknown.text);
    }
  });
});
