import postgres from 'postgres';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { checkAccessibility, launchBrowser, pageErrors, screenshot, signedInOwner, tabTo, waitForFocus } from './support/browser.js';
import { call, startTestService, type TestService, type Workspace } from './support/service.js';

/**
 * Approval in a real browser, by keyboard alone: the workspace's rule turned on in Settings, a key that requires
 * approval made on the Developer API page, the Approvals page showing each waiting post as each channel will show it,
 * approved (queued for publishing) or rejected with a note, and the state shown on the posts list.
 */
let service: TestService;
let ws: Workspace;
let browser: Browser;
let page: Page;
let sql: postgres.Sql;
let bluesky: string;
let linkedin: string;

beforeAll(async () => {
  [service, browser] = await Promise.all([startTestService({}, { api: true, worker: true }), launchBrowser()]);
  ws = await service.workspace({ workspaceName: 'Approvals', ownerName: 'Grace Hopper', plan: 'business' });
  sql = postgres(service.databaseUrl, { max: 2, onnotice: () => {} });
  bluesky = (await ws.admin('createIntegration', { platform: 'BLUESKY', name: 'Sky' })).id;
  linkedin = (await ws.admin('createIntegration', { platform: 'LINKEDIN', name: 'In' })).id;
  ({ page } = await signedInOwner(browser, service, ws));
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await sql?.end();
  await service?.stop();
});

const inAWeek = () => new Date(Date.now() + 7 * 86_400_000).toISOString();

async function create(key: string, content: string, firstComment?: string) {
  const created = await call(`${service.api}/posts`, {
    method: 'POST',
    key,
    body: { rows: [{ content, scheduledAt: inAWeek(), ...(firstComment && { firstComment }) }], shared: { selectedIntegrations: [bluesky, linkedin] }, postAction: 'SCHEDULED_TIME' },
  });
  expect(created.status, created.text).toBe(201);
  return created.json.postId as string;
}

const jobsOf = async (postId: string) =>
  (await sql`SELECT 1 FROM graphile_worker.jobs j JOIN schedules s ON j.key = 'publish-schedule:' || s.id WHERE s.post_id = ${postId}`).length;

test('the rule turned on in Settings; a waiting post shown per channel on the Approvals page and approved with a note', async () => {
  await page.goto('/settings/workspace');
  await page.getByRole('heading', { name: 'Workspace settings', level: 1 }).waitFor();
  await tabTo(page, 'Every live post needs approval before it publishes', { maxTabs: 60 });
  await page.keyboard.press('Space');
  await tabTo(page, 'Save settings');
  await page.keyboard.press('Enter');
  await page.getByText('Settings saved.').waitFor();
  await checkAccessibility(page, 'the workspace settings with the approval rule');
  expect(await ws.admin('getWorkspace')).toMatchObject({ postsNeedApproval: true, approverIds: [] });

  const postId = await create(ws.apiKey, 'Spring sale starts Monday at https://shop.example #spring', 'Questions? Ask us below.');
  await page.goto('/posts');
  await page.getByText('Waiting for approval').waitFor();
  // On the calendar too: marked, and offered neither a move nor a retry.
  await page.goto('/calendar?view=agenda');
  const entries = page.locator('[data-schedule-id]').filter({ hasText: 'Needs approval' });
  await entries.first().waitFor();
  expect(await entries.count()).toBe(2);
  await entries.first().getByRole('button').click();
  await page.getByRole('link', { name: 'Open in the composer' }).waitFor();
  expect(await page.getByRole('button', { name: 'Move to…' }).count()).toBe(0);
  expect(await page.locator('[data-schedule-id][draggable="true"]').count()).toBe(0);

  await page.goto('/approvals');
  await page.getByRole('heading', { name: 'Approvals', level: 1 }).waitFor();
  const heading = page.getByRole('heading', { level: 3, name: /^Post by Grace Hopper, waiting since / });
  await heading.waitFor();
  const sky = page.getByRole('article', { name: 'Preview on Bluesky: Sky' });
  const linked = page.getByRole('article', { name: 'Preview on LinkedIn: In' });
  for (const preview of [sky, linked]) {
    expect(await preview.locator('.preview-text').first().textContent()).toBe('Spring sale starts Monday at https://shop.example #spring');
    expect(await preview.getByText('Questions? Ask us below.').count()).toBe(1);
  }
  expect(await sky.locator('[data-facet="link"]').count()).toBe(1);
  expect(await sky.locator('[data-facet="tag"]').count()).toBe(1);
  await checkAccessibility(page, 'the Approvals page with a waiting post');

  await tabTo(page, 'Note for the author (optional)');
  await page.keyboard.type('Lovely, ship it');
  await tabTo(page, /^Approve the post by Grace Hopper of /);
  await page.keyboard.press('Enter');
  await page.getByText('Approved the post by Grace Hopper: it is queued for publishing.').waitFor();
  await page.getByText('No post is waiting for approval.').waitFor();
  await waitForFocus(page.getByRole('heading', { name: 'Waiting for approval' }));
  const approved = await call(`${service.api}/posts/${postId}`, { key: ws.apiKey });
  expect(approved.json).toMatchObject({ approvalStatus: 'approved', approvalNote: 'Lovely, ship it', approvalReviewerId: ws.userId });
  expect(await jobsOf(postId)).toBe(2);
  expect(pageErrors(page)).toEqual([]);
});

test('a key made to require approval on the Developer API page; its post rejected with a note, shown as rejected on the posts list', async () => {
  await ws.admin('updateWorkspaceSettings', { postsNeedApproval: false });
  await page.goto('/settings/api-keys');
  await page.getByRole('heading', { name: 'Developer API', level: 1 }).waitFor();
  await tabTo(page, 'Create a key');
  await page.keyboard.press('Enter');
  await waitForFocus(page.getByLabel('Name', { exact: true }));
  await page.keyboard.type('Agent');
  await tabTo(page, 'Posts need approval');
  await page.keyboard.press('Space');
  await tabTo(page, 'Create key');
  await page.keyboard.press('Enter');
  const field = page.getByLabel('API key “Agent”');
  await field.waitFor();
  const key = await field.inputValue();
  await page.getByRole('row', { name: /Agent/ }).getByText('Need approval').waitFor();

  const mine = await create(ws.apiKey, 'Published without anybody looking.');
  expect(await jobsOf(mine)).toBe(2);
  const postId = await create(key, 'Buy now, buy everything, buy it twice!');
  expect(await jobsOf(postId)).toBe(0);

  await page.goto('/approvals');
  await page.getByRole('heading', { level: 3, name: /^Post by Grace Hopper, waiting since / }).waitFor();
  // The key it was written with is named (the post's createdBy), as it is named on the Developer API page.
  const waiting = page.getByRole('article', { name: /^Post by Grace Hopper, waiting since / });
  expect(await waiting.locator('[data-api-key-id]').innerText()).toBe('Written with the API key Agent');
  expect(await waiting.locator('[data-api-key-id]').getAttribute('data-api-key-id')).toBe((await call(`${service.api}/posts/${postId}`, { key })).json.createdBy.apiKeyId);
  await checkAccessibility(page, 'the Approvals page with a post written with a key');
  await screenshot(page, 'approvals-written-with-a-key');
  await tabTo(page, 'Note for the author (optional)');
  await page.keyboard.type('Not this week');
  await tabTo(page, /^Reject the post by Grace Hopper of /);
  await page.keyboard.press('Enter');
  await page.getByText('Rejected the post by Grace Hopper; it comes back here when it is changed.').waitFor();
  expect((await call(`${service.api}/posts/${postId}`, { key })).json).toMatchObject({ approvalStatus: 'rejected', approvalNote: 'Not this week' });

  await page.goto('/posts');
  const row = page.locator(`tr[data-post-id="${postId}"]`);
  await row.getByText('Rejected: Not this week').waitFor();
  await checkAccessibility(page, 'the posts list with a rejected post');
  await page.goto(`/posts/${postId}`);
  await page.getByText('Rejected: Not this week').waitFor();
  expect(pageErrors(page)).toEqual([]);
});

test('a Mastodon post waiting for approval shows behind its content warning, with who will see it, as Mastodon shows it', async () => {
  await ws.admin('updateWorkspaceSettings', { postsNeedApproval: true });
  const toot = (await ws.admin('createIntegration', { platform: 'MASTODON', name: 'Toot' })).id as string;
  const created = await call(`${service.api}/posts`, {
    method: 'POST',
    key: ws.apiKey,
    body: {
      rows: [{ content: 'The ending of the film, told', scheduledAt: inAWeek(), overrides: [{ integrationId: toot, settings: { spoilerText: 'Film spoilers', visibility: 'private' } }] }],
      shared: { selectedIntegrations: [toot] },
      postAction: 'SCHEDULED_TIME',
    },
  });
  expect(created.status, created.text).toBe(201);
  await page.goto('/approvals');
  const preview = page.getByRole('article', { name: 'Preview on Mastodon: Toot' });
  await preview.waitFor();
  await preview.getByText('Film spoilers').waitFor();
  expect(await preview.getByText('Followers only').count()).toBe(1);
  // The text is behind the warning until opened, as on Mastodon.
  expect(await preview.getByText('The ending of the film, told').count()).toBe(0);
  await preview.getByRole('button', { name: 'Show more' }).click();
  await preview.getByText('The ending of the film, told').waitFor();
  await checkAccessibility(page, 'the approvals page with a Mastodon post behind its content warning');
});
