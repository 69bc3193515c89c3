import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FakeLinkedIn, FakeMember } from './support/linkedin.js';
import { channelIdOf, connectLinkedIn, consent, startLinkedInFixture, stopLinkedInFixture } from './support/linkedin-browser.js';
import { run } from './support/processes.js';
import { call, eventually, type TestService, type Workspace } from './support/service.js';

/**
 * Tokens are revoked and forgotten: a disconnect (the admin command, or the internal operation) erases a LinkedIn
 * channel's credentials and then revokes its tokens at LinkedIn, best effort; the worker does the same to a channel left
 * PENDING_SELECTION for more than 24 hours. Against the contract fake of LinkedIn (test/support/linkedin.ts), whose
 * revocation endpoint checks the request as LinkedIn does and whose API then refuses a revoked token.
 */

let fake: FakeLinkedIn;
let service: TestService;
let ws: Workspace;
let sql: postgres.Sql;

beforeAll(async () => ({ fake, service, ws, sql } = await startLinkedInFixture()));
afterAll(() => stopLinkedInFixture({ fake, service, sql }));

const EXPIRY_TASK = 'expire-pending-selections';

const channel = async (id: string) => (await call(`${service.api}/integrations`, { key: ws.apiKey })).json.find((i: { id: string }) => i.id === id);

/** The tokens stored for a channel, unsealed as the service does; null once erased. */
async function storedTokens(id: string): Promise<{ accessToken: string; refreshToken?: string } | null> {
  const [row] = await sql<{ credentials: Buffer | null }[]>`SELECT credentials FROM integrations WHERE id = ${id}`;
  return row!.credentials && JSON.parse(service.service.core.app.secrets.open(row!.credentials).toString('utf8'));
}

/** What LinkedIn's API answers to a call with `token`. */
async function userinfo(token: string) {
  const response = await fetch(`${fake.url}/v2/userinfo`, { headers: { authorization: `Bearer ${token}` } });
  return { status: response.status, body: await response.json() };
}

/** What LinkedIn's token endpoint answers to a refresh with `refreshToken`. */
async function refreshWith(refreshToken: string) {
  const form = { grant_type: 'refresh_token', refresh_token: refreshToken, client_id: fake.clientId, client_secret: fake.clientSecret };
  const response = await fetch(`${fake.url}/oauth/v2/accessToken`, { method: 'POST', body: new URLSearchParams(form) });
  return { status: response.status, body: await response.json() };
}

const revocationRequests = () => fake.requests.filter((request) => request === 'POST /oauth/v2/revoke').length;

/** `npm run admin -- …` against the service's database and the fake, with everything it printed (logs included). */
async function adminCommand(args: string[], env: Record<string, string> = {}) {
  const done = run(['run', '--silent', 'admin', '--', ...args], {
    DATABASE_URL: service.databaseUrl,
    ENCRYPTION_KEY: service.service.core.app.config.encryptionKey!,
    LINKEDIN_CLIENT_ID: fake.clientId,
    LINKEDIN_CLIENT_SECRET: fake.clientSecret,
    LINKEDIN_AUTH_URL: `${fake.url}/oauth/v2`,
    LINKEDIN_API_URL: fake.url,
    ...env,
  });
  const code = await done.exited;
  const output = done.output();
  return { code, output, json: JSON.parse(output.trim().split('\n').at(-1)!) };
}

/** A page administrator's connect left at the account picker: the PENDING_SELECTION channel's id. */
async function connectPending(member: FakeMember) {
  fake.signInAs(member);
  const link = await call(`${service.api}/integrations/connect`, { method: 'POST', key: ws.apiKey, body: { platform: 'LINKEDIN' } });
  const { status, html } = await consent(link.json.redirectUrl);
  expect(status, html).toBe(200);
  return channelIdOf(html);
}

const pageAdmin = (name: string) => fake.addMember(name, [{ id: 91_000 + Math.floor(Math.random() * 1000), name: `${name} Ltd` }]);

describe('the fake\'s revocation endpoint', () => {
  it('refuses what LinkedIn refuses: another content type, a missing or wrong client credential', async () => {
    const id = await connectLinkedIn(service, ws.apiKey, fake, fake.addMember('Ida Rhodes'));
    const { accessToken } = (await storedTokens(id))!;
    const revoke = (body: string, contentType = 'application/x-www-form-urlencoded') =>
      fetch(`${fake.url}/oauth/v2/revoke`, { method: 'POST', headers: { 'content-type': contentType }, body }).then(async (r) => ({ status: r.status, body: await r.json().catch(() => null) }));
    const form = (fields: Record<string, string>) => new URLSearchParams(fields).toString();
    const asJson = await revoke(JSON.stringify({ client_id: fake.clientId, client_secret: fake.clientSecret, token: accessToken }), 'application/json');
    expect(asJson).toEqual({ status: 400, body: { error: 'invalid_request', error_description: expect.stringContaining('x-www-form-urlencoded') } });
    expect(await revoke(form({ client_id: fake.clientId, token: accessToken }))).toMatchObject({ status: 400, body: { error: 'invalid_request' } });
    expect(await revoke(form({ client_id: fake.clientId, client_secret: 'wrong', token: accessToken }))).toMatchObject({ status: 401, body: { error: 'invalid_client' } });
    expect(await revoke(form({ client_id: 'someone-else', client_secret: fake.clientSecret, token: accessToken }))).toMatchObject({ status: 401, body: { error: 'invalid_client' } });
    expect((await userinfo(accessToken)).status).toBe(200);
    expect(await revoke(form({ client_id: fake.clientId, client_secret: fake.clientSecret, token: accessToken }))).toEqual({ status: 200, body: null });
    expect(await userinfo(accessToken)).toMatchObject({ status: 401, body: { code: 'REVOKED_ACCESS_TOKEN' } });
  });
});

describe('disconnecting a LinkedIn channel', () => {
  it('npm run admin -- disconnect-integration erases the credentials, then revokes both tokens at LinkedIn; no log holds them', async () => {
    const id = await connectLinkedIn(service, ws.apiKey, fake, fake.addMember('Evelyn Boyd'));
    const { accessToken, refreshToken } = (await storedTokens(id))!;
    expect(refreshToken).toEqual(expect.any(String));

    const done = await adminCommand(['disconnect-integration', '--workspace', ws.workspaceId, '--integration', id], { LOG_LEVEL: 'debug' });
    expect(done.code, done.output).toBe(0);
    expect(done.json).toMatchObject({ id, tokenStatus: 'MISSING', connectionErrorCode: 'DISCONNECTED', expiresAt: null });
    expect(await storedTokens(id)).toBeNull();
    expect([...fake.revokedTokens]).toEqual(expect.arrayContaining([accessToken, refreshToken]));
    expect(await userinfo(accessToken)).toMatchObject({ status: 401, body: { code: 'REVOKED_ACCESS_TOKEN' } });
    expect(await refreshWith(refreshToken!)).toMatchObject({ status: 400, body: { error: 'invalid_grant' } });
    expect(done.output).toContain('erased credentials revoked at the platform');
    for (const secret of [accessToken, refreshToken!, fake.clientSecret]) expect(done.output).not.toContain(secret);
  }, 60_000);

  it('a revocation LinkedIn refuses is logged, without the token, and the disconnect succeeds all the same', async () => {
    const id = await connectLinkedIn(service, ws.apiKey, fake, fake.addMember('Annie Easley'));
    const { accessToken } = (await storedTokens(id))!;

    const done = await adminCommand(['disconnect-integration', '--workspace', ws.workspaceId, '--integration', id], { LINKEDIN_CLIENT_SECRET: 'not-the-apps-secret' });
    expect(done.code, done.output).toBe(0);
    expect(done.json).toMatchObject({ id, tokenStatus: 'MISSING', connectionErrorCode: 'DISCONNECTED' });
    expect(await storedTokens(id)).toBeNull();
    const warning = JSON.parse(done.output.split('\n').find((line) => line.includes('could not be revoked'))!);
    expect(warning).toMatchObject({ level: 'warn', integrationId: id, platform: 'LINKEDIN', status: 401, platformCode: 'invalid_client' });
    expect(done.output).not.toContain(accessToken);
    // LinkedIn refused it, so the token still works there (until it expires).
    expect(fake.revokedTokens.has(accessToken)).toBe(false);
    expect((await userinfo(accessToken)).status).toBe(200);
  }, 60_000);

  it('a LinkedIn that does not answer: the credentials are erased before the revocation is sent, and the disconnect ends after PLATFORM_TIMEOUT_MS', async () => {
    const id = await connectLinkedIn(service, ws.apiKey, fake, fake.addMember('Gladys West'));
    const { config } = service.service.core.app;
    const timeoutMs = config.platformTimeoutMs;
    config.platformTimeoutMs = 500;
    fake.revocationDelayMs = 30_000;
    try {
      const before = revocationRequests();
      const started = Date.now();
      const disconnecting = ws.admin('disconnectIntegration', { id });
      await eventually(async () => revocationRequests(), (count) => count > before, 10_000);
      // The revocation is under way, and the erasure is committed already (read from another connection).
      const [row] = await sql<{ credentials: Buffer | null; tokenStatus: string }[]>`SELECT credentials, token_status FROM integrations WHERE id = ${id}`;
      expect(row).toEqual({ credentials: null, tokenStatus: 'MISSING' });
      expect(await disconnecting).toMatchObject({ id, tokenStatus: 'MISSING', connectionErrorCode: 'DISCONNECTED' });
      expect(Date.now() - started).toBeLessThan(15_000);
    } finally {
      config.platformTimeoutMs = timeoutMs;
      fake.revocationDelayMs = 0;
    }
  });
});

describe('channels left PENDING_SELECTION', () => {
  it('graphile-worker\'s crontab queues the expiry task', async () => {
    const known = await sql<{ identifier: string }[]>`SELECT identifier FROM graphile_worker._private_known_crontabs`;
    expect(known.map((row) => row.identifier)).toContain(EXPIRY_TASK);
  });

  it('after 24 hours the worker erases their tokens and revokes them; a younger one keeps its own; running it again changes nothing', async () => {
    const member = pageAdmin('Dorothy Vaughan');
    const expired = await connectPending(member);
    const younger = await connectPending(pageAdmin('Mary Jackson'));
    const expiredTokens = (await storedTokens(expired))!;
    const youngerTokens = (await storedTokens(younger))!;
    // As if connected 24 hours and a minute ago, and 23 hours ago.
    await sql`UPDATE integrations SET created_at = now() - interval '24 hours 1 minute' WHERE id = ${expired}`;
    await sql`UPDATE integrations SET created_at = now() - interval '23 hours' WHERE id = ${younger}`;

    // Queued as the crontab queues it.
    await sql`SELECT graphile_worker.add_job(${EXPIRY_TASK}, json_build_object('_cron', json_build_object('ts', now(), 'backfilled', false)))`;
    const erased = await eventually(() => channel(expired), (c) => c.tokenStatus === 'MISSING', 10_000);
    expect(erased).toMatchObject({ connectStatus: 'PENDING_SELECTION', tokenStatus: 'MISSING', connectionErrorCode: 'SELECTION_EXPIRED', expiresAt: null });
    expect(erased.connectionError).toMatch(/not picked within 24 hours .*: connect the channel again/);
    expect(await storedTokens(expired)).toBeNull();
    await eventually(async () => fake.revokedTokens.has(expiredTokens.refreshToken!), Boolean, 10_000);
    expect(fake.revokedTokens.has(expiredTokens.accessToken)).toBe(true);
    expect(await userinfo(expiredTokens.accessToken)).toMatchObject({ status: 401, body: { code: 'REVOKED_ACCESS_TOKEN' } });

    expect(await channel(younger)).toMatchObject({ connectStatus: 'PENDING_SELECTION', tokenStatus: 'VALID', connectionErrorCode: null });
    expect(await storedTokens(younger)).toEqual(youngerTokens);
    expect((await userinfo(youngerTokens.accessToken)).status).toBe(200);

    // Idempotent: a second run (queued by hand) finds nothing to erase, revokes nothing, touches no row.
    const requests = revocationRequests();
    const [before] = await sql<{ updatedAt: Date }[]>`SELECT updated_at FROM integrations WHERE id = ${expired}`;
    await sql`SELECT graphile_worker.add_job(${EXPIRY_TASK})`;
    const left = await eventually(async () => (await sql`SELECT 1 FROM graphile_worker.jobs WHERE task_identifier = ${EXPIRY_TASK}`).length, (n) => n === 0, 10_000);
    expect(left).toBe(0);
    expect(revocationRequests()).toBe(requests);
    expect((await sql`SELECT updated_at FROM integrations WHERE id = ${expired}`)[0]!.updatedAt).toEqual(before!.updatedAt);

    // Nothing left to pick an account from: the user must connect again.
    const picked = await service.service.core.runAs({ userId: ws.userId, workspaceId: ws.workspaceId }, 'selectIntegrationAccount', {
      id: expired,
      account: `urn:li:person:${member.sub}`,
    });
    expect(picked).toMatchObject({ ok: false, body: { code: 'INVALID_STATE', message: expect.stringContaining('connect it again') } });
  });
});
