import { once } from 'node:events';
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import postgres from 'postgres';
import type { Browser, Page } from 'playwright-core';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { freePort } from '../src/process/free-port.js';
import { checkAccessibility, launchBrowser, pageErrors, screenshot, signedInOwner, tabTo, waitForFocus } from './support/browser.js';
import { call, eventually, startTestService, type TestService, type Workspace } from './support/service.js';

/**
 * The Webhooks page in a real browser: an endpoint added by keyboard alone, its secret shown once and verifying what
 * arrives, its delivery log and a delivery sent again, the notice of an endpoint disabled for failing, and the
 * disable, enable and delete of an endpoint.
 */
let service: TestService;
let ws: Workspace;
let browser: Browser;
let page: Page;
let sql: postgres.Sql;
const received: { headers: IncomingMessage['headers']; body: string }[] = [];
const receiver = createServer((request, response) => {
  let body = '';
  request.on('data', (chunk) => (body += chunk));
  request.on('end', () => {
    received.push({ headers: request.headers, body });
    response.end('ok');
  });
});
let url: string;
let closedPort: number;

beforeAll(async () => {
  receiver.listen(0, '127.0.0.1');
  await once(receiver, 'listening');
  url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks`;
  closedPort = await freePort();
  [service, browser] = await Promise.all([
    startTestService({ mediaFetchAllowHosts: [new URL(url).host, `127.0.0.1:${closedPort}`], webhookRetryDelaysMs: [60_000] }, { api: true, worker: true }),
    launchBrowser(),
  ]);
  ws = await service.workspace({ workspaceName: 'Hooks', ownerName: 'Grace Hopper', plan: 'business' });
  sql = postgres(service.databaseUrl, { max: 2, onnotice: () => {} });
  ({ page } = await signedInOwner(browser, service, ws));
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await sql?.end();
  await service?.stop();
  receiver.closeAllConnections();
  receiver.close();
});

const draft = async (content: string) => {
  const channel = (await ws.admin('createIntegration', { platform: 'LINKEDIN', name: content })).id;
  const created = await call(`${service.api}/posts`, { method: 'POST', key: ws.apiKey, body: { rows: [{ content }], shared: { selectedIntegrations: [channel] }, postAction: 'DRAFT' } });
  expect(created.status, created.text).toBe(201);
  return created.json.postId as string;
};

test('an endpoint is added by keyboard alone; its secret, shown once, verifies what arrives; the log shows it, and it is sent again', async () => {
  await page.goto('/settings/webhooks');
  await page.getByRole('heading', { name: 'Webhooks', level: 1 }).waitFor();
  await page.getByText('No endpoints yet.').waitFor();

  // The form is folded behind its button, which opens it with the focus on its first field.
  await tabTo(page, 'Add an endpoint');
  await page.keyboard.press('Enter');
  await waitForFocus(page.getByLabel('URL', { exact: true }));
  await page.keyboard.type(url);
  await tabTo(page, 'post.created');
  await page.keyboard.press('Space');
  await tabTo(page, 'Add endpoint');
  await page.keyboard.press('Enter');

  const field = page.getByLabel(`Signing secret for ${url}`);
  await field.waitFor();
  await waitForFocus(field);
  const secret = await field.inputValue();
  expect(secret).toMatch(/^whsec_/);
  await page.getByText('Copy this signing secret now: it will not be shown again.').waitFor();
  await checkAccessibility(page, 'the Webhooks page showing a new secret');
  await tabTo(page, 'I have copied it');
  await page.keyboard.press('Enter');
  await field.waitFor({ state: 'detached' });
  expect(await page.content()).not.toContain(secret);
  await page.getByRole('row', { name: new RegExp(url) }).getByText('post.created').waitFor();

  const postId = await draft('Seen by a receiver');
  const [first] = await eventually(async () => received.filter((request) => request.body.includes(postId)), (requests) => requests.length === 1, 10_000);
  const event = new Webhook(secret).verify(first!.body, first!.headers as Record<string, string>) as { id: string; type: string };
  expect(event.type).toBe('post.created');

  await tabTo(page, `Deliveries to ${url}`);
  await page.keyboard.press('Enter');
  const log = page.getByRole('table', { name: 'Deliveries to the endpoint, newest first' });
  const row = log.getByRole('row', { name: new RegExp(event.id) });
  await row.getByText('Delivered').waitFor();
  await row.getByText(/^HTTP 200 in \d+ ms$/).waitFor();
  await screenshot(page, 'webhooks-deliveries');
  await checkAccessibility(page, 'the Webhooks page with a delivery log');

  await tabTo(page, `Send again post.created ${event.id}`);
  await page.keyboard.press('Enter');
  await eventually(async () => received.filter((request) => request.headers['webhook-id'] === event.id), (requests) => requests.length === 2, 10_000);
  await tabTo(page, 'Refresh', { backwards: true });
  await page.keyboard.press('Enter');
  await expect.poll(async () => log.getByRole('row', { name: new RegExp(event.id) }).count(), { timeout: 10_000 }).toBe(2);
  expect(pageErrors(page)).toEqual([]);
});

test('an endpoint disabled after failing is announced at the top with its reason; disabling, enabling and deleting by hand', async () => {
  const gone = `http://127.0.0.1:${closedPort}/gone`;
  const failing = await ws.admin('createWebhook', { url: gone, eventTypes: ['post.created'] });
  // As if every delivery had failed for three days already: the next failure disables it.
  await sql`UPDATE webhook_endpoints SET failing_since = now() - interval '3 days 1 minute' WHERE id = ${failing.id}`;
  await draft('Nobody home');
  await eventually(async () => (await ws.admin('listWebhooks')).find((item: { id: string }) => item.id === failing.id), (item) => item.enabled === false, 15_000);

  await page.goto('/settings/webhooks');
  const notice = page.getByRole('status').filter({ hasText: 'An endpoint is disabled' });
  await notice.waitFor();
  await notice.getByText(/Every delivery failed for 3 days/).waitFor();
  await page.getByRole('row', { name: new RegExp(gone) }).getByText('Disabled', { exact: true }).waitFor();
  await screenshot(page, 'webhooks-disabled-notice');
  await checkAccessibility(page, 'the Webhooks page with a disabled endpoint');

  // The first endpoint disabled by hand, then enabled again.
  await tabTo(page, `Disable ${url}`);
  await page.keyboard.press('Enter');
  await page.getByText('2 endpoints are disabled').waitFor();
  await tabTo(page, `Enable ${url}`, { backwards: true, maxTabs: 60 });
  await page.keyboard.press('Enter');
  await page.getByText('An endpoint is disabled').waitFor();

  // Deleted after a confirmation.
  await tabTo(page, `Delete ${gone}`);
  await page.keyboard.press('Enter');
  await page.getByRole('dialog', { name: 'Delete this endpoint?' }).waitFor();
  await page.getByRole('button', { name: 'Delete endpoint' }).press('Enter');
  await page.getByRole('row', { name: new RegExp(gone) }).waitFor({ state: 'detached' });
  expect((await ws.admin('listWebhooks')).map((item: { url: string }) => item.url)).toEqual([url]);
  expect(pageErrors(page)).toEqual([]);
});

test('a private address is refused in words under the URL, saying why and how a test setup allows one; the error goes once the URL changes', async () => {
  await page.goto('/settings/webhooks');
  await page.getByRole('heading', { name: 'Webhooks', level: 1 }).waitFor();
  await page.getByRole('button', { name: 'Add an endpoint' }).click();
  const field = page.getByLabel('URL', { exact: true });
  await field.fill('http://10.1.2.3/hooks');
  await page.getByRole('button', { name: 'Add endpoint' }).click();
  const said = page.locator(`[id="${await field.getAttribute('id')}-error"]`);
  await said.waitFor();
  expect(await said.innerText()).toBe(
    '10.1.2.3 is a private address, and webhooks go only to public internet addresses, so that no one can make this server call into the ' +
      'network it runs in. For a test setup, whoever runs Postwise can allow this host by adding it to the server’s MEDIA_FETCH_ALLOW_HOSTS ' +
      'setting (comma-separated: 10.1.2.3, or 10.1.2.3:8080 for one port only) and restarting the server. A public service should leave it empty.',
  );
  expect(await page.locator('main').innerText()).not.toMatch(/url: |body\.|URL_NOT_ALLOWED/);
  await waitForFocus(field);
  await page.keyboard.type('x');
  await said.waitFor({ state: 'detached' });
  expect(pageErrors(page)).toEqual([]);
});
