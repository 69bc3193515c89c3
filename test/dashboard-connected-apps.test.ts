import { randomBytes } from 'node:crypto';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { checkAccessibility, launchBrowser, newPage, pageErrors, screenshot, signedInOwner, signIn, tabTo, waitForFocus } from './support/browser.js';
import { PASSWORD, signedIn } from './support/http-session.js';
import { eventually, startTestService, type TestService, type Workspace } from './support/service.js';

/**
 * The Connected apps section of the Developer API page in a real browser: its empty state, then an app (written in
 * SQL as the consent step writes one) with what it reaches and may do, its approval rule changed by keyboard and
 * kept, and Disconnect, confirmed, deleting it and its tokens. A member sees another's app without the controls.
 */
let service: TestService;
let ws: Workspace;
let browser: Browser;
let page: Page;
let memberId: string;
let memberEmail: string;

beforeAll(async () => {
  [service, browser] = await Promise.all([startTestService(), launchBrowser()]);
  ws = await service.workspace({ workspaceName: 'Apps', ownerName: 'Ada Lovelace' });
  memberEmail = `grace-${ws.workspaceId.slice(0, 8)}@example.org`;
  memberId = (await ws.admin('addMember', { email: memberEmail, name: 'Grace Hopper' })).userId;
  await signedIn(service, ws.workspaceId, memberId); // sets the member's password
  ({ page } = await signedInOwner(browser, service, ws));
});

afterAll(async () => {
  await browser?.close();
  await service?.stop();
});

const db = () => service.service.core.db;

/** A connection as the consent step writes it (src/http/oauth.ts), with an access token of it. */
async function connect(userId: string, clientName: string, scopes: string[], resource = 'mcp'): Promise<string> {
  const id = randomBytes(18).toString('base64url');
  await db()`
    INSERT INTO oauth_connections (id, organization_id, user_id, client_id, client_name, redirect_host, resource, scopes, expires_at)
    VALUES (${id}, ${ws.workspaceId}, ${userId}, ${`https://${id}.example/client.json`}, ${clientName}, 'chat.example', ${`${service.base}/${resource}`},
      ${scopes}, now() + interval '1 year')`;
  await db()`
    INSERT INTO oauth_artifacts (id_hash, kind, connection_id, payload, expires_at)
    VALUES (${randomBytes(32)}, 'AccessToken', ${id}, ${db().json({ grantId: id })}, now() + interval '1 hour')`;
  return id;
}

const ruleOf = async (id: string) => (await db()<{ postsNeedApproval: boolean }[]>`SELECT posts_need_approval FROM oauth_connections WHERE id = ${id}`)[0]?.postsNeedApproval;

async function openPage(on = page) {
  await on.goto('/settings/api-keys');
  await on.getByRole('heading', { name: 'Connected apps', level: 2 }).waitFor();
  await on.getByRole('status').filter({ hasText: 'Loading the connected apps' }).waitFor({ state: 'detached' });
}

let claude: string;

test('with no app connected, the section says how one gets connected, naming this server’s MCP URL', async () => {
  await openPage();
  await page.getByText(`Apps appear here when someone connects a hosted agent (for example a chat app's custom connector) to ${service.base}/mcp and allows it.`).waitFor();
  await checkAccessibility(page, 'the Developer API page with no connected app');
  expect(pageErrors(page)).toEqual([]);
});

test('an app shows with what it reaches and may do, who connected it and when, and whether its posts wait for approval', async () => {
  claude = await connect(ws.userId, 'Claude', ['posts:read', 'posts:write']);
  await connect(memberId, 'Grace’s agent', ['posts:read', 'media:write'], 'api/v1');
  await openPage();
  const table = page.getByRole('table', { name: 'Apps connected to the workspace, newest first' });
  await table.waitFor();
  const row = table.getByRole('row', { name: /Claude/ });
  const text = (await row.innerText()).replace(/\s+/g, ' ');
  expect(text).toContain('at chat.example');
  expect(text).toContain('MCP');
  expect(text).toContain('Read posts, schedules, tags, channels, events and usage');
  expect(text).toContain('Create, change, delete and reschedule posts');
  expect(text).toMatch(/by Ada Lovelace/);
  expect(text).toContain('Never'); // not used yet
  expect(await row.getByRole('checkbox', { name: 'Posts wait for approval (Claude)' }).isChecked()).toBe(true);

  const other = (await table.getByRole('row', { name: /Grace’s agent/ }).innerText()).replace(/\s+/g, ' ');
  expect(other).toContain('REST API');
  expect(other).toContain('Upload images and import them from links');
  expect(other).toContain('by Grace Hopper');
  await screenshot(page, 'connected-apps-list');
  await checkAccessibility(page, 'the Developer API page with connected apps');
});

test('the approval rule is changed by keyboard, and kept', async () => {
  await openPage();
  const checkbox = page.getByRole('checkbox', { name: 'Posts wait for approval (Claude)' });
  await tabTo(page, 'Posts wait for approval (Claude)');
  await page.keyboard.press('Space');
  await eventually(() => ruleOf(claude), (rule) => rule === false);
  // The focus stays where it was, on the checkbox, now unticked.
  await waitForFocus(checkbox);
  expect(await checkbox.isChecked()).toBe(false);

  await page.reload();
  await page.getByRole('table', { name: 'Apps connected to the workspace, newest first' }).waitFor();
  expect(await checkbox.isChecked()).toBe(false);

  // And back on, with the mouse.
  await checkbox.click();
  await eventually(() => ruleOf(claude), (rule) => rule === true);
  expect(pageErrors(page)).toEqual([]);
});

test('a member sees another member’s app and its rule, without the controls to change it', async () => {
  const memberPage = await newPage(browser, { baseURL: service.base });
  try {
    await signIn(memberPage, service.base, { email: memberEmail, password: PASSWORD });
    await openPage(memberPage);
    const row = memberPage.getByRole('row', { name: /Claude/ });
    await row.waitFor();
    expect((await row.innerText()).replace(/\s+/g, ' ')).toContain('Posts wait for approval');
    expect(await row.getByRole('checkbox').count()).toBe(0);
    expect(await row.getByRole('button', { name: /Disconnect/ }).count()).toBe(0);
    // Their own app has both.
    const own = memberPage.getByRole('row', { name: /Grace’s agent/ });
    await own.getByRole('checkbox', { name: 'Posts wait for approval (Grace’s agent)' }).waitFor();
    await own.getByRole('button', { name: 'Disconnect Grace’s agent' }).waitFor();
    await checkAccessibility(memberPage, 'the Developer API page as a member');
    expect(pageErrors(memberPage)).toEqual([]);
  } finally {
    await memberPage.close();
  }
});

test('Disconnect asks first (Escape cancels), then deletes the app and every token of it (keyboard only)', async () => {
  await openPage();
  const button = page.getByRole('button', { name: 'Disconnect Claude' });
  await button.waitFor();

  await tabTo(page, 'Disconnect Claude');
  await page.keyboard.press('Enter');
  const dialog = page.getByRole('dialog', { name: 'Disconnect “Claude”?' });
  await dialog.waitFor();
  await waitForFocus(dialog.getByRole('button', { name: 'Cancel' }));
  expect((await dialog.innerText()).replace(/\s+/g, ' ')).toContain('connected by Ada Lovelace, is refused from its next request on');
  await checkAccessibility(page, 'the disconnect confirmation');
  await screenshot(page, 'connected-apps-disconnect-dialog');
  await page.keyboard.press('Escape');
  await dialog.waitFor({ state: 'hidden' });
  await waitForFocus(button);
  expect(await ruleOf(claude)).toBe(true);

  await page.keyboard.press('Enter');
  await dialog.waitFor();
  await tabTo(page, 'Disconnect app', { maxTabs: 3 });
  await page.keyboard.press('Enter');
  await dialog.waitFor({ state: 'hidden' });
  await page.getByRole('row', { name: /Claude/ }).waitFor({ state: 'detached' });
  await page.getByRole('row', { name: /Grace’s agent/ }).waitFor();

  expect(await ruleOf(claude)).toBeUndefined();
  const [tokens] = await db()<{ count: number }[]>`SELECT count(*)::int AS count FROM oauth_artifacts WHERE connection_id = ${claude}`;
  expect(tokens!.count).toBe(0);
  expect(pageErrors(page)).toEqual([]);
});
