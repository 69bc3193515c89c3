import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { loadConfig } from '../src/process/config.js';
import { checkAccessibility, launchBrowser, pageErrors, screenshot, signedInOwner } from './support/browser.js';
import { call, startTestService, type TestService, type Workspace } from './support/service.js';
import { startFakeThreads, type FakeThreads } from './support/threads.js';

/**
 * Threads in the dashboard, in a real browser, against the strict fake of Meta's Threads API (test/support/threads.ts)
 * and its own Authorization Window: on the Channels page, Threads connected through the consent page's Allow and
 * listed with the account's name, handle and picture; Cancel there connects nothing and the page says so; in the
 * composer, a Threads channel's counter counting an emoji as its UTF-8 bytes, and the save refused with the API's own
 * sentence; axe-core on each.
 */
let fake: FakeThreads;
let service: TestService;
let ws: Workspace;
let browser: Browser;
let page: Page;
const ANN = 'Ann Example';

const rest = (path: string, options: { method?: string; body?: unknown } = {}) => call(`${service.api}${path}`, { key: ws.apiKey, ...options });
const threadsChannels = async () => ((await rest('/integrations')).json as { id: string; platform: string; name: string; handle: string | null; image: string | null }[]).filter((one) => one.platform === 'THREADS');

beforeAll(async () => {
  // No consent given by the fake itself: the person signed in at Threads answers its page.
  fake = await startFakeThreads({ autoConsent: null });
  fake.signInAs('threads_ann');
  const threads = { ...loadConfig({}).threads, appId: fake.app.appId, appSecret: fake.app.appSecret, authUrl: fake.url, apiUrl: fake.url, version: fake.version };
  [service, browser] = await Promise.all([startTestService({ threads }, { api: true, worker: true }), launchBrowser()]);
  fake.app.redirectUris.push(`${service.base}/oauth/threads/callback`);
  ws = await service.workspace({ plan: 'business', workspaceName: 'Short posts' });
  ({ page } = await signedInOwner(browser, service, ws));
});

afterAll(async () => {
  await browser?.close();
  await service?.stop();
  await fake?.close();
});

/** From the Channels page's Threads section to Threads' consent page, as the person signed in there sees it. */
async function toConsentPage() {
  await page.goto('/channels');
  await page.getByRole('heading', { name: 'Channels', level: 1 }).waitFor();
  const section = page.getByRole('region', { name: 'Connect a Threads account' });
  await section.getByText('Threads asks you to sign in with your Threads account and to allow Postwise to post and reply.').waitFor();
  await Promise.all([page.waitForURL((url) => url.origin === fake.url), section.getByRole('button', { name: 'Continue to Threads' }).click()]);
  await page.getByText('Signed in as @threads_ann').waitFor();
  const asked = await page.locator('.permissions code').allTextContents();
  expect(asked).toEqual(expect.arrayContaining(['threads_basic', 'threads_content_publish', 'threads_manage_replies']));
}

test('Threads is connected from the Channels page through Threads’ own consent page, and listed with its name and handle', async () => {
  await page.goto('/channels');
  await page.getByText('No channel yet').waitFor();
  await checkAccessibility(page, 'the channels page offering Threads');
  await toConsentPage();
  await Promise.all([page.waitForURL((url) => url.pathname === '/oauth/threads/callback'), page.getByRole('button', { name: 'Allow' }).click()]);
  await page.getByRole('heading', { name: 'Threads account connected', level: 1 }).waitFor();
  await page.getByText(`${ANN} is connected.`).waitFor();
  const [channel, ...others] = await threadsChannels();
  expect(others).toEqual([]);
  const account = fake.account('threads_ann');
  expect(channel).toMatchObject({ name: ANN, handle: '@threads_ann', image: account.pictureUrl });
  expect(await page.locator('code').textContent()).toBe(channel!.id);

  // Back to the channels, where it is listed: its name, its handle, the platform, connected, its picture.
  await Promise.all([page.waitForURL((url) => url.pathname === '/channels'), page.getByRole('link', { name: 'your channels' }).click()]);
  const card = page.getByRole('listitem').filter({ has: page.getByRole('heading', { name: ANN, level: 3 }) });
  await card.waitFor();
  await card.getByText('@threads_ann', { exact: true }).waitFor();
  await card.getByText('Threads', { exact: true }).waitFor();
  await card.getByText('Connected', { exact: true }).waitFor();
  expect(await card.locator('img.avatar').getAttribute('src')).toBe(account.pictureUrl);
  await expect.poll(() => card.locator('img.avatar').evaluate((image: HTMLImageElement) => image.complete && image.naturalWidth > 0)).toBe(true);
  await card.getByRole('button', { name: `Reconnect ${ANN}` }).waitFor();
  await card.getByRole('button', { name: `Disconnect ${ANN}` }).waitFor();
  await screenshot(page, 'channels-threads-connected');
  await checkAccessibility(page, 'the channels page with a Threads channel');
  expect(pageErrors(page)).toEqual([]);
}, 60_000);

test('Cancel on Threads’ consent page connects nothing, and the page says so', async () => {
  const before = await threadsChannels();
  const codes = fake.codes.size;
  await toConsentPage();
  await Promise.all([page.waitForURL((url) => url.pathname === '/oauth/threads/callback'), page.getByRole('button', { name: 'Cancel' }).click()]);
  await page.getByRole('heading', { name: 'Threads was not connected', level: 1 }).waitFor();
  await page.getByText('The Threads consent was cancelled: nothing was connected').waitFor();
  expect(new URL(page.url()).searchParams.get('error')).toBe('access_denied');
  // Nothing connected, nothing exchanged: no code was issued, no channel added or changed.
  expect(fake.codes.size).toBe(codes);
  expect(await threadsChannels()).toEqual(before);
  await page.goto('/channels');
  await page.getByRole('heading', { name: ANN, level: 3 }).waitFor();
  expect(await page.getByRole('heading', { level: 3 }).count()).toBe(before.length);
  expect(pageErrors(page)).toEqual([]);
}, 60_000);

test('the composer counts an emoji on Threads as its UTF-8 bytes, and a save over 500 is refused with the API’s sentence', async () => {
  const [channel] = await threadsChannels();
  await page.goto('/compose');
  await page.getByRole('heading', { name: 'Compose', level: 1 }).waitFor();
  await page.getByRole('checkbox', { name: `${ANN} (Threads)`, exact: true }).check();
  const field = page.getByLabel('Text', { exact: true });
  const counter = page.locator('.counter', { hasText: `${ANN} (Threads)` }).first();

  // 490 letters and 🙂 (4 bytes): 494, near the limit.
  await field.fill(`${'x'.repeat(490)}🙂`);
  await expect.poll(() => counter.textContent()).toBe(`${ANN} (Threads): 494 / 500 characters`);
  expect(await counter.getAttribute('class')).toBe('counter warn');
  // And a family (👨‍👩‍👧‍👦, one character to a reader, 25 bytes): 519, over.
  const text = `${'x'.repeat(490)}🙂👨‍👩‍👧‍👦`;
  await field.fill(text);
  await expect.poll(() => counter.textContent()).toBe(`${ANN} (Threads): 519 / 500 characters, 19 over the limit`);
  expect(await counter.getAttribute('class')).toBe('counter over');
  expect(await field.getAttribute('aria-invalid')).toBe('true');
  await page.getByRole('article', { name: `Preview on Threads: ${ANN}` }).getByText(text).waitFor();

  await page.getByLabel('Save as a draft').check();
  await page.getByRole('button', { name: 'Save draft' }).click();
  const sentence = `Too long for Threads (${ANN}): 519 of 500 characters`;
  await page.getByRole('alert').filter({ hasText: 'Not sent' }).getByText(sentence, { exact: true }).waitFor();
  await screenshot(page, 'compose-threads-over');
  await checkAccessibility(page, 'the composer over Threads’ 500 characters');
  // The API refuses the same request with the same sentence (and, for programs, what the unit is).
  const refused = await rest('/posts', { method: 'POST', body: { rows: [{ content: text }], shared: { selectedIntegrations: [channel!.id] }, postAction: 'DRAFT' } });
  expect(refused.status).toBe(400);
  expect(refused.json).toMatchObject({ code: 'CONTENT_TOO_LONG', message: `rows[0].content: ${sentence} (an emoji counting its UTF-8 bytes)` });

  // Twenty-four letters fewer and it fits: the problem goes with it, and the draft is saved.
  await field.fill(`${'x'.repeat(470)}👨‍👩‍👧‍👦`);
  await expect.poll(() => counter.textContent()).toBe(`${ANN} (Threads): 495 / 500 characters`);
  await expect.poll(() => field.getAttribute('aria-invalid')).toBeNull();
  await page.getByRole('alert').filter({ hasText: 'Not sent' }).waitFor({ state: 'detached' });
  await page.getByRole('button', { name: 'Save draft' }).click();
  await page.getByRole('status').filter({ hasText: 'Saved as a draft.' }).waitFor();
  expect(pageErrors(page)).toEqual([]);
}, 60_000);
