import type { Browser, Locator, Page } from 'playwright-core';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { launchBrowser, pageErrors, signedInOwner } from './support/browser.js';
import { call, startTestService, type TestService, type Workspace } from './support/service.js';

/**
 * Words for people: a form's refusal is a sentence under the field it is about (the API's message keeps the field's
 * path, the numbers and the unit for programs), with no field path, platform code or unit of a program on the page; it
 * goes as soon as that field changes, and the next refusal shows again.
 */
let service: TestService;
let ws: Workspace;
let browser: Browser;
let page: Page;
let channel: { id: string; name: string };

beforeAll(async () => {
  [service, browser] = await Promise.all([startTestService(), launchBrowser()]);
  ws = await service.workspace({ workspaceName: 'Words' });
  channel = await ws.admin('createIntegration', { platform: 'BLUESKY', name: 'team.example' });
  ({ page } = await signedInOwner(browser, service, ws));
});

afterAll(async () => {
  await browser?.close();
  await service?.stop();
});

/** What a program reads in a message and a person should not: a field's path, a platform's code, a unit counted. */
const FOR_PROGRAMS = /body\.|query\.|path\.|rows\[|shared\.|\b[a-z]+[A-Z]\w*(?:\.\w+|\[\d+\])*: |BLUESKY|LINKEDIN|graphemes|UTF-(?:8|16)/;

/** Every refusal the page shows: under a field, or for the whole form. */
const refusalsOn = (target: Page) => target.locator('.field-error, [role="alert"], p.error').allInnerTexts();

/** The sentence under `field` (its `aria-describedby` names it), once there is one. */
async function errorUnder(field: Locator): Promise<Locator> {
  const id = await field.getAttribute('id');
  const under = page.locator(`[id="${id}-error"]`);
  await under.waitFor();
  expect((await field.getAttribute('aria-describedby'))?.split(' ')).toContain(`${id}-error`);
  expect(await field.getAttribute('aria-invalid')).toBe('true');
  return under;
}

/** The refusal under `field` goes when the field changes, and `aria-invalid` with it. */
async function goesOnChange(field: Locator, under: Locator, typed = 'x') {
  await field.press('End');
  await field.pressSequentially(typed);
  await under.waitFor({ state: 'detached' });
  expect(await field.getAttribute('aria-invalid')).toBeNull();
}

test('a post too long for Bluesky: the sentence under the text, with the numbers the API answers and no path', async () => {
  await page.goto('/compose');
  await page.getByRole('checkbox', { name: `${channel.name} (Bluesky)`, exact: true }).check();
  const text = page.getByLabel('Text', { exact: true });
  await text.fill('x'.repeat(325));
  await page.getByRole('button', { name: 'Schedule at the next free slot' }).click();
  const sentence = `Too long for Bluesky (${channel.name}): 325 of 300 characters`;
  const under = await errorUnder(text);
  expect(await under.innerText()).toBe(sentence);
  await page.getByRole('alert').filter({ hasText: 'Not sent' }).getByText(sentence, { exact: true }).waitFor();
  for (const said of await refusalsOn(page)) expect(said).not.toMatch(FOR_PROGRAMS);
  // The API says the same, with the field and the unit counted for a program.
  const refused = await call(`${service.api}/posts`, {
    method: 'POST',
    key: ws.apiKey,
    body: { rows: [{ content: 'x'.repeat(325) }], shared: { selectedIntegrations: [channel.id] }, postAction: 'DRAFT' },
  });
  expect(refused.json).toEqual({ code: 'CONTENT_TOO_LONG', message: `rows[0].content: ${sentence} (graphemes)` });
  // Shortened to the limit, the sentence goes.
  await text.fill('x'.repeat(300));
  await under.waitFor({ state: 'detached' });
  expect(pageErrors(page)).toEqual([]);
});

test('every form says its refusal under the field, in words, until the field changes', async () => {
  // Developer API: a name of spaces only.
  await page.goto('/settings/api-keys');
  await page.getByRole('button', { name: 'Create a key' }).click();
  const keyName = page.getByLabel('Name', { exact: true });
  await keyName.fill('   ');
  await page.getByRole('button', { name: 'Create key' }).click();
  const keyError = await errorUnder(keyName);
  expect(await keyError.innerText()).toBe('Must not be empty');
  for (const said of await refusalsOn(page)) expect(said).not.toMatch(FOR_PROGRAMS);
  await goesOnChange(keyName, keyError);

  // Members: an address zod does not take as one.
  await page.goto('/settings/members');
  await page.getByRole('button', { name: 'Invite someone' }).click();
  const email = page.getByLabel('Email', { exact: true });
  await email.fill('grace@example');
  await page.getByRole('button', { name: 'Invite', exact: true }).click();
  const emailError = await errorUnder(email);
  expect(await emailError.innerText()).toBe('Must be an email address');
  for (const said of await refusalsOn(page)) expect(said).not.toMatch(FOR_PROGRAMS);
  await goesOnChange(email, emailError, '.com');

  // Workspace settings: the name emptied (spaces are trimmed before it is sent).
  await page.goto('/settings/workspace');
  const workspaceName = page.getByLabel('Workspace name', { exact: true });
  await workspaceName.fill(' ');
  await page.getByRole('button', { name: 'Save settings' }).click();
  const nameError = await errorUnder(workspaceName);
  expect(await nameError.innerText()).toBe('Must not be empty');
  for (const said of await refusalsOn(page)) expect(said).not.toMatch(FOR_PROGRAMS);
  await goesOnChange(workspaceName, nameError, 'Words');
  // The same refusal again, after a new submit, shows again.
  await workspaceName.fill(' ');
  await page.getByRole('button', { name: 'Save settings' }).click();
  await errorUnder(workspaceName);
  expect(pageErrors(page)).toEqual([]);
});
