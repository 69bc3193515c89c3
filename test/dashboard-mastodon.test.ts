import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { checkAccessibility, launchBrowser, newPage, pageErrors, PHONE, screenshot, signedInOwner, signIn } from './support/browser.js';
import { photo } from './support/images.js';
import { connectMastodon, startFakeMastodon, type FakeMastodon } from './support/mastodon.js';
import { call, startTestService, type TestService, type Workspace } from './support/service.js';

/**
 * The composer's Mastodon options in a real browser, against the strict fake instance (test/support/mastodon.ts): a
 * post published now with a content warning, "Followers only" and sensitive media, and exactly those read from what
 * the server received; the counter against a server that takes 11,000 characters, the content warning counted with the
 * text, and the submit blocked with the API's own sentence; a scheduled post's options read back into the composer and
 * changed by an edit (PATCH /posts/{id}); axe-core on the options and the preview.
 */
let fake: FakeMastodon;
let wide: FakeMastodon;
let service: TestService;
let ws: Workspace;
let browser: Browser;
let page: Page;
let credentials: { email: string; password: string };
const ANN = 'Ann Example';
const WIDE = 'Ann Wide';
let annId: string;

const rest = (path: string, options: { method?: string; body?: unknown } = {}) => call(`${service.api}${path}`, { key: ws.apiKey, ...options });

beforeAll(async () => {
  // Two servers: one with Mastodon's 500 characters, one that takes 11,000 (as some do), each with an account `ann`.
  [fake, wide] = await Promise.all([
    startFakeMastodon({ autoConsent: 'ann' }),
    startFakeMastodon({ autoConsent: 'ann', limits: { max_characters: 11_000 }, accounts: [{ username: 'ann', displayName: WIDE }] }),
  ]);
  [service, browser] = await Promise.all([startTestService({ mediaFetchAllowHosts: [fake.host, wide.host] }, { api: true, worker: true }), launchBrowser()]);
  ws = await service.workspace({ plan: 'business', workspaceName: 'Toots' });
  annId = await connectMastodon(service.api, ws.apiKey, fake);
  await connectMastodon(service.api, ws.apiKey, wide);
  const channels = (await rest('/integrations')).json as { name: string; limits: { maxCharacters: number } }[];
  expect(channels.map((channel) => [channel.name, channel.limits.maxCharacters]).sort()).toEqual([
    [ANN, 500],
    [WIDE, 11_000],
  ]);
  let signedIn;
  ({ page, ...signedIn } = await signedInOwner(browser, service, ws));
  credentials = signedIn;
});

afterAll(async () => {
  await browser?.close();
  await service?.stop();
  await Promise.all([fake?.close(), wide?.close()]);
});

const counter = (name: string) => page.locator('.counter', { hasText: `${name} (Mastodon)` }).first();
const toggle = (name: string) => page.getByRole('button', { name: `Mastodon options for ${name}` });
const options = (name: string) => page.getByRole('group', { name: `Mastodon options for ${name} (Mastodon)` });
const preview = (name: string) => page.getByRole('article', { name: `Preview on Mastodon: ${name}` });

test('published now with a content warning, “Followers only” and sensitive media: the server receives exactly those', async () => {
  await page.goto('/compose');
  await page.getByRole('heading', { name: 'Compose', level: 1 }).waitFor();
  await page.getByRole('checkbox', { name: `${ANN} (Mastodon)`, exact: true }).check();
  const text = `The finale, discussed at length ${Date.now()}`;
  const warning = 'Spoilers for the finale';
  await page.getByLabel('Text', { exact: true }).fill(text);
  await page.getByLabel('Add images').setInputFiles([{ name: 'still.jpg', mimeType: 'image/jpeg', buffer: await photo(800, 600) }]);
  await page.locator('.media-item .success', { hasText: 'Uploaded' }).waitFor({ timeout: 15_000 });
  await page.getByLabel('Alt text for still.jpg').fill('A still from the last scene');

  // Folded at first, its summary beside it; opened, the three options of this channel.
  expect(await toggle(ANN).getAttribute('aria-expanded')).toBe('false');
  await page.getByText('The account’s default visibility, no content warning').waitFor();
  await toggle(ANN).click();
  const group = options(ANN);
  await group.getByLabel('Visibility').selectOption({ label: 'Followers only' });
  await group.getByText('Only the account’s followers.').waitFor();
  await group.getByLabel('Content warning').fill(warning);
  await group.getByLabel('Mark media as sensitive').check();
  // Folded again, the summary says them.
  await toggle(ANN).click();
  await page.getByText(`Followers only, content warning “${warning}”, media marked sensitive`).waitFor();
  await group.waitFor({ state: 'hidden' });

  // The counter counts the warning with the text, as Mastodon does.
  await expect.poll(() => counter(ANN).textContent()).toBe(`${ANN} (Mastodon): ${text.length + warning.length} / 500 characters`);

  // The preview: the warning, the text and image behind it until "Show more", then the image behind its cover.
  const shown = preview(ANN);
  await shown.getByText(warning, { exact: true }).waitFor();
  await shown.getByText('Followers only', { exact: true }).waitFor();
  expect(await shown.getByText(text).count()).toBe(0);
  expect(await shown.getByRole('img', { name: 'A still from the last scene' }).count()).toBe(0);
  await checkAccessibility(page, 'the composer with Mastodon options and a content warning in the preview');
  await screenshot(page, 'compose-mastodon-options');
  await shown.getByRole('button', { name: 'Show more' }).click();
  await shown.getByText(text).waitFor();
  await shown.getByText('Sensitive content').waitFor();
  await shown.getByRole('button', { name: 'Show the image' }).click();
  await shown.getByRole('img', { name: 'A still from the last scene' }).waitFor();
  expect(await shown.getByRole('button', { name: 'Show less' }).getAttribute('aria-expanded')).toBe('true');

  await page.getByLabel('Publish now').check();
  await page.getByRole('button', { name: 'Publish now' }).click();
  const outcome = page.getByRole('status').filter({ hasText: 'Publishing now.' });
  await outcome.waitFor();
  await outcome.getByText(`${ANN} (Mastodon): Published`).waitFor({ timeout: 30_000 });
  const postId = (await outcome.getByRole('link', { name: 'Open the post' }).getAttribute('href'))!.split('/').pop()!;

  // Saved as the channel's settings, and sent as they are: the status as the server made it, and the request.
  const post = (await rest(`/posts/${postId}`)).json;
  expect(post.schedules[0].settings).toEqual({ visibility: 'private', spoilerText: warning, sensitive: true });
  const [status, ...others] = fake.statusesOf('ann').filter((one) => one.text === text);
  expect(others).toEqual([]);
  expect(status).toMatchObject({ spoilerText: warning, visibility: 'private', sensitive: true });
  expect(status!.mediaIds.map((id) => fake.media.get(id)!.description)).toEqual(['A still from the last scene']);
  const sent = fake.requests.filter((request) => request.method === 'POST' && request.path === '/api/v1/statuses' && JSON.stringify(request.body).includes(text));
  expect(sent.length).toBeGreaterThan(0);
  for (const request of sent) expect(request.body).toMatchObject({ status: text, spoiler_text: warning, visibility: 'private', sensitive: true });
  expect(pageErrors(page)).toEqual([]);
}, 60_000);

test('the counter counts against each server’s own limit, 11,000 characters on one, the content warning included', async () => {
  await page.goto('/compose');
  await page.getByRole('checkbox', { name: `${ANN} (Mastodon)`, exact: true }).check();
  await page.getByRole('checkbox', { name: `${WIDE} (Mastodon)`, exact: true }).check();
  const field = page.getByLabel('Text', { exact: true });
  await field.fill('x'.repeat(600));
  await expect.poll(() => counter(ANN).textContent()).toBe(`${ANN} (Mastodon): 600 / 500 characters, 100 over the limit`);
  await expect.poll(() => counter(WIDE).textContent()).toBe(`${WIDE} (Mastodon): 600 / 11,000 characters`);
  expect(await counter(WIDE).getAttribute('class')).toBe('counter ok');

  // A content warning on one channel is counted with the text there, and only there.
  await toggle(WIDE).click();
  await options(WIDE).getByLabel('Content warning').fill('Spoilers');
  await expect.poll(() => counter(WIDE).textContent()).toBe(`${WIDE} (Mastodon): 608 / 11,000 characters`);
  expect(await counter(ANN).textContent()).toBe(`${ANN} (Mastodon): 600 / 500 characters, 100 over the limit`);

  // Near the 11,000: the warning takes what is left, and past it the submit is blocked with the API's numbers.
  await page.getByRole('checkbox', { name: `${ANN} (Mastodon)`, exact: true }).uncheck();
  await field.fill('x'.repeat(10_990));
  await expect.poll(() => counter(WIDE).textContent()).toBe(`${WIDE} (Mastodon): 10,998 / 11,000 characters`);
  expect(await counter(WIDE).getAttribute('class')).toBe('counter warn');
  await options(WIDE).getByLabel('Content warning').fill('Spoilers ahead');
  await expect.poll(() => counter(WIDE).textContent()).toBe(`${WIDE} (Mastodon): 11,004 / 11,000 characters, 4 over the limit`);
  expect(await field.getAttribute('aria-invalid')).toBe('true');
  await page.getByLabel('Save as a draft').check();
  await page.getByRole('button', { name: 'Save draft' }).click();
  const sentence = `Too long for Mastodon (${WIDE}): 11004 of 11000 characters`;
  await page.getByRole('alert').filter({ hasText: 'Not sent' }).getByText(sentence, { exact: true }).waitFor();
  // The API refuses the same request with the same sentence.
  const wideId = ((await rest('/integrations')).json as { id: string; name: string }[]).find((channel) => channel.name === WIDE)!.id;
  const refused = await rest('/posts', {
    method: 'POST',
    body: { rows: [{ content: 'x'.repeat(10_990), overrides: [{ integrationId: wideId, settings: { spoilerText: 'Spoilers ahead' } }] }], shared: { selectedIntegrations: [wideId] }, postAction: 'DRAFT' },
  });
  expect(refused.status).toBe(400);
  expect(refused.json.code).toBe('CONTENT_TOO_LONG');
  expect(refused.json.message).toMatch(new RegExp(`^rows\\[0\\]\\.content: ${sentence.replace(/[()]/g, '\\$&')}`));
  await checkAccessibility(page, 'the composer over an 11,000-character limit with a content warning');
  // A shorter warning, and it fits again.
  await options(WIDE).getByLabel('Content warning').fill('CW');
  await expect.poll(() => counter(WIDE).textContent()).toBe(`${WIDE} (Mastodon): 10,992 / 11,000 characters`);
  // The list of what blocked the submit follows what is typed: gone with the problem.
  await expect.poll(() => field.getAttribute('aria-invalid')).toBeNull();
  await page.getByRole('alert').filter({ hasText: 'Not sent' }).waitFor({ state: 'detached' });
  await page.getByRole('button', { name: 'Save draft' }).click();
  await page.getByRole('status').filter({ hasText: 'Saved as a draft.' }).waitFor();
  expect(pageErrors(page)).toEqual([]);
}, 60_000);

test('a scheduled post’s options are read back into the composer, and an edit changes them', async () => {
  await page.goto('/compose');
  await page.getByRole('checkbox', { name: `${ANN} (Mastodon)`, exact: true }).check();
  await page.getByLabel('Text', { exact: true }).fill('A thread about birds, later');
  await toggle(ANN).click();
  await options(ANN).getByLabel('Visibility').selectOption({ label: 'Unlisted (quiet public)' });
  await options(ANN).getByLabel('Content warning').fill('Birds');
  await page.getByLabel('At a chosen time').check();
  const year = new Date().getUTCFullYear() + 1;
  await page.getByLabel('Date', { exact: true }).fill(`${year}-03-10`);
  await page.getByLabel('Time', { exact: true }).fill('09:00');
  await page.getByRole('button', { name: 'Schedule', exact: true }).click();
  const outcome = page.getByRole('status').filter({ hasText: 'Scheduled.' });
  await outcome.waitFor();
  const href = (await outcome.getByRole('link', { name: 'Open the post' }).getAttribute('href'))!;
  const postId = href.split('/').pop()!;
  expect((await rest(`/posts/${postId}`)).json.schedules[0].settings).toEqual({ visibility: 'unlisted', spoilerText: 'Birds' });

  // Opened again: the options are open at first, as the schedule has them, and the preview shows them.
  await page.goto(href);
  await page.getByRole('heading', { name: 'Edit post', level: 1 }).waitFor();
  expect(await toggle(ANN).getAttribute('aria-expanded')).toBe('true');
  expect(await options(ANN).getByLabel('Visibility').inputValue()).toBe('unlisted');
  expect(await options(ANN).getByLabel('Content warning').inputValue()).toBe('Birds');
  await preview(ANN).getByText('Birds', { exact: true }).waitFor();
  await expect.poll(() => counter(ANN).textContent()).toBe(`${ANN} (Mastodon): ${'A thread about birds, later'.length + 'Birds'.length} / 500 characters`);
  await checkAccessibility(page, 'the composer editing a post with Mastodon options');

  // Changed: to the people it mentions, without a warning; the schedule's settings say so, and so does the form again.
  await options(ANN).getByLabel('Visibility').selectOption({ label: 'Mentioned people only' });
  await options(ANN).getByLabel('Content warning').fill('');
  await page.getByRole('button', { name: 'Save changes' }).click();
  await page.getByRole('status').filter({ hasText: 'Saved.' }).waitFor();
  const edited = (await rest(`/posts/${postId}`)).json;
  expect(edited.schedules[0].settings).toEqual({ visibility: 'direct' });
  expect(edited.schedules[0].status).toBe('SCHEDULED');
  await page.reload();
  await page.getByRole('heading', { name: 'Edit post', level: 1 }).waitFor();
  expect(await options(ANN).getByLabel('Visibility').inputValue()).toBe('direct');
  expect(await options(ANN).getByLabel('Content warning').inputValue()).toBe('');
  await toggle(ANN).click();
  await page.getByText('Mentioned people only, no content warning').waitFor();
  expect(await preview(ANN).locator('.preview-warning').count()).toBe(0);
  expect(annId).toBe(edited.schedules[0].integrationId);
  expect(pageErrors(page)).toEqual([]);
}, 60_000);

test('at a phone’s width: the options and the warning in the preview fit the screen, no serious accessibility violation', async () => {
  const phone = await newPage(browser, { size: 'phone', baseURL: service.base });
  await signIn(phone, service.base, credentials);
  await phone.goto('/compose');
  await phone.getByRole('checkbox', { name: `${ANN} (Mastodon)`, exact: true }).check();
  await phone.getByLabel('Text', { exact: true }).fill('Small screens, long warnings');
  await phone.getByRole('button', { name: `Mastodon options for ${ANN}` }).click();
  const group = phone.getByRole('group', { name: `Mastodon options for ${ANN} (Mastodon)` });
  await group.getByLabel('Visibility').selectOption({ label: 'Unlisted (quiet public)' });
  await group.getByLabel('Content warning').fill('A rather long content warning, to see that it wraps on a small screen');
  await phone.getByRole('article', { name: `Preview on Mastodon: ${ANN}` }).getByRole('button', { name: 'Show more' }).waitFor();
  expect(await phone.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(PHONE.width);
  await screenshot(phone, 'compose-mastodon-phone');
  await checkAccessibility(phone, 'the composer’s Mastodon options at a phone’s width');
  expect(pageErrors(phone)).toEqual([]);
  await phone.close();
});
