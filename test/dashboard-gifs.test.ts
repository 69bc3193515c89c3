import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { loadConfig } from '../src/process/config.js';
import { checkAccessibility, launchBrowser, pageErrors, screenshot, signedInOwner, tabTo, waitForFocus } from './support/browser.js';
import { startFakeGiphy, type FakeGiphy } from './support/giphy.js';
import { connectMastodon, startFakeMastodon, type FakeMastodon } from './support/mastodon.js';
import { call, startTestService, type TestService, type Workspace } from './support/service.js';

/**
 * The composer's GIF picker in a real browser (compose/gif-picker.tsx), against the strict GIPHY fake
 * (test/support/giphy.ts): "cat" searched as it is typed, a GIF picked with the keyboard alone, attached with its title
 * as its alt text, saved in a draft whose media says GIPHY over REST; the picker's words for nothing found and for
 * GIPHY refusing, "More GIFs" paging; axe-core on the dialog; and no GIF button on a server without GIPHY_API_KEY.
 */
let giphy: FakeGiphy;
let mastodon: FakeMastodon;
let service: TestService;
let ws: Workspace;
let browser: Browser;
let page: Page;
const ANN = 'Ann Example (Mastodon)';

const rest = (path: string) => call(`${service.api}${path}`, { key: ws.apiKey });

beforeAll(async () => {
  [giphy, mastodon] = await Promise.all([startFakeGiphy(), startFakeMastodon({ autoConsent: 'ann' })]);
  [service, browser] = await Promise.all([
    startTestService(
      { giphy: { ...loadConfig({}).giphy, apiKey: giphy.apiKey, apiUrl: giphy.url }, mediaFetchAllowHosts: [giphy.host, mastodon.host] },
      { api: true, worker: true },
    ),
    launchBrowser(),
  ]);
  ws = await service.workspace({ plan: 'business', workspaceName: 'Gifs' });
  await connectMastodon(service.api, ws.apiKey, mastodon);
  ({ page } = await signedInOwner(browser, service, ws));
});

afterAll(async () => {
  await browser?.close();
  await service?.stop();
  await Promise.all([giphy?.close(), mastodon?.close()]);
});

const dialog = () => page.getByRole('dialog', { name: 'Add a GIF' });
const gifButton = () => page.getByRole('button', { name: 'Add a GIF' });
const status = () => dialog().getByRole('status');

async function openPicker() {
  await page.goto('/compose');
  await page.getByRole('heading', { name: 'Compose', level: 1 }).waitFor();
  // Shown once the server said it offers GIF search.
  await gifButton().waitFor();
}

test('a GIF searched, picked with the keyboard, attached with its title as alt text and saved in a draft as media from GIPHY', async () => {
  await openPicker();
  await page.getByRole('checkbox', { name: ANN, exact: true }).check();
  await page.getByLabel('Text', { exact: true }).fill('Monday mood');

  // Opened from the keyboard; the focus starts in the search field.
  await gifButton().focus();
  await page.keyboard.press('Enter');
  const field = dialog().getByLabel('Search GIPHY');
  await waitForFocus(field);
  await dialog().getByText('Powered by GIPHY').waitFor();
  await status().getByText('Type what to look for').waitFor();
  const searchesBefore = giphy.requests.filter((request) => request.path === '/v1/gifs/search').length;
  await page.keyboard.type('cat', { delay: 30 });
  // Three cats rated pg-13 at most (the fake's r-rated one is left out), searched once typing paused.
  await status().getByText('3 GIFs for “cat”.').waitFor();
  const searches = giphy.requests.filter((request) => request.path === '/v1/gifs/search').slice(searchesBefore);
  // Not at every key (on a machine busy enough to pause half a second between two, a prefix may go too).
  expect(searches.map((request) => request.query.q).at(-1)).toBe('cat');
  expect(searches.length).toBeLessThan(3);
  const results = dialog().getByRole('list', { name: 'GIFs for “cat”' }).getByRole('button');
  expect(await results.count()).toBe(3);
  const titles = await dialog().getByRole('list', { name: 'GIFs for “cat”' }).getByRole('img').evaluateAll((images) => images.map((image) => (image as HTMLImageElement).alt));
  expect(titles.every((title) => / GIF$/.test(title))).toBe(true);
  // Every preview is loaded from the provider's address.
  await expect
    .poll(() => dialog().locator('.gif-result img').evaluateAll((images) => images.every((image) => (image as HTMLImageElement).complete && (image as HTMLImageElement).naturalWidth > 0)))
    .toBe(true);
  await checkAccessibility(page, 'the GIF picker with results');
  await screenshot(page, 'compose-gif-picker');

  // One Tab stop for the grid (the first GIF), the arrow keys for the others.
  await tabTo(page, results.nth(0), { maxTabs: 3 });
  await page.keyboard.press('ArrowRight');
  await waitForFocus(results.nth(1));
  await page.keyboard.press('ArrowLeft');
  await waitForFocus(results.nth(0));
  await page.keyboard.press('End');
  await waitForFocus(results.nth(2));
  expect(await results.nth(2).getAttribute('tabindex')).toBe('0');
  expect(await results.nth(0).getAttribute('tabindex')).toBe('-1');
  const title = titles[2]!;
  const picked = [...giphy.gifs.values()].find((gif) => gif.title === title)!;
  await page.keyboard.press('Enter');

  // The dialog closes, the focus back on its button; the GIF is copied into the store and attached, its title its alt text.
  await dialog().waitFor({ state: 'hidden' });
  await waitForFocus(gifButton());
  const item = page.locator('.media-item', { hasText: title });
  await item.getByText('GIF from GIPHY').waitFor();
  await item.getByText('Added', { exact: true }).waitFor({ timeout: 15_000 });
  const alt = page.getByLabel(`Alt text for ${title}`);
  expect(await alt.inputValue()).toBe(title);
  // Editable as any alt text; the preview shows it as the image's text alternative.
  await alt.fill(`${title}, looping`);
  await page.getByRole('article', { name: /^Preview on Mastodon/ }).getByRole('img', { name: `${title}, looping` }).waitFor();
  // In the middle of the window: not under the save button's bar, which stays at its bottom over what scrolls.
  await item.evaluate((element) => element.scrollIntoView({ block: 'center' }));
  await checkAccessibility(page, 'the composer with a GIF attached');
  await screenshot(page, 'compose-gif-attached');

  await page.getByLabel('Save as a draft').check();
  await page.getByRole('button', { name: 'Save draft' }).click();
  const outcome = page.getByRole('status').filter({ hasText: 'Saved as a draft.' });
  await outcome.waitFor();
  const postId = (await outcome.getByRole('link', { name: 'Open the post' }).getAttribute('href'))!.split('/').pop()!;

  // Over REST: the post's one attachment is media from GIPHY, with the alt text written; GIPHY was asked for that GIF.
  const post = await rest(`/posts/${postId}`);
  expect(post.status, post.text).toBe(200);
  expect(post.json.attachments).toHaveLength(1);
  expect(post.json.attachments[0]).toMatchObject({ altText: `${title}, looping`, media: { provider: 'GIPHY' } });
  expect(giphy.requests.some((request) => request.path === `/v1/gifs/${picked.id}`)).toBe(true);

  // Opened again, the GIF is there, said to be from GIPHY.
  await page.goto(`/posts/${postId}`);
  await page.getByRole('heading', { name: 'Edit post', level: 1 }).waitFor();
  await page.locator('.media-item').getByText(/GIF from GIPHY/).waitFor();
  expect(await page.locator('.media-item textarea').inputValue()).toBe(`${title}, looping`);
  expect(pageErrors(page)).toEqual([]);
}, 60_000);

test('the picker says in words when nothing is found and when GIPHY refuses, and pages with “More GIFs”', async () => {
  for (let n = 1; n <= 30; n++) giphy.addGif({ id: `kitten${n}`, title: `Kitten ${n} GIF`, tags: ['kitten'] });
  await openPicker();
  await gifButton().click();
  const field = dialog().getByLabel('Search GIPHY');
  await waitForFocus(field);

  await field.fill('zebra');
  await status().getByText('No GIFs found for “zebra”. Try other words.').waitFor();

  // GIPHY rate limiting the server's key: said in its words, and Enter asks again.
  giphy.failNext('search', { status: 429 });
  await field.fill('kitten');
  await status().getByText('The search for “kitten” failed.').waitFor();
  await status().getByText(/GIPHY asks to slow down/).waitFor();
  await checkAccessibility(page, 'the GIF picker after GIPHY refused');
  await field.press('Enter');
  await status().getByText('24 of 30 GIFs for “kitten”.').waitFor();
  // Enter searched in the dialog: the post's form around it was not submitted.
  expect(await page.getByRole('alert').filter({ hasText: 'Not sent' }).count()).toBe(0);

  // "More GIFs": the next page, the focus on the first GIF it added, and no button once there are no more.
  const results = dialog().getByRole('list', { name: 'GIFs for “kitten”' }).getByRole('button');
  const more = dialog().getByRole('button', { name: 'More GIFs' });
  await more.focus();
  await page.keyboard.press('Enter');
  await status().getByText('30 GIFs for “kitten”.').waitFor();
  expect(await results.count()).toBe(30);
  await waitForFocus(results.nth(24));
  expect(await more.count()).toBe(0);
  const offsets = giphy.requests.filter((request) => request.path === '/v1/gifs/search' && request.query.q === 'kitten').map((request) => request.query.offset);
  expect(offsets.slice(-2)).toEqual(['0', '24']);

  // Escape closes it; opened again, the search is where it was.
  await page.keyboard.press('Escape');
  await dialog().waitFor({ state: 'hidden' });
  await gifButton().click();
  await status().getByText('30 GIFs for “kitten”.').waitFor();
  expect(await dialog().getByLabel('Search GIPHY').inputValue()).toBe('kitten');
  await dialog().getByRole('button', { name: 'Close' }).click();
  await dialog().waitFor({ state: 'hidden' });
  expect(pageErrors(page)).toEqual([]);
}, 60_000);

test('a server without GIPHY_API_KEY shows no GIF button', async () => {
  const bare = await startTestService({ giphy: { ...loadConfig({}).giphy, apiKey: undefined } }, { api: true, worker: false });
  try {
    const other = await bare.workspace({ plan: 'business' });
    const { page: barePage } = await signedInOwner(browser, bare, other);
    const workspace = barePage.waitForResponse((response) => new URL(response.url()).pathname === '/api/v1/workspace');
    await barePage.goto('/compose');
    await barePage.getByRole('heading', { name: 'Compose', level: 1 }).waitFor();
    // The workspace says GIF search is not offered here; GIPHY is never asked.
    expect((await (await workspace).json()).gifProvider).toBeNull();
    await barePage.getByText('Add images').waitFor();
    expect(await barePage.getByRole('button', { name: 'Add a GIF' }).count()).toBe(0);
    await barePage.close();
  } finally {
    await bare.stop();
  }
}, 60_000);
