import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { checkAccessibility, launchBrowser, newContext, pageErrors, screenshot, sessionCookie, signedInOwner, tabTo, waitForFocus } from './support/browser.js';
import { call, startTestService, type TestService, type Workspace } from './support/service.js';

/**
 * Members in a real browser: the owner invites by email (by keyboard alone), the invited person opens the link in a
 * browser of their own, sets a name and a password and makes a key; the owner removes them, and at once their key is
 * refused and their session is over.
 */
let service: TestService;
let ws: Workspace;
let browser: Browser;
let owner: Page;
let guest: BrowserContext;

beforeAll(async () => {
  [service, browser] = await Promise.all([startTestService(), launchBrowser()]);
  ws = await service.workspace({ workspaceName: 'Team', ownerName: 'Ada Lovelace' });
  ({ page: owner } = await signedInOwner(browser, service, ws));
  guest = await newContext(browser, { baseURL: service.base });
});

afterAll(async () => {
  await browser?.close();
  await service?.stop();
});

const EMAIL = 'grace@example.com';
let invitation: string;

test('the owner invites someone by keyboard alone; the one-time link is shown to them, and the invitation is pending', async () => {
  await owner.goto('/settings/members');
  await owner.getByRole('heading', { name: 'Members', level: 1 }).waitFor();
  await owner.getByRole('row', { name: /Ada Lovelace/ }).waitFor();

  await tabTo(owner, 'Invite someone');
  await owner.keyboard.press('Enter');
  await waitForFocus(owner.getByLabel('Email', { exact: true }));
  await owner.keyboard.type(EMAIL);
  await tabTo(owner, 'Invite');
  await owner.keyboard.press('Enter');

  const link = owner.getByLabel(`Invitation link for ${EMAIL}`);
  await link.waitFor();
  await waitForFocus(link);
  await owner.getByText(`send this link to ${EMAIL} yourself`).waitFor();
  invitation = await link.inputValue();
  expect(new URL(invitation).pathname).toBe('/invite');
  expect(new URL(invitation).origin).toBe(service.base);
  await owner.getByRole('row', { name: new RegExp(EMAIL) }).waitFor();
  await screenshot(owner, 'members-invited');
  await checkAccessibility(owner, 'the members page with an invitation link');
  expect(pageErrors(owner)).toEqual([]);
});

let member: Page;
let memberKey: string;

test('the invited person accepts in a browser of their own (keyboard only), is signed in, and makes a key', async () => {
  member = await guest.newPage();
  await member.goto(invitation);
  await member.getByRole('heading', { name: 'Join Team' }).waitFor();
  await member.getByText(`Ada Lovelace invited ${EMAIL} to Team`).waitFor();
  await screenshot(member, 'invite-accepting');
  await checkAccessibility(member, 'the invitation page');

  await tabTo(member, 'Your name');
  await member.keyboard.type('Grace Hopper');
  await tabTo(member, 'Password');
  await member.keyboard.type('a compiler of my own');
  await tabTo(member, 'Password again');
  await member.keyboard.type('a compiler of my own');
  await tabTo(member, 'Join Team');
  await member.keyboard.press('Enter');
  await member.waitForURL('**/channels');
  const session = await member.evaluate(() => fetch('/auth/session').then((answer) => answer.json()));
  expect(session).toMatchObject({ user: { name: 'Grace Hopper', email: EMAIL }, workspace: { id: ws.workspaceId }, role: 'member' });

  // Their own key, made on the Developer API page.
  await member.goto('/settings/api-keys');
  await member.getByRole('button', { name: 'Create a key' }).click();
  await member.getByLabel('Name', { exact: true }).fill('Grace’s script');
  await member.getByRole('button', { name: 'Create key' }).click();
  const field = member.getByLabel('API key “Grace’s script”');
  await field.waitFor();
  memberKey = await field.inputValue();
  expect((await call(`${service.api}/users/me`, { key: memberKey })).status).toBe(200);
  // Managing members is the owner's: a member sees the list, and is offered neither inviting nor removing.
  await member.goto('/settings/members');
  await member.getByText('Only the workspace\'s owner can invite and remove members.').waitFor();
  expect(await member.getByRole('button', { name: /^Remove/ }).count()).toBe(0);
  expect(await member.getByRole('button', { name: 'Invite' }).count()).toBe(0);
  // Nor the workspace's settings: they are shown, and cannot be changed.
  await member.goto('/settings/workspace');
  await member.getByText('Only the workspace\'s owner can change these settings.').waitFor();
  expect(await member.getByLabel('Workspace name').isDisabled()).toBe(true);
  expect(await member.getByRole('button', { name: 'Save settings' }).isDisabled()).toBe(true);
  await checkAccessibility(member, 'the settings page as a member');

  // The link was for one use.
  expect((await call(`${service.base}/auth/invitation?token=${new URL(invitation).searchParams.get('token')}`)).json.code).toBe('INVALID_LINK');
  expect(pageErrors(member)).toEqual([]);
});

test('the owner removes the member (keyboard only, the consequences stated): their key fails at once, and their session is over', async () => {
  await owner.goto('/settings/members');
  const remove = owner.getByRole('button', { name: 'Remove Grace Hopper' });
  await remove.waitFor();
  const memberCookie = await sessionCookie(member);
  expect((await call(`${service.api}/users/me`, { headers: { cookie: `postwise_session=${memberCookie}` } })).status).toBe(200);

  await tabTo(owner, 'Remove Grace Hopper');
  await owner.keyboard.press('Enter');
  const dialog = owner.getByRole('dialog', { name: 'Remove Grace Hopper from Team?' });
  await dialog.waitFor();
  await dialog.getByText('every API key they hold for it is revoked').waitFor();
  await dialog.getByText('their signed-in dashboard sessions end').waitFor();
  await checkAccessibility(owner, 'the remove-member confirmation');
  await screenshot(owner, 'members-remove-dialog');
  await tabTo(owner, 'Remove member', { maxTabs: 3 });
  await owner.keyboard.press('Enter');
  await dialog.waitFor({ state: 'hidden' });
  await owner.getByRole('row', { name: /Grace Hopper/ }).waitFor({ state: 'detached' });

  // At once: the key...
  const refused = await call(`${service.api}/users/me`, { key: memberKey });
  expect(refused.status).toBe(401);
  // ...and the session, whether its cookie is used from outside or the page asks again.
  expect((await call(`${service.api}/users/me`, { headers: { cookie: `postwise_session=${memberCookie}` } })).status).toBe(401);
  expect(await member.evaluate(() => fetch('/auth/session').then((answer) => answer.status))).toBe(401);
  await member.goto('/settings/api-keys');
  await member.waitForURL('**/login?next=%2Fsettings%2Fapi-keys');
  expect(pageErrors(owner)).toEqual([]);
});
