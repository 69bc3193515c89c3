import type { Browser, Page } from 'playwright-core';
import postgres from 'postgres';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { addDays, addMonths, dayOf, instantAt } from '../src/dashboard/zoned-time.js';
import { checkAccessibility, launchBrowser, newPage, pageErrors, screenshot, setOwnerPassword, signIn, tabTo, waitForFocus } from './support/browser.js';
import { call, startTestService, type TestService, type Workspace } from './support/service.js';

/**
 * The posts list in a real browser: every filter of GET /posts (status, platform, dates, tags, search) and its pages,
 * kept in the address: the rows are the API's for the same query, a shared address shows the same rows, back and
 * forward go through the views. Times in the workspace's time zone (Europe/Paris; the browser's is UTC).
 */
const TZ = 'Europe/Paris';
let service: TestService;
let ws: Workspace;
let browser: Browser;
let sql: postgres.Sql;
let credentials: { email: string; password: string };
let day: string;
const tags: Record<string, string> = {};
const posts: Record<string, string> = {};

const rest = (path: string, options: { method?: string; body?: unknown } = {}) => call(`${service.api}${path}`, { key: ws.apiKey, ...options });

async function createPost(name: string, content: string, integrations: string[], scheduledAt?: string, tagIds: string[] = []) {
  const answer = await rest('/posts', {
    method: 'POST',
    body: {
      rows: [{ content, ...(scheduledAt && { scheduledAt }), ...(tagIds.length && { tagIds }) }],
      shared: { selectedIntegrations: integrations },
      postAction: scheduledAt ? 'SCHEDULED_TIME' : 'DRAFT',
    },
  });
  expect(answer.status, answer.text).toBe(201);
  posts[name] = answer.json.postId;
}

beforeAll(async () => {
  [service, browser] = await Promise.all([startTestService(), launchBrowser()]);
  ws = await service.workspace({ workspaceName: 'Posts', ownerName: 'Ada Lovelace', plan: 'business' });
  sql = postgres(service.databaseUrl, { max: 2, onnotice: () => {} });
  credentials = await setOwnerPassword(service, ws);
  await ws.admin('updateWorkspaceSettings', { timeZone: TZ });
  const sky = (await ws.admin('createIntegration', { platform: 'BLUESKY', name: 'Sky' })).id;
  const linkedin = (await ws.admin('createIntegration', { platform: 'LINKEDIN', name: 'In' })).id;
  tags.launch = (await ws.admin('createTag', { name: 'Launch' })).id;
  tags.weekly = (await ws.admin('createTag', { name: 'Weekly' })).id;

  day = addDays(addMonths(dayOf(new Date(), TZ), 1), 9);
  // Created oldest first: the list shows them newest first.
  for (let index = 0; index < 8; index++) await createPost(`filler${index}`, `Filler number ${index}`, [sky], instantAt(addDays(day, 5), `0${index}:00`, TZ));
  await createPost('alpha', 'Alpha launch teaser', [sky], instantAt(day, '09:00', TZ), [tags.launch!]);
  await createPost('beta', 'Beta launch recap', [linkedin], instantAt(addDays(day, 1), '10:00', TZ), [tags.launch!]);
  await createPost('weekly', 'Weekly notes, one for every channel', [sky, linkedin], instantAt(addDays(day, 2), '11:00', TZ), [tags.weekly!]);
  await createPost('draft', 'Draft idea without a date', [linkedin]);
  await createPost('broken', 'Broken post', [sky], instantAt(addDays(day, 3), '12:00', TZ));
  // As the worker leaves a schedule it could not publish (this service runs no worker).
  await sql`UPDATE schedules SET status = 'FAILED', failure_reason = 'This channel is not connected' WHERE post_id = ${posts.broken!}`;
});

afterAll(async () => {
  await browser?.close();
  await sql?.end();
  await service?.stop();
});

async function signedIn(size: 'desktop' | 'phone' = 'desktop') {
  const page = await newPage(browser, { size, baseURL: service.base });
  await signIn(page, service.base, credentials);
  return page;
}

/** The ids of the rows the page shows, once it has shown the answer for its address. */
async function rowsOf(page: Page): Promise<string[]> {
  await page.getByRole('heading', { name: 'Posts', level: 1 }).waitFor();
  await page.locator('progress').first().waitFor({ state: 'detached' });
  await page.getByRole('status').filter({ hasText: /posts?[,.]|No post matches/ }).waitFor();
  return page.locator('tbody tr').evaluateAll((rows) => rows.map((row) => row.getAttribute('data-post-id')!));
}

/** What GET /posts answers for the same query, with a key. */
async function apiRows(query: string): Promise<string[]> {
  const answer = await rest(`/posts?${query}`);
  expect(answer.status, answer.text).toBe(200);
  return answer.json.items.map((post: { id: string }) => post.id);
}

test('the list: newest first, ten a page, each row with its text, channels, statuses, times in the workspace’s zone and tags', async () => {
  const page = await signedIn();
  await page.goto('/posts');
  const first = await rowsOf(page);
  expect(first).toEqual(await apiRows(''));
  expect(first).toHaveLength(10);
  await page.getByRole('status').filter({ hasText: '13 posts, page 1 of 2.' }).waitFor();

  const weekly = page.locator(`tr[data-post-id="${posts.weekly}"]`);
  const text = (await weekly.innerText()).replace(/\s+/g, ' ');
  expect(text).toContain('Weekly notes, one for every channel');
  expect(text).toMatch(/Sky \(Bluesky\).*In \(LinkedIn\)/);
  expect(text).toMatch(/Scheduled.*Scheduled/);
  // 11:00 in Paris, whatever the browser's zone.
  const when = new Intl.DateTimeFormat('en-US', { dateStyle: 'medium', timeStyle: 'short', timeZone: TZ }).format(new Date(instantAt(addDays(day, 2), '11:00', TZ)));
  expect(when).toContain('11:00');
  expect(text).toContain(when);
  expect(text).toContain('Weekly');
  expect(await weekly.getByRole('link').getAttribute('href')).toBe(`/posts/${posts.weekly}`);
  expect((await page.locator(`tr[data-post-id="${posts.draft}"]`).innerText()).replace(/\s+/g, ' ')).toMatch(/Draft.*No date/);
  expect(await page.locator(`tr[data-post-id="${posts.broken}"]`).innerText()).toContain('Failed');
  await checkAccessibility(page, 'the posts list');
  await screenshot(page, 'posts-desktop');

  // Paging: page 2 has the rest; back and forward go between the pages.
  await page.getByRole('link', { name: 'Next page' }).click();
  await page.waitForURL('**/posts?page=2');
  const second = await rowsOf(page);
  expect(second).toEqual(await apiRows('page=2'));
  expect(second).toHaveLength(3);
  await page.getByRole('status').filter({ hasText: '13 posts, page 2 of 2.' }).waitFor();
  await page.goBack();
  await page.waitForURL(/\/posts$/);
  await page.getByRole('status').filter({ hasText: 'page 1 of 2' }).waitFor();
  expect(await rowsOf(page)).toEqual(first);
  await page.goForward();
  await page.getByRole('status').filter({ hasText: 'page 2 of 2' }).waitFor();
  expect(await rowsOf(page)).toEqual(second);
  // Twenty a page: one page.
  await page.goto('/posts?limit=20');
  expect(await rowsOf(page)).toHaveLength(13);
  expect(await page.getByLabel('Posts per page').inputValue()).toBe('20');
  expect(pageErrors(page)).toEqual([]);
  await page.close();
});

test('each filter, from the address: the rows are the API’s, and the form shows the filter', async () => {
  const page = await signedIn();
  const cases = [
    { query: 'status=FAILED', expected: ['broken'], checked: ['Failed'] },
    { query: 'status=DRAFT', expected: ['draft'], checked: ['Draft'] },
    { query: 'platform=LINKEDIN', expected: ['draft', 'weekly', 'beta'], checked: ['LinkedIn'] },
    { query: `dateFrom=${addDays(day, 1)}&dateTo=${addDays(day, 2)}`, expected: ['weekly', 'beta'] },
    { query: `tagIds=${tags.launch}`, expected: ['beta', 'alpha'], checked: ['Launch'] },
    { query: 'search=LAUNCH', expected: ['beta', 'alpha'] },
    { query: `status=SCHEDULED&platform=BLUESKY&tagIds=${tags.launch}&tagIds=${tags.weekly}`, expected: ['weekly', 'alpha'], checked: ['Scheduled', 'Bluesky', 'Launch', 'Weekly'] },
  ];
  for (const { query, expected, checked = [] } of cases) {
    await page.goto(`/posts?${query}`);
    const rows = await rowsOf(page);
    expect(rows, query).toEqual(await apiRows(query));
    expect(rows, query).toEqual(expected.map((name) => posts[name]));
    for (const label of checked) expect(await page.getByRole('checkbox', { name: label, exact: true }).isChecked(), `${query}: ${label}`).toBe(true);
  }
  expect(await page.getByLabel('From').inputValue()).toBe('');
  await page.goto(`/posts?dateFrom=${addDays(day, 1)}`);
  await rowsOf(page);
  expect(await page.getByLabel('From').inputValue()).toBe(addDays(day, 1));
  await page.goto('/posts?search=nothing%20like%20this');
  expect(await rowsOf(page)).toEqual([]);
  await page.getByText('No post matches.').waitFor();
  expect(pageErrors(page)).toEqual([]);
  await page.close();
});

test('filtered by keyboard alone; the address is shared and shows the same rows; back clears the filter', async () => {
  const page = await signedIn();
  await page.goto('/posts');
  await rowsOf(page);
  // The filters are folded while none is on, so that the list comes first.
  await tabTo(page, 'Filters');
  await page.keyboard.press('Enter');
  await tabTo(page, /^Text contains/);
  await page.keyboard.type('launch');
  await tabTo(page, 'Bluesky');
  await page.keyboard.press('Space');
  await tabTo(page, 'Launch');
  await page.keyboard.press('Space');
  await tabTo(page, /^From/);
  const [year, month, date] = day.split('-');
  await page.keyboard.type(`${month}${date}${year}`);
  await tabTo(page, 'Apply filters');
  await page.keyboard.press('Enter');
  await page.waitForURL(`**/posts?platform=BLUESKY&tagIds=${tags.launch}&dateFrom=${day}&search=launch`);
  await page.getByRole('status').filter({ hasText: '1 post.' }).waitFor();
  const rows = await rowsOf(page);
  expect(rows).toEqual([posts.alpha]);
  await screenshot(page, 'posts-filtered');
  await checkAccessibility(page, 'the posts list, filtered');

  // Shared: another page (another session of the workspace) opening the address sees the same rows.
  const shared = await signedIn();
  await shared.goto(page.url());
  expect(await rowsOf(shared)).toEqual(rows);
  expect(await shared.getByRole('checkbox', { name: 'Bluesky' }).isChecked()).toBe(true);
  expect(await shared.getByLabel(/^Text contains/).inputValue()).toBe('launch');
  await shared.close();

  // Back: the unfiltered list, and the form as it was.
  await page.goBack();
  await page.waitForURL(/\/posts$/);
  await page.getByRole('status').filter({ hasText: '13 posts' }).waitFor();
  expect(await page.getByRole('checkbox', { name: 'Bluesky' }).isChecked()).toBe(false);
  expect(await page.getByLabel(/^Text contains/).inputValue()).toBe('');

  // A row's link opens the post in the composer, by keyboard.
  const link = page.locator(`tr[data-post-id="${posts.weekly}"]`).getByRole('link');
  await tabTo(page, link, { maxTabs: 60 });
  await waitForFocus(link);
  await page.keyboard.press('Enter');
  await page.waitForURL(`**/posts/${posts.weekly}`);
  expect(pageErrors(page)).toEqual([]);
  await page.close();
});

test('at a phone’s width: rows become cards, nothing wider than the screen, no serious accessibility violation', async () => {
  const page = await signedIn('phone');
  await page.goto(`/posts?tagIds=${tags.weekly}&tagIds=${tags.launch}`);
  expect(await rowsOf(page)).toHaveLength(3);
  await checkAccessibility(page, 'the posts list (phone)');
  const { scrollWidth, screenWidth } = await page.evaluate(() => ({ scrollWidth: document.documentElement.scrollWidth, screenWidth: window.innerWidth }));
  expect(scrollWidth).toBeLessThanOrEqual(screenWidth);
  await screenshot(page, 'posts-phone');
  expect(pageErrors(page)).toEqual([]);
  await page.close();
});

test('a channel with a text of its own shows that text under its name; a channel publishing the post’s text does not repeat it', async () => {
  const sky = (await rest('/integrations')).json.find((channel: { name: string }) => channel.name === 'Sky').id;
  const inn = (await rest('/integrations')).json.find((channel: { name: string }) => channel.name === 'In').id;
  const created = await rest('/posts', {
    method: 'POST',
    body: { rows: [{ content: 'Said once for everyone', overrides: [{ integrationId: inn, content: 'Said at length for LinkedIn readers' }] }], shared: { selectedIntegrations: [sky, inn] }, postAction: 'DRAFT' },
  });
  expect(created.status, created.text).toBe(201);
  const page = await signedIn();
  await page.goto('/posts?search=Said%20once');
  expect(await rowsOf(page)).toEqual([created.json.postId]);
  const row = page.locator(`tr[data-post-id="${created.json.postId}"]`);
  expect(await row.locator('.channel-text').allInnerTexts()).toEqual(['“Said at length for LinkedIn readers”']);
  expect((await row.innerText()).replace(/\s+/g, ' ')).toMatch(/In \(LinkedIn\) “Said at length for LinkedIn readers”/);
  expect(pageErrors(page)).toEqual([]);
  await page.close();
});
