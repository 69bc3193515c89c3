import events from 'node:events';
import http from 'node:http';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import {
  checkAccessibility,
  launchBrowser,
  newPage,
  pageErrors,
  screenshot,
  sessionCookie,
  setOwnerPassword,
  setupLink,
  signedInOwner,
  tabTo,
  waitForFocus,
} from './support/browser.js';
import { call, startTestService, type TestService, type Workspace } from './support/service.js';

/**
 * Signing in, in a real browser: the first-run setup link, sign-in (a wrong password, then the right one), sign-out,
 * and a forged request from another origin. The setup and sign-in pages are driven by keyboard alone.
 */
let service: TestService;
let first: Workspace;
let browser: Browser;

beforeAll(async () => {
  [service, browser] = await Promise.all([startTestService(), launchBrowser()]);
  // The first workspace, as the first start makes it: its owner has no password yet.
  first = await service.workspace({ workspaceName: 'Acme', ownerName: 'Owner' });
});

afterAll(async () => {
  await browser?.close();
  await service?.stop();
});

describe('first run', () => {
  test('the link the start-up banner prints sets the owner’s name and password and signs them in (keyboard only)', async () => {
    const link = await setupLink(service);
    expect(new URL(link).pathname).toBe('/setup');
    // A browser in Paris: the workspace takes its time zone at setup.
    const page = await newPage(browser, { timeZone: 'Europe/Paris' });
    await page.goto(link);
    await page.getByRole('heading', { name: 'Set up Postwise' }).waitFor();
    // The made-up email of the first start is not offered: the owner gives theirs (the field is required).
    await page.getByLabel('Your name').waitFor();
    expect(await page.getByLabel('Email').inputValue()).toBe('');
    expect(await page.getByLabel('Email').getAttribute('required')).not.toBeNull();
    await screenshot(page, 'setup-first-run');
    await checkAccessibility(page, 'the setup page');

    await tabTo(page, 'Your name');
    await page.keyboard.press('ControlOrMeta+A');
    await page.keyboard.type('Ada Lovelace');
    // The first start's owner has a made-up email: this is where they choose the one they sign in with.
    await tabTo(page, 'Email');
    await page.keyboard.press('ControlOrMeta+A');
    await page.keyboard.type('ada.lovelace@example.com');
    // A short password is refused by the server, the rule said under the field in words (no field path); the error
    // goes the moment the field changes, since it was about what was typed before.
    await tabTo(page, 'Password');
    await page.keyboard.type('short');
    await tabTo(page, 'Password again');
    await page.keyboard.type('short');
    await tabTo(page, 'Save and sign in');
    await page.keyboard.press('Enter');
    const rule = page.getByText('Must be at least 12 characters long');
    await rule.waitFor();
    expect(await page.locator('main').innerText()).not.toMatch(/body\.|password:/);
    expect(await page.getByLabel('Password', { exact: true }).getAttribute('aria-invalid')).toBe('true');
    await page.getByLabel('Password', { exact: true }).focus();
    await page.keyboard.press('End');
    await page.keyboard.type(' but longer now');
    await rule.waitFor({ state: 'detached' });
    expect(await page.getByLabel('Password', { exact: true }).getAttribute('aria-invalid')).toBeNull();
    await page.keyboard.press('ControlOrMeta+A');
    await page.keyboard.type('analytical engine notes');
    await tabTo(page, 'Password again');
    await page.keyboard.press('ControlOrMeta+A');
    // A different second entry is caught before anything is sent.
    await page.keyboard.type('analytical engine notez');
    await tabTo(page, 'Save and sign in');
    await page.keyboard.press('Enter');
    await page.getByText('The two passwords are not the same.').waitFor();
    // The focus goes where the fix is.
    await waitForFocus(page.getByLabel('Password again'));
    await page.keyboard.press('ControlOrMeta+A');
    await page.keyboard.type('analytical engine notes');
    await page.keyboard.press('Enter');

    await page.waitForURL('**/channels');
    expect((await page.evaluate(() => fetch('/api/v1/workspace').then((answer) => answer.json()))).timeZone).toBe('Europe/Paris');
    const session = await page.evaluate(() => fetch('/auth/session').then((answer) => answer.json()));
    expect(session).toMatchObject({ user: { name: 'Ada Lovelace', email: 'ada.lovelace@example.com' }, workspace: { id: first.workspaceId, name: 'Acme' }, role: 'owner' });
    // The link was for one use.
    expect((await call(`${service.base}/auth/setup?token=${new URL(link).searchParams.get('token')}`)).json.code).toBe('INVALID_LINK');
    expect(await setupLink(service).catch((error: Error) => error.message)).toMatch(/a member has a password already/);
    expect(pageErrors(page)).toEqual([]);
    await page.close();
  });

  test('a used or unknown link says so', async () => {
    const page = await newPage(browser, { baseURL: service.base });
    await page.goto('/setup?token=nope');
    await page.getByRole('alert').filter({ hasText: 'This link is not valid' }).waitFor();
    await checkAccessibility(page, 'the setup page with a bad link');
    await page.close();
  });
});

describe('sign-in', () => {
  let ws: Workspace;
  let credentials: { email: string; password: string };
  beforeAll(async () => {
    ws = await service.workspace({ workspaceName: 'Sign-in', ownerEmail: 'grace@example.com' });
    credentials = await setOwnerPassword(service, ws);
  });

  test('a wrong password is refused with the server’s message; the right one signs in and goes where the visitor was going (keyboard only)', async () => {
    const page = await newPage(browser, { baseURL: service.base });
    // A page that needs a session sends the visitor to sign in, and back afterwards.
    await page.goto('/usage');
    await page.waitForURL('**/login?next=%2Fusage');
    await page.getByRole('heading', { name: 'Sign in' }).waitFor();

    await tabTo(page, 'Email');
    await page.keyboard.type(credentials.email);
    await tabTo(page, 'Password');
    await page.keyboard.type('not the password at all');
    await page.keyboard.press('Enter');
    await page.getByRole('alert').filter({ hasText: 'The email or password is not right' }).waitFor();
    expect(await sessionCookie(page)).toBeUndefined();
    await screenshot(page, 'login-wrong-password');
    await checkAccessibility(page, 'the sign-in page after a wrong password');
    // Nothing typed is lost: the email is still there; the password is corrected.
    expect(await page.getByLabel('Email').inputValue()).toBe(credentials.email);
    await tabTo(page, 'Password', { backwards: true });
    await page.keyboard.press('ControlOrMeta+A');
    await page.keyboard.type(credentials.password);
    await tabTo(page, 'Sign in');
    await page.keyboard.press('Enter');

    await page.waitForURL('**/usage');
    expect(await sessionCookie(page)).toBeDefined();
    const session = await page.evaluate(() => fetch('/auth/session').then((answer) => answer.json()));
    expect(session).toMatchObject({ user: { email: credentials.email }, workspace: { id: ws.workspaceId }, role: 'owner' });
    expect(pageErrors(page)).toEqual([]);
    await page.close();
  });

  test('sign-out ends the session at once: the old cookie no longer reaches the API', async () => {
    const { page } = await signedInOwner(browser, service, ws);
    await page.goto('/channels');
    const cookie = await sessionCookie(page);
    expect(cookie).toBeDefined();
    const asSession = () => call(`${service.api}/users/me`, { headers: { cookie: `postwise_session=${cookie}` } });
    expect((await asSession()).status).toBe(200);

    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.waitForURL('**/login');
    await page.getByRole('heading', { name: 'Sign in' }).waitFor();
    expect(await sessionCookie(page)).toBeUndefined();
    const after = await asSession();
    expect(after.status).toBe(401);
    expect(after.json.code).toBe('UNAUTHORIZED');
    // And a page that needs a session goes back to sign-in.
    await page.goto('/settings/api-keys');
    await page.waitForURL('**/login?next=%2Fsettings%2Fapi-keys');
    await page.close();
  });

  test('sign-out by keyboard alone', async () => {
    const { page } = await signedInOwner(browser, service, ws);
    await page.goto('/channels');
    await page.getByRole('heading', { name: 'Channels', level: 1 }).waitFor();
    await tabTo(page, 'Sign out');
    await page.keyboard.press('Enter');
    await page.waitForURL('**/login');
    expect(await sessionCookie(page)).toBeUndefined();
    await page.close();
  });
});

describe('cross-site forgery', () => {
  let ws: Workspace;
  let attacker: http.Server;
  let attackerOrigin: string;
  beforeAll(async () => {
    ws = await service.workspace({ workspaceName: 'Forgery' });
    // Another origin on the same host (another port): the same site, so the SameSite=Lax cookie does go with its
    // POSTs, which only the Origin/Sec-Fetch-Site check and the csrf token stop.
    attacker = http.createServer((_req, res) => {
      res.setHeader('content-type', 'text/html; charset=utf-8');
      res.end(`<!doctype html><html lang="en"><head><title>Win a prize</title></head><body><main>
<form method="post" action="${service.api}/api-keys" enctype="text/plain">
<input type="hidden" name='{"name":"forged","x":"' value='"}'>
<button type="submit">Claim your prize</button>
</form></main></body></html>`);
    });
    attacker.listen(0, '127.0.0.1');
    await events.once(attacker, 'listening');
    attackerOrigin = `http://127.0.0.1:${(attacker.address() as { port: number }).port}`;
  });
  afterAll(() => {
    attacker?.closeAllConnections();
    attacker?.close();
  });

  test('a POST from a page of another origin, with the session’s cookie, is refused (403 CSRF_REJECTED) and creates nothing', async () => {
    // GET /api-keys is internal (the dashboard's, not a key's): asked as the admin command does.
    const keysBefore = (await ws.admin('listApiKeys')).items.length;
    const { page } = await signedInOwner(browser, service, ws);
    await page.goto(attackerOrigin);
    const answered = page.waitForResponse(`${service.api}/api-keys`);
    await page.getByRole('button', { name: 'Claim your prize' }).click();
    const answer = await answered;
    expect(answer.status()).toBe(403);
    expect(await answer.json()).toMatchObject({ code: 'CSRF_REJECTED' });
    // The cookie did go with it (a request without a session would have been 401).
    expect((await answer.request().allHeaders()).cookie).toMatch(/postwise_session=/);

    // The same from a script of that page (a fetch with credentials) is refused too.
    const fetched = await page.evaluate(
      (url) =>
        fetch(url, { method: 'POST', credentials: 'include', mode: 'no-cors', headers: { 'content-type': 'text/plain' }, body: '{"name":"forged"}' }).then(
          () => 'sent',
          (error: Error) => error.message,
        ),
      `${service.api}/api-keys`,
    );
    expect(fetched).toBe('sent');
    const keys = (await ws.admin('listApiKeys')).items;
    expect(keys).toHaveLength(keysBefore);
    expect(keys.map((key: { name: string }) => key.name)).not.toContain('forged');
    await page.close();
  });
});
