/**
 * The service wired to LinkedIn's contract fake (test/support/linkedin.ts), and a member connecting through it as a
 * browser does: the connect link, LinkedIn's consent redirecting to our callback, and the account picker's form.
 */
import postgres from 'postgres';
import { expect } from 'vitest';
import type { Config } from '../../src/process/config.js';
import { loadConfig } from '../../src/process/config.js';
import { startFakeLinkedIn, type FakeLinkedIn, type FakeMember } from './linkedin.js';
import { call, startTestService, type TestService, type Workspace } from './service.js';

/** A worker-and-API service whose LinkedIn app is the fake's, its callback registered there as in the app's settings. */
export async function startServiceWithLinkedIn(fake: FakeLinkedIn, overrides: Partial<Config> = {}): Promise<TestService> {
  const linkedin = { ...loadConfig({}).linkedin, clientId: fake.clientId, clientSecret: fake.clientSecret, authUrl: `${fake.url}/oauth/v2`, apiUrl: fake.url };
  const service = await startTestService({ ...overrides, linkedin }, { api: true, worker: true });
  fake.redirectUris.add(`${service.base}/oauth/linkedin/callback`);
  return service;
}

/** What a LinkedIn test file starts with: the fake, the service wired to it, a business workspace, and SQL on its database. */
export interface LinkedInFixture {
  fake: FakeLinkedIn;
  service: TestService;
  ws: Workspace;
  sql: postgres.Sql;
}

export async function startLinkedInFixture(overrides: Partial<Config> = {}): Promise<LinkedInFixture> {
  const fake = await startFakeLinkedIn();
  const service = await startServiceWithLinkedIn(fake, overrides);
  const ws = await service.workspace({ plan: 'business' });
  const sql = postgres(service.databaseUrl, { max: 2, onnotice: () => {}, transform: postgres.camel });
  return { fake, service, ws, sql };
}

export async function stopLinkedInFixture({ fake, service, sql }: Partial<LinkedInFixture>): Promise<void> {
  await sql?.end();
  await service?.stop();
  await fake?.stop();
}

/** What a browser does with the link: LinkedIn's consent page redirects back to our callback, which answers a page. */
export async function consent(redirectUrl: string): Promise<{ status: number; html: string; callback: string }> {
  const atLinkedIn = await fetch(redirectUrl, { redirect: 'manual' });
  expect(atLinkedIn.status).toBe(302);
  const callback = atLinkedIn.headers.get('location')!;
  const page = await fetch(callback);
  return { status: page.status, html: await page.text(), callback };
}

/** A form POST as a browser sends it. */
export const submit = (url: string, fields: Record<string, string>) =>
  fetch(url, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams(fields) });

/** The picker's form as a browser reads it: its action, hidden fields and radio values. */
export function readPicker(service: TestService, html: string) {
  const action = html.match(/<form method="post" action="([^"]+)"/)![1]!;
  const selection = html.match(/name="selection" value="([^"]+)"/)![1]!;
  const accounts = [...html.matchAll(/type="radio" name="account" value="([^"]+)"/g)].map((match) => match[1]!);
  return { action: `${service.base}${action}`, selection, accounts };
}

/** The channel id a connect page shows. */
export const channelIdOf = (html: string) => html.match(/<code>([0-9a-f-]{36})<\/code>/)![1]!;

/** Connects `member` (signed in at the fake) for the key's workspace and answers the channel's id; with `page`, picks it. */
export async function connectLinkedIn(service: TestService, apiKey: string, fake: FakeLinkedIn, member: FakeMember, page?: string): Promise<string> {
  fake.signInAs(member);
  const link = await call(`${service.api}/integrations/connect`, { method: 'POST', key: apiKey, body: { platform: 'LINKEDIN' } });
  expect(link.status, link.text).toBe(200);
  const { status, html } = await consent(link.json.redirectUrl);
  expect(status, html).toBe(200);
  if (!page) return channelIdOf(html);
  const picker = readPicker(service, html);
  const done = await submit(picker.action, { selection: picker.selection, account: page });
  expect(done.status).toBe(200);
  return channelIdOf(await done.text());
}
