import type { Browser } from 'playwright-core';
import postgres from 'postgres';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { checkAccessibility, launchBrowser, pageErrors, screenshot, signedInOwner } from './support/browser.js';
import { call, startTestService, type TestService, type Workspace } from './support/service.js';

/** A published post in the dashboard: history, shown as it went out, read-only; its one action a copy to write anew. */
let service: TestService;
let ws: Workspace;
let browser: Browser;
let sql: postgres.Sql;
let sky: string;
let linkedin: string;

beforeAll(async () => {
  [service, browser] = await Promise.all([startTestService(), launchBrowser()]);
  ws = await service.workspace({ workspaceName: 'History', plan: 'business' });
  sql = postgres(service.databaseUrl, { max: 2, onnotice: () => {} });
  sky = (await ws.admin('createIntegration', { platform: 'BLUESKY', name: 'Sky' })).id;
  linkedin = (await ws.admin('createIntegration', { platform: 'LINKEDIN', name: 'In' })).id;
});
afterAll(async () => {
  await sql?.end();
  await browser?.close();
  await service?.stop();
});

async function publishedPost(rows: Record<string, unknown>, integrations: string[]): Promise<string> {
  const created = await call(`${service.api}/posts`, {
    key: ws.apiKey,
    method: 'POST',
    body: { rows: [rows], shared: { selectedIntegrations: integrations }, postAction: 'DRAFT' },
  });
  expect(created.status, created.text).toBe(201);
  // As the worker leaves a schedule it published (this service runs no worker).
  await sql`UPDATE schedules SET status = 'PUBLISHED', scheduled_at = now(), published_at = now(),
    release_url = 'https://bsky.app/profile/sky.test/post/' || thread_order WHERE post_id = ${created.json.postId}`;
  return created.json.postId;
}

test('a published post opens read-only, each channel as it went out with its link; "Duplicate as a new post" opens an editable draft', async () => {
  const postId = await publishedPost(
    { content: 'Launch day is here', firstComment: 'Details below', overrides: [{ integrationId: linkedin, content: 'Launch day, for LinkedIn' }] },
    [sky, linkedin],
  );
  const { page } = await signedInOwner(browser, service, ws);
  const errors = pageErrors(page);
  await page.goto(`/posts/${postId}`);
  await page.getByRole('heading', { level: 1, name: 'Published post' }).waitFor();
  const channels = page.locator('.published-channels > li');
  await expect.poll(() => channels.count()).toBe(2);
  const sky_ = channels.filter({ has: page.getByRole('heading', { name: 'Sky (Bluesky)' }) });
  await expect.poll(() => sky_.locator('.published-text').first().textContent()).toBe('Launch day is here');
  expect(await sky_.getByRole('link', { name: 'View the post' }).getAttribute('href')).toBe('https://bsky.app/profile/sky.test/post/0');
  expect(await sky_.locator('.published-comment').textContent()).toBe('First comment: Details below');
  const linkedinItem = channels.filter({ has: page.getByRole('heading', { name: 'In (LinkedIn)' }) });
  expect(await linkedinItem.locator('.published-text').first().textContent()).toBe('Launch day, for LinkedIn');
  // No text to edit: the only control besides the copy is whether it is evergreen (which publishes nothing).
  expect(await page.locator('textarea, input:not([type="checkbox"]), select').count()).toBe(0);
  expect(await page.getByRole('checkbox').count()).toBe(1);
  await page.getByRole('checkbox', { name: 'Evergreen' }).waitFor();
  await checkAccessibility(page, 'published post');
  await screenshot(page, 'published-post');

  await page.getByRole('button', { name: 'Duplicate as a new post' }).click();
  await page.getByRole('heading', { level: 1, name: 'Edit post' }).waitFor();
  const copyId = new URL(page.url()).pathname.split('/').at(-1)!;
  expect(copyId).not.toBe(postId);
  await expect.poll(() => page.getByLabel('Text', { exact: true }).inputValue()).toBe('Launch day is here');
  const copy = (await call(`${service.api}/posts/${copyId}`, { key: ws.apiKey })).json;
  expect(copy.schedules.map((s: { status: string }) => s.status)).toEqual(['DRAFT', 'DRAFT']);
  expect(errors).toEqual([]);
  await page.context().close();
});

test('over the API, the published post refuses a new text with a sentence that says why', async () => {
  const postId = await publishedPost({ content: 'Gone out' }, [sky]);
  const refused = await call(`${service.api}/posts/${postId}`, { key: ws.apiKey, method: 'PATCH', body: { content: 'Rewritten' } });
  expect(refused.status).toBe(409);
  expect(refused.json.message).toMatch(/what was published is not rewritten/);
});

test('a schedule whose attempt failed reads "Retrying" with the reason at once: in the posts list, on the calendar and in its dialog', async () => {
  const created = await call(`${service.api}/posts`, {
    key: ws.apiKey,
    method: 'POST',
    body: { rows: [{ content: 'Waiting for Bluesky to answer' }], shared: { selectedIntegrations: [sky] }, postAction: 'DRAFT' },
  });
  expect(created.status, created.text).toBe(201);
  // As the worker leaves a schedule whose first attempt failed and that waits for its next (this service runs no worker).
  const reason = 'Bluesky did not answer: attempt 1 of 4 failed, and it is tried again automatically';
  await sql`UPDATE schedules SET status = 'SCHEDULED', scheduled_at = now() - interval '2 minutes', last_attempt = now() - interval '1 minute',
    retry_count = 1, failure_reason = ${reason} WHERE post_id = ${created.json.postId}`;
  const { page } = await signedInOwner(browser, service, ws);
  const errors = pageErrors(page);
  await page.goto('/posts');
  const row = page.locator(`tr[data-post-id="${created.json.postId}"]`);
  await row.waitFor();
  expect(await row.locator('.status-badge').textContent()).toBe('Retrying');

  await page.goto(`/calendar?view=agenda&date=${new Date().toISOString().slice(0, 10)}`);
  const entry = page.locator('.entry', { hasText: 'Waiting for Bluesky to answer' });
  await entry.locator('.status-badge', { hasText: 'Retrying' }).waitFor();
  await entry.getByRole('button').first().click();
  const why = page.getByRole('group', { name: 'Why it is retried' });
  await why.waitFor();
  // No retry time stored (nextAttemptAt) and its time past: the attempt to come and why, without a time.
  expect(await why.textContent()).toContain('Retrying — attempt 2 of 4: Bluesky did not answer');
  await checkAccessibility(page, 'retrying schedule');
  expect(errors).toEqual([]);
  await page.context().close();
});

test('in the calendar\'s dialog the main action leads (a failed schedule\'s "Retry now", focused) and Delete comes last, quiet', async () => {
  const created = await call(`${service.api}/posts`, {
    key: ws.apiKey,
    method: 'POST',
    body: { rows: [{ content: 'This one failed for good' }], shared: { selectedIntegrations: [sky] }, postAction: 'DRAFT' },
  });
  await sql`UPDATE schedules SET status = 'FAILED', scheduled_at = now() - interval '1 hour', failure_reason = 'Bluesky refused the post'
    WHERE post_id = ${created.json.postId}`;
  const { page } = await signedInOwner(browser, service, ws);
  await page.goto(`/calendar?view=agenda&date=${new Date(Date.now() - 3_600_000).toISOString().slice(0, 10)}`);
  await page.locator('.entry', { hasText: 'This one failed for good' }).getByRole('button').first().click();
  const actions = page.locator('dialog .dialog-actions');
  await actions.waitFor();
  const names = await actions.locator('a, button').allTextContents();
  expect(names.map((name) => name.trim())).toEqual(['Retry now', 'Open in the composer', 'Move to…', 'Close', 'Delete…']);
  await expect.poll(() => page.evaluate(() => document.activeElement?.textContent?.trim())).toBe('Retry now');
  expect(await actions.getByRole('button', { name: 'Delete…' }).getAttribute('class')).toBe('danger-quiet');
  await page.context().close();
});
