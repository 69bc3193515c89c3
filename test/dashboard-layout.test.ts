import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { brokenWords, labelsOnTwoLines, launchBrowser, newPage, PHONE, setOwnerPassword, signIn, waitForFocus } from './support/browser.js';
import { call, startTestService, type TestService, type Workspace } from './support/service.js';

/**
 * The frame and the pages' layout, measured in a real browser at 1280 x 800 and at a phone's 390 x 844: the grouped
 * navigation in one sidebar (one row per link, all in view) or behind one menu button on a phone; the work above the
 * fold (posts, the month, a plain post's composer); no word split across two lines and no label on two, on every page.
 */
let service: TestService;
let ws: Workspace;
let browser: Browser;
let credentials: { email: string; password: string };

const PAGES = [
  { path: '/compose', heading: 'Compose' },
  { path: '/calendar', heading: 'Calendar' },
  { path: '/posts', heading: 'Posts' },
  { path: '/approvals', heading: 'Approvals' },
  { path: '/recycling', heading: 'Recycling' },
  { path: '/channels', heading: 'Channels' },
  { path: '/usage', heading: 'Usage' },
  { path: '/settings/members', heading: 'Members' },
  { path: '/settings/workspace', heading: 'Workspace settings' },
  { path: '/settings/api-keys', heading: 'Developer API' },
  { path: '/settings/webhooks', heading: 'Webhooks' },
];

beforeAll(async () => {
  [service, browser] = await Promise.all([startTestService(), launchBrowser()]);
  ws = await service.workspace({ workspaceName: 'Layout', ownerName: 'Ada Lovelace', plan: 'business' });
  credentials = await setOwnerPassword(service, ws);
  const sky = (await ws.admin('createIntegration', { platform: 'BLUESKY', name: 'team.example' })).id;
  const launch = (await ws.admin('createTag', { name: 'launch' })).id;
  // Words that the old pages split: "Revoke", "Expires" (the keys table), a tag, a webhook's address.
  await ws.admin('createApiKey', { name: 'agent-1' });
  await ws.admin('createWebhook', { url: 'https://hooks.example.com/postwise/receive/webhook' }).catch(() => undefined);
  // Enough posts this month and next for a full list and a full month.
  for (let index = 0; index < 12; index++) {
    const scheduledAt = new Date(Date.now() + (index + 1) * 20 * 3600_000).toISOString();
    const answer = await call(`${service.api}/posts`, {
      key: ws.apiKey,
      method: 'POST',
      body: { rows: [{ content: `Launch week, day ${index + 1}: what is new and why it matters`, scheduledAt, tagIds: [launch] }], shared: { selectedIntegrations: [sky] }, postAction: 'SCHEDULED_TIME' },
    });
    expect(answer.status, answer.text).toBe(201);
  }
});

afterAll(async () => {
  await browser?.close();
  await service?.stop();
});

async function open(page: Page, path: string, heading: string) {
  await page.goto(path);
  await page.getByRole('heading', { name: heading, level: 1 }).waitFor();
  await page.locator('progress').first().waitFor({ state: 'detached' });
}

const viewportHeight = (page: Page) => page.evaluate(() => window.innerHeight);
const bottomOf = async (page: Page, selector: string) => (await page.locator(selector).first().boundingBox())!;

describe('at 1280 x 800', () => {
  test('the navigation: three named groups in the sidebar, every link on one line and in view', async () => {
    const page = await newPage(browser, { baseURL: service.base });
    await signIn(page, service.base, credentials);
    await open(page, '/calendar', 'Calendar');
    const nav = page.getByRole('navigation', { name: 'Main' });
    for (const [group, links] of [
      ['Publish', ['Compose', 'Calendar', 'Posts', 'Approvals', 'Recycling']],
      ['Workspace', ['Channels', 'Usage', 'Members', 'Settings']],
      ['Developers', ['Developer API', 'Webhooks']],
    ] as const) {
      const list = nav.getByRole('list', { name: group });
      expect(await list.getByRole('link').allInnerTexts()).toEqual(links);
    }
    const height = await viewportHeight(page);
    for (const link of await nav.getByRole('link').all()) {
      const box = (await link.boundingBox())!;
      expect(box.y + box.height, `${await link.innerText()} is below the fold`).toBeLessThanOrEqual(height);
      // One line: a link is as tall as one line of text and its padding.
      expect(box.height, `${await link.innerText()} takes two lines`).toBeLessThan(40);
    }
    expect(await nav.getByRole('link', { name: 'Calendar' }).getAttribute('aria-current')).toBe('page');
    // No menu button at this width: the navigation is always there.
    expect(await page.getByRole('button', { name: 'Menu' }).isVisible()).toBe(false);
    await page.close();
  });

  test('the work above the fold: the posts begin on screen, every week of the month is on screen and the month fills it', async () => {
    const page = await newPage(browser, { baseURL: service.base });
    await signIn(page, service.base, credentials);
    const height = await viewportHeight(page);
    await open(page, '/posts', 'Posts');
    const firstRow = await bottomOf(page, 'table.posts-table tbody tr');
    expect(firstRow.y + firstRow.height).toBeLessThanOrEqual(height);

    await open(page, '/calendar', 'Calendar');
    await page.locator('.month-day').first().waitFor();
    const days = await page.locator('.month-day').all();
    const last = (await days.at(-1)!.boundingBox())!;
    const grid = (await page.locator('.month-grid').boundingBox())!;
    // Every week of the month is on screen (its last may end a little lower on a busy month, as a day grows with its posts).
    expect(last.y + 40, 'the last week of the month is below the fold').toBeLessThanOrEqual(height);
    expect(grid.height / height, 'the month fills most of the window').toBeGreaterThan(0.6);
    await page.close();
  });

  test('a plain post in the composer fits one screen, its text and preview side by side, the save button in view', async () => {
    const page = await newPage(browser, { baseURL: service.base });
    await signIn(page, service.base, credentials);
    await open(page, '/compose', 'Compose');
    await page.getByRole('checkbox', { name: 'team.example (Bluesky)', exact: true }).check();
    await page.getByLabel('Text', { exact: true }).fill('A plain post: one text, one channel.');
    const preview = page.getByRole('article', { name: 'Preview on Bluesky: team.example' });
    await preview.waitFor();
    await page.screenshot({ path: 'bench/.tmp/layout-compose.png', fullPage: true });
    const { scrollHeight, innerHeight } = await page.evaluate(() => ({ scrollHeight: document.documentElement.scrollHeight, innerHeight: window.innerHeight }));
    expect(scrollHeight, 'the composer scrolls').toBeLessThanOrEqual(innerHeight);
    const text = (await page.getByLabel('Text', { exact: true }).boundingBox())!;
    const shown = (await preview.boundingBox())!;
    expect(shown.x, 'the preview is beside the text').toBeGreaterThan(text.x + text.width);
    const save = (await page.getByRole('button', { name: 'Schedule at the next free slot' }).boundingBox())!;
    expect(save.y + save.height).toBeLessThanOrEqual(innerHeight);
    // Thread, first comment and tags are folded until used; the first comment opens with the focus in it.
    for (const name of ['Add a thread part', 'Add a first comment', 'Add tags']) await page.getByRole('button', { name }).waitFor();
    await page.getByRole('button', { name: 'Add a first comment' }).click();
    await waitForFocus(page.getByLabel('First comment'));
    await page.close();
  });
});

describe(`at a phone's ${PHONE.width} x ${PHONE.height}`, () => {
  test('the navigation is behind one menu button: opened, followed, closed by Escape with the focus back on it', async () => {
    const page = await newPage(browser, { size: 'phone', baseURL: service.base });
    await signIn(page, service.base, credentials);
    await open(page, '/posts', 'Posts');
    const nav = page.getByRole('navigation', { name: 'Main' });
    const menu = page.getByRole('button', { name: 'Menu' });
    expect(await nav.isVisible()).toBe(false);
    // The bar above the page is one row.
    const heading = (await page.getByRole('heading', { name: 'Posts', level: 1 }).boundingBox())!;
    expect(heading.y, 'the page starts below a one-row bar').toBeLessThan(110);
    expect(await menu.getAttribute('aria-expanded')).toBe('false');
    await menu.click();
    expect(await menu.getAttribute('aria-expanded')).toBe('true');
    await nav.getByRole('link', { name: 'Calendar' }).click();
    await page.getByRole('heading', { name: 'Calendar', level: 1 }).waitFor();
    await nav.waitFor({ state: 'hidden' });
    await menu.click();
    await nav.waitFor();
    await page.keyboard.press('Escape');
    await nav.waitFor({ state: 'hidden' });
    await waitForFocus(menu);
    await page.close();
  });

  test('the posts list comes first: the filters fold behind their button', async () => {
    const page = await newPage(browser, { size: 'phone', baseURL: service.base });
    await signIn(page, service.base, credentials);
    await open(page, '/posts', 'Posts');
    const toggle = page.getByRole('button', { name: 'Filters' });
    expect(await toggle.getAttribute('aria-expanded')).toBe('false');
    expect(await page.getByLabel('Text contains').isVisible()).toBe(false);
    const firstPost = (await page.locator('table.posts-table tbody tr').first().boundingBox())!;
    expect(firstPost.y).toBeLessThan(await viewportHeight(page));
    await toggle.click();
    await page.getByLabel('Text contains').waitFor();
    await page.close();
  });
});

test('one notation for every time, the browser\'s: 12 hours in en-US, 24 in en-GB, on the posts, the week, a post and the keys', async () => {
  const post = (await call(`${service.api}/posts?limit=1`, { key: ws.apiKey })).json.items[0];
  const week = post.schedules[0].scheduledAt.slice(0, 10);
  // A time, not a host's port (the Developer API page shows http://127.0.0.1:PORT/mcp).
  const timesOn = async (page: Page) => page.locator('main').evaluate((main) => [...(main as HTMLElement).innerText.matchAll(/\b\d{1,2}:\d{2}(?!\d)(?:\s?[AP]M)?/g)].map((match) => match[0]));
  for (const [locale, notation] of [
    ['en-US', /^\d{1,2}:\d{2}\s[AP]M$/],
    ['en-GB', /^\d{2}:\d{2}$/],
  ] as const) {
    const page = await newPage(browser, { baseURL: service.base, locale });
    await signIn(page, service.base, credentials);
    const seen: string[] = [];
    for (const [path, heading] of [
      ['/posts', 'Posts'],
      [`/calendar?view=week&date=${week}`, 'Calendar'],
      [`/posts/${post.id}`, 'Edit post'],
      ['/settings/api-keys', 'Developer API'],
    ] as const) {
      await open(page, path, heading);
      const times = await timesOn(page);
      expect(times.length, `no time on ${path}`).toBeGreaterThan(0);
      seen.push(...times);
    }
    expect(seen.filter((time) => !notation.test(time)), locale).toEqual([]);
    await page.close();
  }
});

for (const size of ['desktop', 'phone'] as const) {
  test(`no word split across lines, no label on two lines, nothing wider than the window, on every page (${size})`, async () => {
    const page = await newPage(browser, { size, baseURL: service.base });
    await signIn(page, service.base, credentials);
    for (const { path, heading } of PAGES) {
      await open(page, path, heading);
      expect(await brokenWords(page), `${path} (${size})`).toEqual([]);
      const { scrollWidth, innerWidth } = await page.evaluate(() => ({ scrollWidth: document.documentElement.scrollWidth, innerWidth: window.innerWidth }));
      expect(scrollWidth, `${path} (${size}) is wider than the window`).toBeLessThanOrEqual(innerWidth);
      expect(await labelsOnTwoLines(page), `${path} (${size})`).toEqual([]);
    }
    await page.close();
  });
}
