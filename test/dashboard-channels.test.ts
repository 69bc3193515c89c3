import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { createAccount, type TestAccount } from './support/bluesky.js';
import { checkAccessibility, launchBrowser, pageErrors, screenshot, signedInOwner, tabTo, waitForFocus } from './support/browser.js';
import { call, startTestService, type TestService, type Workspace } from './support/service.js';

/**
 * Channels in a real browser, against the run's real PDS (test/support/pds.ts): a Bluesky account connected by
 * keyboard alone (a wrong app password first, said in words), its connection checked, then disconnected.
 */
let service: TestService;
let ws: Workspace;
let browser: Browser;
let page: Page;
let account: TestAccount;

beforeAll(async () => {
  [service, browser, account] = await Promise.all([startTestService(), launchBrowser(), createAccount()]);
  ws = await service.workspace({ workspaceName: 'Channels' });
  ({ page } = await signedInOwner(browser, service, ws));
});

afterAll(async () => {
  await browser?.close();
  await service?.stop();
});

test('a Bluesky account is connected against the PDS by keyboard alone; a wrong app password is said in words and loses nothing', async () => {
  await page.goto('/channels');
  await page.getByRole('heading', { name: 'Channels', level: 1 }).waitFor();
  await page.getByText('No channel yet').waitFor();
  await screenshot(page, 'channels-empty');

  await tabTo(page, 'Handle');
  await page.keyboard.type(`@${account.handle}`);
  await tabTo(page, 'App password');
  await page.keyboard.type('aaaa-bbbb-cccc-dddd');
  await tabTo(page, /^Server \(PDS\) URL/);
  await page.keyboard.type(account.pdsUrl);
  await tabTo(page, 'Connect Bluesky');
  await page.keyboard.press('Enter');
  await page.getByRole('alert').filter({ hasText: 'That handle and app password were not accepted' }).waitFor();
  expect((await call(`${service.api}/integrations`, { key: ws.apiKey })).json).toHaveLength(0);
  await checkAccessibility(page, 'the channels page after a refused connection');
  // What was typed is still there: only the app password is corrected.
  expect(await page.getByLabel('Handle').inputValue()).toBe(`@${account.handle}`);
  expect(await page.getByLabel(/^Server \(PDS\) URL/).inputValue()).toBe(account.pdsUrl);
  // The message has the focus (given a frame after it shows); the field to fix is just before it.
  await waitForFocus(page.getByRole('alert').filter({ hasText: 'That handle and app password were not accepted' }));
  await tabTo(page, 'App password', { backwards: true, maxTabs: 3 });
  await page.keyboard.press('ControlOrMeta+A');
  await page.keyboard.type(account.appPassword);
  await page.keyboard.press('Enter');

  await page.getByRole('status').filter({ hasText: 'is connected.' }).waitFor();
  const channels = (await call(`${service.api}/integrations`, { key: ws.apiKey })).json;
  expect(channels).toHaveLength(1);
  expect(channels[0]).toMatchObject({ platform: 'BLUESKY', tokenStatus: 'VALID' });
  const card = page.getByRole('listitem').filter({ has: page.getByRole('heading', { name: channels[0].name }) });
  await card.getByText('Connected', { exact: true }).waitFor();
  await card.getByText('Bluesky', { exact: true }).waitFor();
  await screenshot(page, 'channels-connected');
  await checkAccessibility(page, 'the channels page with a channel');
  expect(pageErrors(page)).toEqual([]);
});

test('a channel’s connection is checked, then it is disconnected after a confirmation (keyboard only)', async () => {
  await page.goto('/channels');
  const [channel] = (await call(`${service.api}/integrations`, { key: ws.apiKey })).json;
  await page.getByRole('heading', { name: channel.name, level: 3 }).waitFor();

  await tabTo(page, `Check connection of ${channel.name}`);
  await page.keyboard.press('Enter');
  await page.getByRole('status').filter({ hasText: /^Checked .*: connected\.$/ }).waitFor();

  const disconnect = page.getByRole('button', { name: `Disconnect ${channel.name}` });
  await tabTo(page, disconnect);
  await page.keyboard.press('Enter');
  const dialog = page.getByRole('dialog', { name: `Disconnect ${channel.name}?` });
  await dialog.waitFor();
  await checkAccessibility(page, 'the disconnect confirmation');
  await screenshot(page, 'channels-disconnect-dialog');
  await page.keyboard.press('Escape');
  await dialog.waitFor({ state: 'hidden' });
  await waitForFocus(disconnect);
  await page.keyboard.press('Enter');
  await dialog.waitFor();
  await tabTo(page, 'Disconnect', { maxTabs: 3 });
  await page.keyboard.press('Enter');
  await dialog.waitFor({ state: 'hidden' });
  await page.getByText('Not connected', { exact: true }).waitFor();
  const after = (await call(`${service.api}/integrations`, { key: ws.apiKey })).json.find((item: { id: string }) => item.id === channel.id);
  expect(after.tokenStatus).toBe('MISSING');
  expect(pageErrors(page)).toEqual([]);
});

test('LinkedIn is offered only when the server has a LinkedIn app; until then the page names the settings it needs', async () => {
  await page.goto('/channels');
  const section = page.getByRole('region', { name: 'Connect a LinkedIn account' });
  await section.getByText('LinkedIn cannot be connected on this server yet.').waitFor();
  // What GET /platforms says: the settings, the redirect URL to register in the app, and where the docs say more.
  expect(await section.locator('code').allTextContents()).toEqual([
    'LINKEDIN_CLIENT_ID',
    'LINKEDIN_CLIENT_SECRET',
    `${service.base}/oauth/linkedin/callback`,
    'docs/publishing.md',
    'README.md',
  ]);
  expect(await page.getByRole('button', { name: 'Continue to LinkedIn' }).count()).toBe(0);
  // Mastodon needs no setting: its section asks for the member's server.
  const mastodon = page.getByRole('region', { name: 'Connect a Mastodon account' });
  await mastodon.getByLabel('Your server').waitFor();
  await mastodon.getByRole('button', { name: 'Continue to your Mastodon server' }).waitFor();
  expect(await mastodon.locator('code').count()).toBe(0);
  await checkAccessibility(page, 'the channels page on a server without a LinkedIn app');
  await screenshot(page, 'channels-linkedin-not-configured');

  // The same server given a LinkedIn app's client (what LINKEDIN_CLIENT_ID and LINKEDIN_CLIENT_SECRET set at start).
  const { linkedin } = service.service.core.app.config;
  Object.assign(linkedin, { clientId: 'postwise-client', clientSecret: 'postwise-secret' });
  try {
    // LinkedIn's consent page is answered here: the test reaches no network.
    await page.route(`${linkedin.authUrl}/authorization?**`, (route) => route.fulfill({ contentType: 'text/html', body: '<title>LinkedIn</title>' }));
    await page.reload();
    const button = section.getByRole('button', { name: 'Continue to LinkedIn' });
    await tabTo(page, button);
    expect(await section.getByText('cannot be connected').count()).toBe(0);
    await page.keyboard.press('Enter');
    await page.waitForURL((url) => url.href.startsWith(`${linkedin.authUrl}/authorization?`));
    expect(new URL(page.url()).searchParams.get('client_id')).toBe('postwise-client');
  } finally {
    Object.assign(linkedin, { clientId: undefined, clientSecret: undefined });
    await page.unrouteAll();
  }
  expect(pageErrors(page)).toEqual([]);
});
