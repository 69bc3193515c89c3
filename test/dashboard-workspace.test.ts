import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { checkAccessibility, DESKTOP, launchBrowser, pageErrors, screenshot, signedInOwner, signIn, tabTo, waitForFocus } from './support/browser.js';
import { startTestService, type TestService, type Workspace } from './support/service.js';

/**
 * The workspace's default languages in a real browser, by keyboard alone: chosen by name (in the browser's own
 * language) from a list, or by tag; saved as BCP 47 tags; a tag the registry does not know refused by the API and
 * pointed at; and the same languages named in German for a browser set to German.
 */
let service: TestService;
let ws: Workspace;
let browser: Browser;
let page: Page;
let credentials: { email: string; password: string };

beforeAll(async () => {
  [service, browser] = await Promise.all([startTestService(), launchBrowser()]);
  ws = await service.workspace({ workspaceName: 'Languages', ownerName: 'Ada Lovelace' });
  const signedIn = await signedInOwner(browser, service, ws);
  ({ page } = signedIn);
  credentials = { email: signedIn.email, password: signedIn.password };
});

afterAll(async () => {
  await browser?.close();
  await service?.stop();
});

const chosen = (target: Page) => target.getByRole('list', { name: 'Chosen languages' }).getByRole('listitem');

test('languages chosen by name and by tag, an unregistered tag refused by the API and removed, then saved as tags (keyboard only)', async () => {
  await page.goto('/settings/workspace');
  await page.getByRole('heading', { name: 'Workspace settings', level: 1 }).waitFor();
  const picker = page.getByRole('group', { name: 'Default languages of Bluesky and Mastodon posts' });
  await picker.getByText('None chosen.').waitFor();
  await checkAccessibility(page, 'the settings with no default language');

  // By name: type-ahead in the list, as a select takes it.
  const select = page.getByLabel('Add a language');
  await tabTo(page, 'Add a language', { maxTabs: 60 });
  await page.keyboard.type('French');
  await expect.poll(() => select.inputValue()).toBe('fr');
  await tabTo(page, 'Add language', { maxTabs: 2 });
  await page.keyboard.press('Enter');
  await chosen(page).filter({ hasText: 'French' }).waitFor();
  await page.getByRole('status').filter({ hasText: 'French added.' }).waitFor();
  await waitForFocus(select);
  // A language chosen is not offered again.
  expect(await select.locator('option[value="fr"]').isDisabled()).toBe(true);

  // By tag, written any case: kept as BCP 47 writes it, named by the browser.
  await tabTo(page, 'Or a language tag', { maxTabs: 3 });
  await page.keyboard.type('pt-br');
  await page.keyboard.press('Enter');
  await chosen(page).filter({ hasText: 'Brazilian Portuguese' }).waitFor();
  expect(await page.locator('[data-language="pt-BR"] code').textContent()).toBe('pt-BR');
  // The same again, and a malformed one, are said in words; nothing is added.
  await page.keyboard.type('PT-BR');
  await page.keyboard.press('Enter');
  await page.getByText('Brazilian Portuguese (pt-BR) is chosen already').waitFor();
  await page.keyboard.press('ControlOrMeta+A');
  await page.keyboard.type('pt-');
  await page.keyboard.press('Enter');
  await page.getByText('“pt-” is not a language tag: use one such as gsw, pt-BR or zh-Hant').waitFor();
  expect(await chosen(page).count()).toBe(2);

  // Well-formed, but no registered language: the browser cannot name it, and the API refuses it.
  await page.keyboard.press('ControlOrMeta+A');
  await page.keyboard.type('klingon');
  await page.keyboard.press('Enter');
  const removeKlingon = page.getByRole('button', { name: 'Remove klingon' });
  await waitForFocus(removeKlingon); // the third: the add controls give way to the limit
  await picker.getByText('3 languages chosen, the most a post carries').waitFor();
  expect(await page.getByLabel('Add a language').count()).toBe(0);
  await screenshot(page, 'workspace-languages-three');
  await tabTo(page, 'Save settings');
  await page.keyboard.press('Enter');
  await picker.locator('.field-error').filter({ hasText: 'klingon is not a registered language' }).waitFor();
  // The focus is on the language the API refused, whose Remove button the message describes.
  await waitForFocus(removeKlingon);
  expect(await removeKlingon.getAttribute('aria-invalid')).toBe('true');
  await checkAccessibility(page, 'the settings with a language the API refused');
  expect((await ws.admin('getWorkspace')).languages).toEqual([]);
  await page.keyboard.press('Enter');
  await page.getByRole('status').filter({ hasText: 'klingon removed.' }).waitFor();
  await waitForFocus(page.getByRole('button', { name: 'Remove Brazilian Portuguese' }));

  await tabTo(page, 'Save settings');
  await page.keyboard.press('Enter');
  await page.getByRole('status').filter({ hasText: 'Settings saved.' }).waitFor();
  expect((await ws.admin('getWorkspace')).languages).toEqual(['fr', 'pt-BR']);
  await checkAccessibility(page, 'the settings with two default languages');
  await screenshot(page, 'workspace-languages-saved');

  // Removing the last ones by keyboard: the focus goes back to the list to choose from.
  await tabTo(page, 'Remove French', { backwards: true });
  await page.keyboard.press('Enter');
  await waitForFocus(page.getByRole('button', { name: 'Remove Brazilian Portuguese' }));
  await page.keyboard.press('Enter');
  await waitForFocus(page.getByLabel('Add a language'));
  await picker.getByText('None chosen.').waitFor();
  expect(pageErrors(page)).toEqual([]);
});

test('the languages are named in the browser\'s own language, and saved as the same tags', async () => {
  await ws.admin('updateWorkspaceSettings', { languages: ['fr', 'pt-BR'] });
  const context = await browser.newContext({ baseURL: service.base, viewport: DESKTOP, locale: 'de-DE', timezoneId: 'UTC', reducedMotion: 'reduce' });
  try {
    const german = await context.newPage();
    await signIn(german, service.base, credentials);
    await german.goto('/settings/workspace');
    await german.getByRole('heading', { name: 'Workspace settings', level: 1 }).waitFor();
    await chosen(german).first().waitFor();
    expect(await chosen(german).locator('.language-name').allTextContents()).toEqual(['Französisch', 'Portugiesisch (Brasilien)']);
    // The list is in German too, in German order: "Deutsch" among the D's.
    const names = await german.getByLabel('Add a language').locator('option').allTextContents();
    expect(names).toContain('Deutsch (de)');
    expect(names.indexOf('Deutsch (de)')).toBeLessThan(names.indexOf('Englisch (en)'));
    await german.getByRole('button', { name: 'Save settings' }).click();
    await german.getByRole('status').filter({ hasText: 'Settings saved.' }).waitFor();
    expect((await ws.admin('getWorkspace')).languages).toEqual(['fr', 'pt-BR']);
  } finally {
    await context.close();
  }
});
