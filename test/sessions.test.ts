import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAccountLink, firstRunSetupLink, SIGN_IN_LIMITS } from '../src/auth/sessions.js';
import { HttpSession, PASSWORD } from './support/http-session.js';
import { admin } from './support/processes.js';
import { call, eventually, startTestService, type TestService, type Workspace } from './support/service.js';

let service: TestService;
let sql: postgres.Sql;

beforeAll(async () => {
  service = await startTestService();
  sql = postgres(service.databaseUrl, { max: 2, onnotice: () => {}, transform: postgres.camel });
});
afterAll(async () => {
  await sql?.end();
  await service?.stop();
});

/** A browser on the service, or sending another origin. */
class Browser extends HttpSession {
  constructor(origin = service.base) {
    super(service.base, origin);
  }
}

/** A workspace whose owner has a password, through the first-run link as a new user sets it. */
async function ownerWithPassword(): Promise<Workspace & { email: string }> {
  const ws = await service.workspace();
  const [owner] = await sql<{ email: string }[]>`SELECT email FROM users WHERE id = ${ws.userId}`;
  const link = await createAccountLink(service.service.core.db, service.base, { purpose: 'setup', workspaceId: ws.workspaceId, userId: ws.userId, email: owner!.email });
  const answer = await new Browser().request('/auth/setup', { method: 'POST', body: { token: new URL(link.url).searchParams.get('token'), password: PASSWORD } });
  expect(answer.status).toBe(200);
  return { ...ws, email: owner!.email };
}

describe('first-run setup', () => {
  it('prints a one-time link while nobody has a password; the link sets the owner\'s name, email and password, signs in, and works once', async () => {
    const fresh = await startTestService();
    try {
      const ws = await fresh.workspace();
      const url = await firstRunSetupLink(fresh.service.core.db, fresh.base);
      expect(url).toMatch(new RegExp(`^${fresh.base}/setup\\?token=[A-Za-z0-9_-]{43}$`));
      // A second start withdraws the first link: only the last one printed works.
      const again = (await firstRunSetupLink(fresh.service.core.db, fresh.base))!;
      const token = new URL(again).searchParams.get('token')!;
      const old = new URL(url!).searchParams.get('token')!;
      expect((await call(`${fresh.base}/auth/setup?token=${old}`)).json.code).toBe('INVALID_LINK');

      const shown = await call(`${fresh.base}/auth/setup?token=${token}`);
      expect(shown.status).toBe(200);
      // The first start's made-up email is not offered: setup is where the owner gives theirs.
      expect(shown.json).toEqual({ name: 'Owner', email: '', workspaceName: 'My workspace' });

      const tooShort = await call(`${fresh.base}/auth/setup`, { method: 'POST', body: { token, password: 'short' } });
      expect(tooShort).toMatchObject({ status: 400, json: { code: 'VALIDATION_ERROR', message: 'password: must be at least 12 characters long' } });
      const badEmail = await call(`${fresh.base}/auth/setup`, { method: 'POST', body: { token, password: 'short', email: 'nope', name: ' ' } });
      expect(badEmail.json.message).toBe('email: must be an email address; password: must be at least 12 characters long');

      const set = await call(`${fresh.base}/auth/setup`, { method: 'POST', body: { token, password: PASSWORD, name: 'Ada', email: 'Ada@Example.org' } });
      expect(set.status).toBe(200);
      expect(set.json).toMatchObject({ user: { id: ws.userId, name: 'Ada', email: 'ada@example.org' }, role: 'owner', workspace: { id: ws.workspaceId } });
      const cookie = set.headers.get('set-cookie')!;
      expect(cookie).toMatch(/^postwise_session=[A-Za-z0-9_-]{43}; Path=\/; HttpOnly; SameSite=Lax$/);

      const reused = await call(`${fresh.base}/auth/setup`, { method: 'POST', body: { token, password: PASSWORD } });
      expect(reused).toMatchObject({ status: 400, json: { code: 'INVALID_LINK' } });
      // Somebody has a password now: no more links at start.
      expect(await firstRunSetupLink(fresh.service.core.db, fresh.base)).toBeNull();
      // The password is stored as scrypt, never as given.
      const [user] = await fresh.service.core.db<{ passwordHash: string }[]>`SELECT password_hash FROM users WHERE id = ${ws.userId}`;
      expect(user!.passwordHash).toMatch(/^scrypt\$32768\$8\$3\$[A-Za-z0-9_-]{22}\$[A-Za-z0-9_-]{43}$/);
      expect(user!.passwordHash).not.toContain(PASSWORD);
    } finally {
      await fresh.stop();
    }
  }, 60_000);
});

describe('sign-in', () => {
  it('refuses a wrong password and an unknown email alike, then signs in with a fresh session id', async () => {
    const ws = await ownerWithPassword();
    const browser = new Browser();
    const wrong = await browser.signIn(ws.email, 'not the password at all');
    const unknown = await browser.signIn('nobody@example.org', 'not the password at all');
    expect(wrong).toMatchObject({ status: 401, json: { code: 'INVALID_CREDENTIALS', message: 'The email or password is not right' } });
    expect(unknown.json).toEqual(wrong.json);
    expect(browser.cookie).toBeUndefined();

    // A cookie planted before sign-in is not the one after it.
    browser.cookie = 'postwise_session=' + 'a'.repeat(43);
    const right = await browser.signIn(ws.email.toUpperCase());
    expect(right.status).toBe(200);
    expect(browser.cookie).not.toBe('postwise_session=' + 'a'.repeat(43));
    expect(right.json).toMatchObject({ user: { id: ws.userId }, workspace: { id: ws.workspaceId }, role: 'owner', csrfToken: expect.any(String) });
    expect((await browser.request('/auth/session')).json.user.id).toBe(ws.userId);
    // Only the hash of the id is stored.
    const id = browser.cookie!.split('=')[1]!;
    expect(await sql`SELECT 1 FROM sessions WHERE token_hash::text LIKE ${'%' + Buffer.from(id).toString('hex') + '%'}`).toHaveLength(0);
  });

  it('limits failures per account and address, answering an email that does not exist alike, with Retry-After', async () => {
    const ws = await ownerWithPassword();
    const attacker = new Browser();
    for (let i = 0; i < SIGN_IN_LIMITS.pair; i++) expect((await attacker.signIn(ws.email, `wrong ${i} password`)).status).toBe(401);
    const blocked = await attacker.signIn(ws.email);
    expect(blocked.status).toBe(429);
    expect(blocked.json).toEqual({ code: 'TOO_MANY_ATTEMPTS', message: 'Too many failed sign-ins; try again in 15 minutes' });
    expect(Number(blocked.headers.get('retry-after'))).toBeGreaterThan(800);

    for (let i = 0; i < SIGN_IN_LIMITS.pair; i++) await attacker.signIn('ghost@example.org', `wrong ${i} password`);
    expect((await attacker.signIn('ghost@example.org')).json).toEqual(blocked.json);

    // Per address too: many accounts tried from one address.
    await sql`INSERT INTO sign_in_failures (attempt, scope) SELECT gen_random_uuid(), 'address:127.0.0.1' FROM generate_series(1, ${SIGN_IN_LIMITS.address})`;
    const other = await ownerWithPassword();
    expect((await new Browser().signIn(other.email)).status).toBe(429);
    await sql`DELETE FROM sign_in_failures`;
    expect((await new Browser().signIn(other.email)).status).toBe(200);
  });

  it('counts a burst of concurrent guesses whole', async () => {
    const ws = await ownerWithPassword();
    const answers = await Promise.all(Array.from({ length: 30 }, (_, i) => new Browser().signIn(ws.email, `concurrent guess ${i}`)));
    const statuses = answers.map((answer) => answer.status);
    expect(statuses.filter((status) => status === 401).length).toBeLessThanOrEqual(SIGN_IN_LIMITS.pair);
    expect(statuses.filter((status) => status === 429).length).toBeGreaterThanOrEqual(30 - SIGN_IN_LIMITS.pair);
    await sql`DELETE FROM sign_in_failures`;
  });

  it('slows a guesser where they are without locking the owner out from elsewhere (behind a trusted proxy)', async () => {
    const ws = await ownerWithPassword();
    const proxied = await startTestService({ databaseUrl: service.databaseUrl, trustProxy: 'loopback' });
    try {
      const from = (address: string, password: string) =>
        call(`${proxied.base}/auth/login`, { method: 'POST', body: { email: ws.email, password }, headers: { 'x-forwarded-for': address } });
      for (let i = 0; i < SIGN_IN_LIMITS.pair; i++) expect((await from('203.0.113.9', `wrong ${i} password`)).status).toBe(401);
      expect((await from('203.0.113.9', PASSWORD)).status).toBe(429);
      expect((await from('198.51.100.7', PASSWORD)).status).toBe(200);
      const scopes = await sql<{ scope: string }[]>`SELECT DISTINCT scope FROM sign_in_failures ORDER BY scope`;
      expect(scopes.map((row) => row.scope)).toEqual([`account:${ws.email}`, 'address:203.0.113.9', `pair:${ws.email} 203.0.113.9`]);
    } finally {
      await proxied.stop();
      await sql`DELETE FROM sign_in_failures`;
    }
  });

  it('answers an email no account can have (a NUL, too long) as a wrong password, without an error', async () => {
    for (const email of ['a\u0000b@example.org', `${'x'.repeat(6000)}@example.org`, 'not an email']) {
      const answer = await new Browser().signIn(email);
      expect(answer).toMatchObject({ status: 401, json: { code: 'INVALID_CREDENTIALS' } });
    }
  });

  it('ends the session the browser had when it signs in again', async () => {
    const ws = await ownerWithPassword();
    const browser = new Browser();
    await browser.signIn(ws.email);
    const first = browser.cookie;
    await browser.signIn(ws.email);
    expect(browser.cookie).not.toBe(first);
    const old = new Browser();
    old.cookie = first;
    expect((await old.request('/api/v1/tags')).status).toBe(401);
    expect((await browser.request('/api/v1/tags')).status).toBe(200);
  });

  it('marks the cookie Secure when the request came over HTTPS through a proxy TRUST_PROXY names, and only then', async () => {
    const ws = await ownerWithPassword();
    const body = { email: ws.email, password: PASSWORD };
    const forwarded = { 'x-forwarded-proto': 'https', 'x-forwarded-host': new URL(service.base).host };
    // Not trusted: the header is anybody's to send, so it changes nothing (and the origin stays http://).
    const untrusted = await call(`${service.base}/auth/login`, { method: 'POST', body, headers: forwarded });
    expect(untrusted.headers.get('set-cookie')).not.toMatch(/Secure/);

    const proxied = await startTestService({ databaseUrl: service.databaseUrl, trustProxy: 'loopback' });
    try {
      const origin = `https://${new URL(proxied.base).host}`;
      const answer = await call(`${proxied.base}/auth/login`, { method: 'POST', body, headers: { ...forwarded, 'x-forwarded-host': new URL(proxied.base).host, origin } });
      expect(answer.status).toBe(200);
      expect(answer.headers.get('set-cookie')).toMatch(/; HttpOnly; Secure; SameSite=Lax$/);
    } finally {
      await proxied.stop();
    }
  });

  it('refuses a sign-in posted from another site', async () => {
    const ws = await ownerWithPassword();
    const answer = await new Browser('http://evil.example').signIn(ws.email);
    expect(answer).toMatchObject({ status: 403, json: { code: 'CSRF_REJECTED' } });
  });
});

describe('a session', () => {
  it('reaches internal operations, counts in the browser bucket, and is not counted as API usage', async () => {
    const ws = await ownerWithPassword();
    const browser = new Browser();
    await browser.signIn(ws.email);
    const keys = await browser.request('/api/v1/api-keys');
    expect(keys.status).toBe(200);
    expect(keys.headers.get('ratelimit-policy')).toMatch(/^"browser";q=\d+;w=60$/);
    const created = await browser.request('/api/v1/api-keys', { method: 'POST', body: { name: 'From the dashboard' } });
    expect(created.status).toBe(201);
    // The key's own call is API usage; the session's are not.
    expect((await call(`${service.api}/users/me`, { key: created.json.key })).status).toBe(200);
    const usage = await eventually(
      () => sql<{ apiKeyId: string }[]>`SELECT api_key_id FROM usage_events WHERE organization_id = ${ws.workspaceId}`,
      (rows) => rows.length > 0,
    );
    expect(usage.map((row) => row.apiKeyId)).toEqual([created.json.id]);
    const listed = await eventually(
      () => browser.request('/api/v1/api-keys'),
      (answer) => answer.json.items.some((key: { lastUsedAt: string | null }) => key.lastUsedAt),
    );
    expect(listed.json.items.find((key: { id: string }) => key.id === created.json.id)).toMatchObject({
      name: 'From the dashboard',
      status: 'active',
      createdBy: { id: ws.userId, name: 'Owner' },
      lastUsedAt: expect.any(String),
    });
  });

  it('refuses a state-changing request without its csrf token, from another origin, or marked cross-site, and does nothing', async () => {
    const ws = await ownerWithPassword();
    const browser = new Browser();
    await browser.signIn(ws.email);
    const before = await sql`SELECT id FROM api_keys WHERE organization_id = ${ws.workspaceId}`;
    const attempts: Record<string, string>[] = [
      { 'x-csrf-token': '' },
      { 'x-csrf-token': 'x'.repeat(43) },
      { origin: 'http://127.0.0.1:1' }, // same site (another port of this host), other origin
      { 'sec-fetch-site': 'same-site' },
      { 'sec-fetch-site': 'cross-site', origin: 'null' },
    ];
    for (const headers of attempts) {
      const answer = await browser.request('/api/v1/api-keys', { method: 'POST', body: { name: 'forged' }, headers });
      expect(answer, JSON.stringify(headers)).toMatchObject({ status: 403, json: { code: 'CSRF_REJECTED' } });
    }
    expect(await sql`SELECT id FROM api_keys WHERE organization_id = ${ws.workspaceId}`).toHaveLength(before.length);
    // Reading needs no token; an API key's call is not judged by origin at all.
    expect((await browser.request('/api/v1/api-keys', { headers: { origin: 'http://evil.example' } })).status).toBe(200);
    const byKey = await call(`${service.api}/posts`, {
      method: 'POST',
      key: ws.apiKey,
      headers: { origin: 'http://evil.example', 'sec-fetch-site': 'cross-site' },
      body: { type: 'draft', shortLink: false, date: new Date(Date.now() + 86_400_000).toISOString(), tags: [], posts: [] },
    });
    expect(byKey.json?.code).not.toBe('CSRF_REJECTED');
  });

  it('ends at sign-out, at once', async () => {
    const ws = await ownerWithPassword();
    const browser = new Browser();
    await browser.signIn(ws.email);
    const cookie = browser.cookie;
    expect((await browser.request('/auth/logout', { method: 'POST', headers: { 'x-csrf-token': 'wrong' } })).status).toBe(403);
    const out = await browser.request('/auth/logout', { method: 'POST' });
    expect(out.status).toBe(204);
    expect(out.headers.get('set-cookie')).toMatch(/^postwise_session=; Path=\/; Expires=Thu, 01 Jan 1970/);
    browser.cookie = cookie;
    expect((await browser.request('/api/v1/api-keys')).status).toBe(401);
    expect((await browser.request('/auth/session')).status).toBe(401);
  });

  it('ends after 12 idle hours and after 7 days whatever happens', async () => {
    const ws = await ownerWithPassword();
    const idle = new Browser();
    const old = new Browser();
    await idle.signIn(ws.email);
    await old.signIn(ws.email);
    const [a, b] = await sql<{ id: string }[]>`SELECT id FROM sessions WHERE user_id = ${ws.userId} ORDER BY created_at DESC LIMIT 2`;
    expect((await idle.request('/api/v1/api-keys')).status).toBe(200);
    await sql`UPDATE sessions SET last_seen_at = now() - interval '12 hours 1 minute' WHERE id = ${b!.id}`;
    await sql`UPDATE sessions SET created_at = now() - interval '8 days', expires_at = now() - interval '1 day' WHERE id = ${a!.id}`;
    expect((await idle.request('/api/v1/api-keys')).status).toBe(401);
    expect((await old.request('/api/v1/api-keys')).status).toBe(401);
  });

  it('of a removed member ends at once, with their keys', async () => {
    const ws = await ownerWithPassword();
    const owner = new Browser();
    await owner.signIn(ws.email);
    const invited = await owner.request('/api/v1/invitations', { method: 'POST', body: { email: 'Grace@Example.org' } });
    expect(invited.status).toBe(201);
    const member = new Browser();
    const token = new URL(invited.json.url).searchParams.get('token');
    await member.request('/auth/invitation', { method: 'POST', body: { token, name: 'Grace', password: PASSWORD } });
    const key = (await member.request('/api/v1/api-keys', { method: 'POST', body: { name: 'Grace\'s key' } })).json.key;
    // Managing members is the owner's: a member may not invite, nor remove anybody.
    const invite = await member.request('/api/v1/invitations', { method: 'POST', body: { email: 'eve@example.org' } });
    expect(invite.json).toEqual({ code: 'FORBIDDEN', message: 'Only the owner of this workspace may do this (invite a person to the workspace: a one-time link to hand them)' });
    expect(invite.status).toBe(403);
    expect((await member.request(`/api/v1/members/${ws.userId}`, { method: 'DELETE' })).json.code).toBe('FORBIDDEN');
    expect((await call(`${service.api}/users/me`, { key })).status).toBe(200);

    const removed = await owner.request(`/api/v1/members/${(await member.request('/auth/session')).json.user.id}`, { method: 'DELETE' });
    expect(removed.status).toBe(200);
    expect((await member.request('/api/v1/tags')).status).toBe(401);
    expect((await call(`${service.api}/users/me`, { key })).status).toBe(401);
    expect(await sql`SELECT 1 FROM sessions s JOIN users u ON u.id = s.user_id WHERE u.email = 'grace@example.org'`).toHaveLength(0);
  });
});

describe('invitations', () => {
  it('lists, withdraws and accepts: a new person sets a name and password; the link works once', async () => {
    const ws = await ownerWithPassword();
    const owner = new Browser();
    await owner.signIn(ws.email);
    const first = (await owner.request('/api/v1/invitations', { method: 'POST', body: { email: 'lin@example.org' } })).json;
    const second = (await owner.request('/api/v1/invitations', { method: 'POST', body: { email: 'max@example.org' } })).json;
    expect(first).toMatchObject({ email: 'lin@example.org', invitedBy: { id: ws.userId, name: 'Owner' }, url: expect.stringMatching(/\/invite\?token=/) });
    expect((await owner.request('/api/v1/invitations')).json.items.map((i: { id: string }) => i.id)).toEqual([second.id, first.id]);
    expect((await owner.request(`/api/v1/invitations/${second.id}`, { method: 'DELETE' })).status).toBe(200);
    expect((await owner.request('/api/v1/invitations')).json.items.map((i: { id: string }) => i.id)).toEqual([first.id]);
    const withdrawn = new URL(second.url).searchParams.get('token');
    expect((await call(`${service.base}/auth/invitation?token=${withdrawn}`)).json.code).toBe('INVALID_LINK');

    const token = new URL(first.url).searchParams.get('token');
    expect((await call(`${service.base}/auth/invitation?token=${token}`)).json).toEqual({
      email: 'lin@example.org',
      workspaceName: 'My workspace',
      invitedBy: 'Owner',
      hasPassword: false,
    });
    const lin = new Browser();
    const accepted = await lin.request('/auth/invitation', { method: 'POST', body: { token, name: 'Lin', password: PASSWORD } });
    expect(accepted.json).toMatchObject({ user: { name: 'Lin', email: 'lin@example.org' }, role: 'member', workspace: { id: ws.workspaceId } });
    expect((await lin.request('/auth/invitation', { method: 'POST', body: { token, name: 'Lin', password: PASSWORD } })).json.code).toBe('INVALID_LINK');
    const members = (await owner.request('/api/v1/members')).json.items;
    expect(members.map((m: { role: string; user: { email: string } }) => [m.role, m.user.email])).toEqual([
      ['owner', ws.email],
      ['member', 'lin@example.org'],
    ]);
    // Inviting a member again is a conflict; and a key never reaches invitations.
    expect((await owner.request('/api/v1/invitations', { method: 'POST', body: { email: 'lin@example.org' } })).json.code).toBe('CONFLICT');
    expect((await call(`${service.api}/invitations`, { key: ws.apiKey })).status).toBe(404);
  });

  it('asks somebody who already has a password for it, and adds them to the workspace', async () => {
    const other = await ownerWithPassword();
    const ws = await ownerWithPassword();
    const owner = new Browser();
    await owner.signIn(ws.email);
    const invite = (await owner.request('/api/v1/invitations', { method: 'POST', body: { email: other.email } })).json;
    const token = new URL(invite.url).searchParams.get('token');
    expect((await call(`${service.base}/auth/invitation?token=${token}`)).json.hasPassword).toBe(true);
    const them = new Browser();
    expect((await them.request('/auth/invitation', { method: 'POST', body: { token, name: 'X', password: 'not their password' } })).json.code).toBe(
      'INVALID_CREDENTIALS',
    );
    const joined = await them.request('/auth/invitation', { method: 'POST', body: { token, name: 'X', password: PASSWORD } });
    expect(joined.json).toMatchObject({ user: { id: other.userId, name: 'Owner' }, workspace: { id: ws.workspaceId }, role: 'member' });
  });
});

describe('invitations cannot take over an account', () => {
  it('refuses to claim an account that has no password yet (made by add-member, or another workspace\'s owner)', async () => {
    const victim = await service.workspace({ ownerEmail: `victim-${Date.now()}@example.org` });
    const ws = await ownerWithPassword();
    const owner = new Browser();
    await owner.signIn(ws.email);
    const [victimOwner] = await sql<{ email: string; name: string }[]>`SELECT email, name FROM users WHERE id = ${victim.userId}`;
    const invite = (await owner.request('/api/v1/invitations', { method: 'POST', body: { email: victimOwner!.email } })).json;
    const token = new URL(invite.url).searchParams.get('token');
    const claim = await call(`${service.base}/auth/invitation`, { method: 'POST', body: { token, name: 'pwned', password: 'attacker chosen password' } });
    expect(claim).toMatchObject({ status: 400, json: { code: 'INVALID_LINK', message: expect.stringContaining('set-password') } });
    const [after] = await sql<{ passwordHash: string | null; name: string }[]>`SELECT password_hash, name FROM users WHERE id = ${victim.userId}`;
    expect(after).toEqual({ passwordHash: null, name: victimOwner!.name });
    expect(await sql`SELECT 1 FROM memberships WHERE user_id = ${victim.userId} AND organization_id = ${ws.workspaceId}`).toHaveLength(0);
  });

  it('checks an existing account\'s password under the sign-in limits', async () => {
    const other = await ownerWithPassword();
    const ws = await ownerWithPassword();
    const owner = new Browser();
    await owner.signIn(ws.email);
    const invite = (await owner.request('/api/v1/invitations', { method: 'POST', body: { email: other.email } })).json;
    const token = new URL(invite.url).searchParams.get('token');
    const guess = (password: string) => call(`${service.base}/auth/invitation`, { method: 'POST', body: { token, password } });
    for (let i = 0; i < SIGN_IN_LIMITS.pair; i++) expect((await guess(`guess number ${i}`)).status).toBe(401);
    expect((await guess(PASSWORD)).json.code).toBe('TOO_MANY_ATTEMPTS');
    await sql`DELETE FROM sign_in_failures`;
  });
});

describe('what a member may do', () => {
  it('revokes their own keys only, may not change the workspace, and a removed member\'s open invitations go with them', async () => {
    const ws = await ownerWithPassword();
    const owner = new Browser();
    await owner.signIn(ws.email);
    const email = `kim-${Date.now()}@example.org`;
    const first = (await owner.request('/api/v1/invitations', { method: 'POST', body: { email } })).json;
    const second = (await owner.request('/api/v1/invitations', { method: 'POST', body: { email } })).json;
    const member = new Browser();
    await member.request('/auth/invitation', { method: 'POST', body: { token: new URL(first.url).searchParams.get('token'), name: 'Kim', password: PASSWORD } });
    // Accepting one spends the other.
    expect((await call(`${service.base}/auth/invitation?token=${new URL(second.url).searchParams.get('token')}`)).json.code).toBe('INVALID_LINK');

    const [ownerKey] = await sql<{ id: string }[]>`SELECT id FROM api_keys WHERE user_id = ${ws.userId}`;
    const refused = await member.request(`/api/v1/api-keys/${ownerKey!.id}`, { method: 'DELETE' });
    expect(refused).toMatchObject({ status: 403, json: { code: 'FORBIDDEN', message: 'Only the owner of this workspace may revoke another member\'s key' } });
    expect((await call(`${service.api}/users/me`, { key: ws.apiKey })).status).toBe(200);
    const own = (await member.request('/api/v1/api-keys', { method: 'POST', body: { name: 'mine' } })).json;
    expect((await member.request(`/api/v1/api-keys/${own.id}`, { method: 'DELETE' })).status).toBe(200);
    expect((await member.request('/api/v1/workspace/settings', { method: 'PATCH', body: { name: 'Renamed' } })).json.code).toBe('FORBIDDEN');

    const third = (await owner.request('/api/v1/invitations', { method: 'POST', body: { email: 'someone-else@example.org' } })).json;
    const kimId = (await member.request('/auth/session')).json.user.id;
    const again = (await sql<{ id: string }[]>`
      INSERT INTO account_links (purpose, token_hash, organization_id, email, expires_at)
      VALUES ('invite', sha256(gen_random_uuid()::text::bytea), ${ws.workspaceId}, ${email}, now() + interval '1 day') RETURNING id`)[0]!;
    expect((await owner.request(`/api/v1/members/${kimId}`, { method: 'DELETE' })).status).toBe(200);
    const open = (await owner.request('/api/v1/invitations')).json.items.map((i: { id: string }) => i.id);
    expect(open).toContain(third.id);
    expect(open).not.toContain(again.id);
  });

  it('add-member creates new people only: an existing account is invited instead, and its name not shown', async () => {
    const other = await ownerWithPassword();
    const ws = await service.workspace();
    await expect(ws.admin('addMember', { email: other.email })).rejects.toThrow(/has an account already: invite them/);
    expect(await ws.admin('addMember', { email: `new-${Date.now()}@example.org`, name: 'New' })).toMatchObject({ role: 'member', user: { name: 'New' } });
  });
});

describe('set-password', () => {
  it('sets a member\'s password from a pipe and ends their sessions', async () => {
    const ws = await ownerWithPassword();
    const browser = new Browser();
    await browser.signIn(ws.email);
    const env = { DATABASE_URL: service.databaseUrl };
    const short = await admin(['set-password', '--workspace', ws.workspaceId, '--email', ws.email], env, { input: 'short\n' });
    expect(short).toEqual({ code: 1, json: { code: 'VALIDATION_ERROR', message: 'The password must be at least 12 characters long' } });
    const set = await admin(['set-password', '--workspace', ws.workspaceId, '--email', ws.email.toUpperCase()], env, { input: 'a new long password\n' });
    expect(set).toEqual({ code: 0, json: { userId: ws.userId, email: ws.email, passwordSet: true } });
    expect((await browser.request('/api/v1/api-keys')).status).toBe(401);
    expect((await new Browser().signIn(ws.email, 'a new long password')).status).toBe(200);
    const stranger = await admin(['set-password', '--workspace', ws.workspaceId, '--email', 'nobody@example.org'], env, { input: 'a new long password\n' });
    expect(stranger).toEqual({ code: 1, json: { code: 'NOT_FOUND', message: 'nobody@example.org is not a member of that workspace' } });
  }, 60_000);
});

describe('GET /workspace and GET /usage/daily', () => {
  it('answer the settings, the plan with this month\'s quotas and storage, and the calls per day', async () => {
    const ws = await ownerWithPassword();
    const browser = new Browser();
    await browser.signIn(ws.email);
    const renamed = await browser.request('/api/v1/workspace/settings', { method: 'PATCH', body: { name: 'Acme' } });
    expect(renamed.json).toMatchObject({ name: 'Acme', timeZone: 'UTC' });
    const workspace = (await browser.request('/api/v1/workspace')).json;
    expect(workspace).toMatchObject({
      id: ws.workspaceId,
      name: 'Acme',
      plan: { name: 'free', rateLimitPerMinute: expect.any(Number), storageBytes: expect.any(Number) },
      subscription: 'active',
      storage: { usedBytes: 0, allowanceBytes: workspace.plan.storageBytes },
    });
    expect(workspace.quotas.map((q: { platform: string; used: number }) => [q.platform, q.used])).toEqual([
      ['BLUESKY', 0],
      ['LINKEDIN', 0],
      ['MASTODON', 0],
      ['THREADS', 0],
    ]);

    await call(`${service.api}/users/me`, { key: ws.apiKey });
    await call(`${service.api}/nothing-here`, { key: ws.apiKey });
    const daily = await eventually(
      () => browser.request('/api/v1/usage/daily?days=7'),
      (answer) => answer.json.items.at(-1).api.calls === 2,
    );
    expect(daily.json.windowDays).toBe(7);
    expect(daily.json.items).toHaveLength(8);
    expect(daily.json.items.at(-1)).toEqual({ date: new Date().toISOString().slice(0, 10), api: { calls: 2, errors: 1 }, mcp: { calls: 0, errors: 0 } });
    expect((await call(`${service.api}/usage/daily`, { key: ws.apiKey })).status).toBe(404);
  });
});
