import postgres from 'postgres';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { parseEncryptionKey, secretsFrom } from '../src/auth/secrets.js';
import { formatTime } from '../src/dashboard/format.js';
import { connectThroughForm, createAccount, type TestAccount } from './support/bluesky.js';
import { checkAccessibility, launchBrowser, pageErrors, screenshot, signedInOwner } from './support/browser.js';
import { call, eventually, startTestService, type TestService, type Workspace } from './support/service.js';

/**
 * Failing publishes in a real browser, the worker publishing to a Bluesky account on the run's PDS whose address is
 * made unreachable: the retry the worker queues shown with its time ("Retrying — attempt 2 of 4 at …", nextAttemptAt)
 * on the calendar and the posts list; the channel flagged on Channels with the reason and a link to exactly its failing
 * posts, and "Failing" beside it in the composer; the frame's count ("1 failing", then "2 failing" without a reload)
 * linking to the failing posts.
 */
const TZ = 'Europe/Paris';
let service: TestService;
let ws: Workspace;
let browser: Browser;
let sql: postgres.Sql;
let account: TestAccount;
let sky: string;
let other: string;
let page: Page;
let errors: string[];
/** The post whose first attempt failed, and its schedule. */
let retrying: { postId: string; scheduleId: string };
let retryEvent: { lastAttempt: string; nextAttemptAt: string; failureReason: string };

const rest = (path: string, options: { method?: string; body?: unknown } = {}) => call(`${service.api}${path}`, { key: ws.apiKey, ...options });

beforeAll(async () => {
  [service, browser, account] = await Promise.all([startTestService({}, { api: true, worker: true }), launchBrowser(), createAccount()]);
  ws = await service.workspace({ workspaceName: 'Failures', ownerName: 'Ada Lovelace', plan: 'business' });
  sql = postgres(service.databaseUrl, { max: 2, onnotice: () => {} });
  await ws.admin('updateWorkspaceSettings', { timeZone: TZ });
  sky = await connectThroughForm(service.api, ws.apiKey, account);
  other = (await ws.admin('createIntegration', { platform: 'LINKEDIN', name: 'In' })).id;
  // The PDS made unreachable (port 9 on loopback: the connection is refused before anything is sent): a transient
  // failure, retried.
  const secrets = secretsFrom(parseEncryptionKey(service.service.core.app.config.encryptionKey!));
  const [row] = await sql<{ credentials: Buffer }[]>`SELECT credentials FROM integrations WHERE id = ${sky}`;
  const credentials = { ...JSON.parse(secrets.open(row!.credentials).toString()), serviceUrl: 'http://127.0.0.1:9' };
  await sql`UPDATE integrations SET credentials = ${secrets.seal(Buffer.from(JSON.stringify(credentials)))} WHERE id = ${sky}`;
  ({ page } = await signedInOwner(browser, service, ws));
  errors = pageErrors(page);
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await sql?.end();
  await service?.stop();
});

test('a refused attempt reads "Retrying — attempt 2 of 4 at <time>: <reason>", its time the retry\'s, within a minute of the failed attempt', async () => {
  const created = await rest('/posts', {
    method: 'POST',
    body: { rows: [{ content: 'Out once Bluesky answers' }], shared: { selectedIntegrations: [sky] }, postAction: 'PUBLISH_NOW' },
  });
  expect(created.status, created.text).toBe(201);
  const postId = created.json.postId as string;
  // The event the worker writes with the retry, read from the feed (waited for as a state, the time only a bound).
  const events = await eventually(
    async () => (await rest(`/events?type=schedule.retrying&resourceId=${postId}`)).json.items as { data: Record<string, any> }[],
    (items) => items.length > 0,
    20_000,
  );
  expect(events).toHaveLength(1);
  const schedule = events[0]!.data;
  retrying = { postId, scheduleId: schedule.id };
  retryEvent = schedule as typeof retryEvent;
  expect(schedule).toMatchObject({ status: 'SCHEDULED', retryCount: 1, failureReason: 'Bluesky did not answer: attempt 1 of 4 failed, and it is tried again automatically' });
  const waits = Date.parse(schedule.nextAttemptAt) - Date.parse(schedule.lastAttempt);
  expect(waits).toBeGreaterThan(0);
  expect(waits).toBeLessThanOrEqual(60_000);
  // Held there while the pages are read (the time shown stays the one the worker set).
  await sql`UPDATE graphile_worker._private_jobs SET run_at = now() + interval '1 hour' WHERE key = ${`publish-schedule:${schedule.id}`}`;

  const said = `Retrying — attempt 2 of 4 at ${formatTime(schedule.nextAttemptAt, TZ)}`;
  // The calendar's agenda, where the entry says why; it reads the schedules again by itself.
  await page.goto(`/calendar?view=agenda&date=${new Date(Date.now() - 86_400_000).toISOString().slice(0, 10)}`);
  const entry = page.locator(`[data-schedule-id="${schedule.id}"]`);
  await entry.locator('.retrying-status').waitFor();
  expect(await entry.locator('.retrying-status').textContent()).toBe(`${said}: Bluesky did not answer`);
  await entry.getByRole('button').first().click();
  const why = page.getByRole('group', { name: 'Why it is retried' });
  await why.waitFor();
  expect(await why.textContent()).toContain(`${said}: Bluesky did not answer`);
  await page.keyboard.press('Escape');

  await page.goto('/posts');
  const row = page.locator(`tr[data-post-id="${postId}"]`);
  await row.waitFor();
  expect(await row.locator('.retrying-status').textContent()).toBe(`${said}: Bluesky did not answer`);
  expect(await row.locator('.status-badge').textContent()).toBe('Retrying');
  await screenshot(page, 'posts-retrying');
  // The month: the entry says the attempt and its time (the reason is in its dialog).
  await page.goto(`/calendar?view=month&date=${new Date().toISOString().slice(0, 10)}`);
  await entry.locator('.retrying-status').waitFor();
  expect(await entry.locator('.retrying-status').textContent()).toBe(said);
  await screenshot(page, 'calendar-month-retrying');
});

test('the channel is flagged on Channels with the reason and a link to exactly its failing posts; the composer says "Failing" beside it', async () => {
  const healthy = await rest('/posts', {
    method: 'POST',
    body: {
      rows: [{ content: 'Far ahead, on the same channel', scheduledAt: new Date(Date.now() + 30 * 86_400_000).toISOString() }],
      shared: { selectedIntegrations: [sky] },
      postAction: 'SCHEDULED_TIME',
    },
  });
  expect(healthy.status, healthy.text).toBe(201);
  await page.goto('/channels');
  const flag = page.locator('.channel-failing');
  await flag.waitFor();
  expect(await flag.getAttribute('role')).toBe('group');
  const text = (await flag.textContent())!;
  expect(text).toContain('Failing');
  expect(text).toContain('1 schedule failed or waiting to be retried.');
  expect(text).toContain(retryEvent.failureReason);
  // Only the failing channel is flagged.
  expect(await page.locator('.channel-failing').count()).toBe(1);
  const link = flag.getByRole('link', { name: /^See the failing posts/ });
  expect(await link.getAttribute('href')).toBe(`/posts?failing=true&integrationId=${sky}`);
  await checkAccessibility(page, 'channels with a failing channel');
  await screenshot(page, 'channels-failing');
  await link.click();
  await page.getByRole('status').filter({ hasText: /^1 post\.$/ }).waitFor();
  await page.locator(`tr[data-post-id="${retrying.postId}"]`).waitFor();
  expect(await page.locator('tr[data-post-id]').count()).toBe(1);
  expect(await page.getByRole('checkbox', { name: 'Failing (failed, or retrying)' }).isChecked()).toBe(true);

  await page.goto('/compose');
  const chip = page.locator('.channel-choice').filter({ has: page.getByRole('checkbox', { name: /\(Bluesky\)$/ }) });
  await chip.waitFor();
  expect(await chip.locator('.failing-note').textContent()).toBe(` Failing: ${retryEvent.failureReason}`);
  expect(await page.locator('.channel-choice').filter({ hasText: 'In (LinkedIn)' }).locator('.failing-note').count()).toBe(0);
  // The post being edited: its channel's chip says it is retrying, and when.
  await page.goto(`/posts/${retrying.postId}`);
  const own = page.locator('.channel-choice').first();
  await own.locator('.retrying-status').waitFor();
  expect(await own.locator('.retrying-status').textContent()).toBe(`Retrying — attempt 2 of 4 at ${formatTime(retryEvent.nextAttemptAt, TZ)}: Bluesky did not answer`);
  // Its own retry says it: no "Failing" besides.
  expect(await own.locator('.failing-note').count()).toBe(0);
  await screenshot(page, 'compose-failing-channel');
});

test('the frame counts the failing schedules, "1 failing" linking to their posts, and follows a new failure without a reload', async () => {
  await page.goto('/calendar');
  const count = page.locator('.failing-count').getByRole('link');
  await count.waitFor();
  expect(await count.textContent()).toMatch(/^1 failing/);
  expect(await count.getAttribute('href')).toBe('/posts?failing=true');
  // Another post fails for good on the other channel (as the worker leaves it): the count follows by itself.
  const failed = await rest('/posts', {
    method: 'POST',
    body: { rows: [{ content: 'Refused by LinkedIn' }], shared: { selectedIntegrations: [other] }, postAction: 'DRAFT' },
  });
  expect(failed.status, failed.text).toBe(201);
  await sql`UPDATE schedules SET status = 'FAILED', scheduled_at = now(), last_attempt = now(), failure_reason = 'LinkedIn refused the post' WHERE post_id = ${failed.json.postId}`;
  await page.locator('.failing-count').getByRole('link', { name: /^2 failing/ }).waitFor({ timeout: 15_000 });
  await count.click();
  await page.getByRole('status').filter({ hasText: /^2 posts\.$/ }).waitFor();
  const shown = await page.locator('tr[data-post-id]').evaluateAll((rows) => rows.map((row) => row.getAttribute('data-post-id')));
  expect(shown.sort()).toEqual([retrying.postId, failed.json.postId].sort());

  // Both deleted: no failing schedule is left, and the count goes.
  for (const postId of [retrying.postId, failed.json.postId]) expect((await rest(`/posts/${postId}`, { method: 'DELETE' })).status).toBe(200);
  await page.locator('.failing-count').waitFor({ state: 'detached', timeout: 15_000 });
  expect(errors).toEqual([]);
});
