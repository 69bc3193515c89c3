import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { checkAccessibility, launchBrowser, pageErrors, screenshot, signedInOwner, tabTo, waitForFocus } from './support/browser.js';
import { call, eventually, startTestService, type TestService, type Workspace } from './support/service.js';

/**
 * The Developer API page in a real browser: a key created (by keyboard alone), its value shown once, used over REST,
 * seen on the usage page, then revoked and refused at the next request.
 */
let service: TestService;
let ws: Workspace;
let browser: Browser;
let page: Page;

beforeAll(async () => {
  [service, browser] = await Promise.all([startTestService(), launchBrowser()]);
  ws = await service.workspace({ workspaceName: 'Keys', ownerName: 'Ada Lovelace' });
  ({ page } = await signedInOwner(browser, service, ws));
});

afterAll(async () => {
  await browser?.close();
  await service?.stop();
});

/** A day a year from now, as the date field takes it typed (en-US: MMDDYYYY) and as the API answers it. */
function nextYear() {
  const day = new Date(Date.now() + 365 * 86_400_000);
  const [year, month, date] = [day.getUTCFullYear(), String(day.getUTCMonth() + 1).padStart(2, '0'), String(day.getUTCDate()).padStart(2, '0')];
  return { typed: `${month}${date}${year}`, iso: `${year}-${month}-${date}T23:59:59.999Z` };
}

let key: string;
const NAME = 'CI publisher';

test('a key is created by keyboard alone, with an expiry; its value is shown once, with a warning, and works over REST', async () => {
  await page.goto('/settings/api-keys');
  await page.getByRole('heading', { name: 'Developer API', level: 1 }).waitFor();
  await page.getByRole('table').waitFor();

  // The form is folded behind its button, which opens it with the focus on its first field.
  await tabTo(page, 'Create a key');
  await page.keyboard.press('Enter');
  await waitForFocus(page.getByLabel('Name', { exact: true }));
  await page.keyboard.type(NAME);
  await tabTo(page, /^Expires after/);
  const expiry = nextYear();
  await page.keyboard.type(expiry.typed);
  await tabTo(page, 'Create key');
  await page.keyboard.press('Enter');

  const field = page.getByLabel(`API key “${NAME}”`);
  await field.waitFor();
  await page.getByText('Copy this key now: it will not be shown again.').waitFor();
  // The focus is on the value, ready to copy.
  await waitForFocus(field);
  key = await field.inputValue();
  expect(key).toMatch(/\S{20,}/);
  await screenshot(page, 'api-keys-new-key');
  await checkAccessibility(page, 'the Developer API page showing a new key');

  // The MCP configuration now carries the new key.
  expect(await page.getByLabel('MCP client configuration').inputValue()).toContain(key);

  // GET /api-keys is internal (the dashboard's, not a key's): asked as the admin command does.
  const listed = (await ws.admin('listApiKeys')).items.find((item: { name: string }) => item.name === NAME);
  expect(listed).toMatchObject({ status: 'active', expiresAt: expiry.iso, createdBy: { name: 'Ada Lovelace' } });
  expect(key.startsWith(listed.prefix)).toBe(true);

  // Used over REST, as any program would.
  for (let i = 0; i < 3; i++) expect((await call(`${service.api}/users/me`, { key })).status).toBe(200);
  expect((await call(`${service.api}/posts`, { key })).status).toBe(200);

  // Once dismissed, the value is gone from the page, and a reload does not bring it back.
  await tabTo(page, 'I have copied it');
  await page.keyboard.press('Enter');
  await page.getByLabel(`API key “${NAME}”`).waitFor({ state: 'detached' });
  expect(await page.content()).not.toContain(key);
  await page.reload();
  await page.getByRole('row', { name: new RegExp(NAME) }).waitFor();
  expect(await page.content()).not.toContain(key);
  expect(pageErrors(page)).toEqual([]);
});

test('the list shows the key’s name, prefix, creator, last use, expiry and status', async () => {
  // Usage is written in batches: the last use shows once flushed.
  await eventually(
    async () => (await ws.admin('listApiKeys')).items.find((item: { name: string }) => item.name === NAME).lastUsedAt,
    (lastUsedAt) => lastUsedAt !== null,
  );
  await page.goto('/settings/api-keys');
  const row = page.getByRole('row', { name: new RegExp(NAME) });
  await row.waitFor();
  const cells = await row.getByRole('cell').allInnerTexts();
  const text = (await row.innerText()).replace(/\s+/g, ' ');
  expect(text).toContain(key.slice(0, 8));
  expect(text).toContain('Ada Lovelace');
  expect(text).toContain('Active');
  expect(text).not.toMatch(/Last used\s*Never/);
  expect(cells.some((cell) => /Never/.test(cell))).toBe(false); // used, and expiring
  await screenshot(page, 'api-keys-list');
});

test('the usage page shows the calls just made, in words and day by day (keyboard only)', async () => {
  // The numbers GET /usage answers (asked with the page's session, whose own calls are not counted), once the
  // batch holding the 4 calls with the new key is written.
  const asSession = (path: string) => page.evaluate((url) => fetch(url).then((answer) => answer.json()), path);
  const usage = await eventually(() => asSession('/api/v1/usage?days=7'), (answer) => answer.api.calls >= 4);
  expect(usage.api.calls).toBeGreaterThanOrEqual(4);
  const daily = (await asSession('/api/v1/usage/daily?days=7')).items;

  await page.goto('/usage');
  await page.getByRole('heading', { name: 'Usage', level: 1 }).waitFor();
  await page.getByRole('img', { name: /^Calls per day over \d+ days/ }).waitFor();
  // The period, by keyboard: into the radio group (at the checked one), then to 7 days.
  await tabTo(page, '30 days');
  await page.keyboard.press('ArrowLeft');
  await page.waitForURL('**/usage?days=7');
  // The chart has a bar per day of GET /usage/daily (a 7-day window touches 8 calendar days).
  await page.getByRole('img', { name: new RegExp(`^Calls per day over ${daily.length} days`) }).waitFor();
  const totals = (await page.locator('dl').first().innerText()).replace(/\s+/g, ' ');
  expect(totals).toContain(`API (REST) ${usage.api.calls} calls, ${usage.api.errors} errors`);
  expect(await page.getByRole('img', { name: /^Calls per day/ }).textContent()).toContain(`${usage.api.calls + usage.mcp.calls} calls`);

  // The same numbers, day by day, behind a disclosure opened with the keyboard.
  await tabTo(page, 'The numbers, day by day');
  await page.keyboard.press('Enter');
  const table = page.getByRole('table').filter({ has: page.getByRole('columnheader', { name: 'API calls' }) });
  await table.waitFor();
  const rows = await table.getByRole('row').all();
  expect(rows.length).toBe(1 + daily.length);
  let sum = 0;
  for (const row of rows.slice(1)) sum += Number((await row.getByRole('cell').first().innerText()).replace(/\D/g, ''));
  expect(sum).toBe(usage.api.calls);
  await screenshot(page, 'usage-after-calls');
  await checkAccessibility(page, 'the usage page with its table open');
});

test('revoking asks first (Escape cancels), then takes effect at the next request (keyboard only)', async () => {
  await page.goto('/settings/api-keys');
  const revokeButton = page.getByRole('button', { name: `Revoke ${NAME}` });
  await revokeButton.waitFor();
  expect((await call(`${service.api}/users/me`, { key })).status).toBe(200);

  await tabTo(page, `Revoke ${NAME}`);
  await page.keyboard.press('Enter');
  const dialog = page.getByRole('dialog', { name: `Revoke the key “${NAME}”?` });
  await dialog.waitFor();
  // The safe choice has the focus; Escape closes and gives the focus back.
  await waitForFocus(dialog.getByRole('button', { name: 'Cancel' }));
  await checkAccessibility(page, 'the revoke confirmation');
  await screenshot(page, 'api-keys-revoke-dialog');
  await page.keyboard.press('Escape');
  await dialog.waitFor({ state: 'hidden' });
  await waitForFocus(revokeButton);
  expect((await call(`${service.api}/users/me`, { key })).status).toBe(200);

  await page.keyboard.press('Space');
  await dialog.waitFor();
  await tabTo(page, 'Revoke key', { maxTabs: 3 });
  await page.keyboard.press('Enter');
  await dialog.waitFor({ state: 'hidden' });
  await page.getByRole('row', { name: new RegExp(NAME) }).getByText('Revoked').waitFor();

  const refused = await call(`${service.api}/users/me`, { key });
  expect(refused.status).toBe(401);
  expect(refused.json.code).toBe('UNAUTHORIZED');
  // The page's own session is not a key: it goes on working.
  expect(await page.evaluate(() => fetch('/api/v1/users/me').then((answer) => answer.status))).toBe(200);
  expect(pageErrors(page)).toEqual([]);
});
