import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import {
  checkAccessibility,
  launchBrowser,
  newPage,
  pageErrors,
  PHONE,
  pressMovingFocus,
  screenshot,
  setOwnerPassword,
  setupLink,
  signIn,
  tabTo,
} from './support/browser.js';
import { call, startTestService, type TestService, type Workspace } from './support/service.js';

/**
 * Every page of the dashboard, at a desktop's width and a phone's: no serious or critical accessibility violation
 * (axe-core, WCAG 2 A and AA), nothing wider than the phone's screen, a screenshot of each (test-artifacts/screenshots),
 * no script error. Then the workspace settings and the skip link, by keyboard alone. The other pages' keyboard tests
 * are with their features (dashboard-auth, -api-keys, -members, -channels).
 */
let service: TestService;
let ws: Workspace;
let browser: Browser;
let credentials: { email: string; password: string };
let invitationUrl: string;

beforeAll(async () => {
  [service, browser] = await Promise.all([startTestService(), launchBrowser()]);
  ws = await service.workspace({ workspaceName: 'Pages', ownerName: 'Ada Lovelace' });
  credentials = await setOwnerPassword(service, ws);
  // Something on every page: a channel (never connected), a second key, a pending invitation.
  await ws.admin('createIntegration', { platform: 'BLUESKY', name: 'Sky' });
  await ws.admin('createApiKey', { name: 'Reporting' });
  invitationUrl = (await ws.admin('createInvitation', { email: 'grace@example.com' })).url;
  // And some calls to chart.
  for (let i = 0; i < 3; i++) await call(`${service.api}/users/me`, { key: ws.apiKey });
  await call(`${service.api}/posts/nope`, { key: ws.apiKey });
});

afterAll(async () => {
  await browser?.close();
  await service?.stop();
});

const SIGNED_IN = [
  { path: '/channels', heading: 'Channels', name: 'channels' },
  { path: '/usage', heading: 'Usage', name: 'usage' },
  { path: '/settings/api-keys', heading: 'Developer API', name: 'api-keys' },
  { path: '/settings/members', heading: 'Members', name: 'members' },
  { path: '/settings/workspace', heading: 'Workspace settings', name: 'workspace' },
  { path: '/approvals', heading: 'Approvals', name: 'approvals' },
  { path: '/recycling', heading: 'Recycling', name: 'recycling' },
];

/** Opens `path` and waits until the page has loaded what it shows (no progress indicator left). */
async function open(page: Page, path: string, heading: string | RegExp) {
  await page.goto(path);
  await page.getByRole('heading', { name: heading, level: 1 }).waitFor();
  await page.locator('progress').first().waitFor({ state: 'detached' });
}

/** Nothing sticks out sideways at a phone's width (the page scrolls down only). */
async function fitsTheWidth(page: Page, label: string) {
  const { scrollWidth, screenWidth } = await page.evaluate(() => ({ scrollWidth: document.documentElement.scrollWidth, screenWidth: window.innerWidth }));
  expect(scrollWidth, `${label}: ${scrollWidth} px wide on a ${screenWidth} px screen`).toBeLessThanOrEqual(screenWidth);
}

for (const size of ['desktop', 'phone'] as const) {
  describe(`at ${size === 'phone' ? `a phone’s width (${PHONE.width} px)` : 'a desktop’s width'}`, () => {
    test('the pages before sign-in: sign-in, first-run setup, invitation', async () => {
      const page = await newPage(browser, { size, baseURL: service.base });
      const pages = [
        { url: '/login', heading: 'Sign in', name: 'login' },
        { url: await setupLink(service, ws), heading: 'Set up Postwise', name: 'setup' },
        { url: invitationUrl, heading: 'Join Pages', name: 'invite' },
      ];
      for (const { url, heading, name } of pages) {
        await open(page, url, heading);
        await checkAccessibility(page, `${name} (${size})`);
        if (size === 'phone') await fitsTheWidth(page, name);
        await screenshot(page, `${name}-${size}`);
      }
      expect(pageErrors(page)).toEqual([]);
      await page.close();
    });

    test('the signed-in pages: channels, usage, Developer API, members, settings', async () => {
      const page = await newPage(browser, { size, baseURL: service.base });
      await signIn(page, service.base, credentials);
      for (const { path, heading, name } of SIGNED_IN) {
        await open(page, path, heading);
        await checkAccessibility(page, `${name} (${size})`);
        if (size === 'phone') await fitsTheWidth(page, name);
        await screenshot(page, `${name}-${size}`);
      }
      expect(pageErrors(page)).toEqual([]);
      await page.close();
    });
  });
}

describe('keyboard', () => {
  test('the skip link is the first stop and moves the focus to the page', async () => {
    const page = await newPage(browser, { baseURL: service.base });
    await signIn(page, service.base, credentials);
    await open(page, '/settings/members', 'Members');
    // The first press lands on it (each press waits for the focus to move before reading where it went).
    await tabTo(page, 'Skip to the page', { maxTabs: 1 });
    await page.keyboard.press('Enter');
    // The next Tab goes into the page, past the navigation.
    await pressMovingFocus(page, 'Tab');
    expect(await page.evaluate(() => Boolean(document.activeElement?.closest('main')))).toBe(true);
    // And the navigation is reached by Tab, and followed by Enter.
    await tabTo(page, 'Usage', { backwards: true });
    await page.keyboard.press('Enter');
    await page.waitForURL('**/usage');
    await page.getByRole('heading', { name: 'Usage', level: 1 }).waitFor();
    await page.close();
  });

  test('the workspace settings: a new name, another posting time, saved (keyboard only)', async () => {
    const page = await newPage(browser, { baseURL: service.base });
    await signIn(page, service.base, credentials);
    await open(page, '/settings/workspace', 'Workspace settings');
    const before = await ws.admin('getWorkspace');

    await tabTo(page, 'Workspace name');
    await page.keyboard.press('ControlOrMeta+A');
    await page.keyboard.type('Pages & Co');
    await tabTo(page, /^Add a time to window 1$/);
    await page.keyboard.press('Enter');
    await tabTo(page, 'Save settings');
    await page.keyboard.press('Space');
    await page.getByRole('status').filter({ hasText: 'Settings saved.' }).waitFor();
    // The header shows the new name at once.
    await page.getByRole('banner').getByText('Pages & Co').waitFor();

    const after = await ws.admin('getWorkspace');
    expect(after.name).toBe('Pages & Co');
    expect(after.postingWindows[0].times).toHaveLength(before.postingWindows[0].times.length + 1);
    await screenshot(page, 'workspace-saved');
    expect(pageErrors(page)).toEqual([]);
    await page.close();
  });
});
