import postgres from 'postgres';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { connectThroughForm, createAccount, type TestAccount } from './support/bluesky.js';
import { checkAccessibility, launchBrowser, newPage, pageErrors, PHONE, pressMovingFocus, screenshot, signedInOwner, signIn, tabTo, waitForFocus } from './support/browser.js';
import { call, eventually, startTestService, type TestService, type Workspace } from './support/service.js';

/**
 * Evergreen recycling in a real browser, by keyboard alone: a post marked Evergreen in the composer (isEvergreen read
 * back over REST), published to a Bluesky account on the run's PDS and shown as evergreen on the posts list; a recycle
 * rule added on the Recycling page (channels, posts per run, a LinkedIn variation), its first run made by the worker at
 * once: one post recycled, one skipped with the channel's reason, both on the page; the rule disabled, changed in its
 * dialog and deleted (confirmed), each read back over REST; axe at a desktop's and a phone's width.
 */
let service: TestService;
let ws: Workspace;
let browser: Browser;
let page: Page;
let sql: postgres.Sql;
let account: TestAccount;
let credentials: { email: string; password: string };
let sky: { id: string; name: string };
/** A Bluesky channel without credentials: a recycle to it is skipped ("cannot publish … reconnect it"). */
let old: string;
/** The post written in the composer, published on Sky. */
let composed: string;
const TEXT = 'Ten tips for a greener garden, still true';

beforeAll(async () => {
  [service, browser, account] = await Promise.all([startTestService({}, { api: true, worker: true }), launchBrowser(), createAccount()]);
  ws = await service.workspace({ workspaceName: 'Evergreen', ownerName: 'Grace Hopper', plan: 'business' });
  sql = postgres(service.databaseUrl, { max: 2, onnotice: () => {} });
  const skyId = await connectThroughForm(service.api, ws.apiKey, account);
  sky = ((await call(`${service.api}/integrations`, { key: ws.apiKey })).json as { id: string; name: string }[]).find((channel) => channel.id === skyId)!;
  old = (await ws.admin('createIntegration', { platform: 'BLUESKY', name: 'Old' })).id;
  let signedIn;
  ({ page, ...signedIn } = await signedInOwner(browser, service, ws));
  credentials = signedIn;
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await sql?.end();
  await service?.stop();
});

const post = async (id: string) => (await call(`${service.api}/posts/${id}`, { key: ws.apiKey })).json;
const rules = () => ws.admin('listRecycleRules') as Promise<Record<string, any>[]>;
/** The post's schedules as if it had gone out 40 days ago: old enough for a rule's 30-day interval. */
const publishedLongAgo = (postId: string) =>
  sql`UPDATE schedules SET status = 'PUBLISHED', scheduled_at = now() - interval '40 days', published_at = now() - interval '40 days' WHERE post_id = ${postId}`;

test('the composer marks a post Evergreen (isEvergreen), the posts list says so, and an edit unmarks and marks it again', async () => {
  await page.goto('/compose');
  await page.getByRole('heading', { name: 'Compose', level: 1 }).waitFor();
  await page.getByRole('checkbox', { name: `${sky.name} (Bluesky)`, exact: true }).waitFor();
  await tabTo(page, `${sky.name} (Bluesky)`);
  await page.keyboard.press('Space');
  await page.getByRole('checkbox', { name: `${sky.name} (Bluesky)`, exact: true, checked: true }).waitFor();
  await tabTo(page, 'Text');
  await page.keyboard.type(TEXT);
  await tabTo(page, 'Evergreen');
  await page.keyboard.press('Space');
  await page.getByRole('checkbox', { name: 'Evergreen', checked: true }).waitFor();
  // "Next free posting slot" is checked; two steps down the radio group is "Publish now".
  await tabTo(page, 'Next free posting slot');
  await pressMovingFocus(page, 'ArrowDown');
  await pressMovingFocus(page, 'ArrowDown');
  await page.getByRole('radio', { name: 'Publish now', checked: true }).waitFor();
  await tabTo(page, 'Publish now');
  expect(await page.evaluate(() => document.activeElement?.getAttribute('type'))).toBe('submit');
  await page.keyboard.press('Enter');
  const outcome = page.getByRole('status').filter({ hasText: 'Publishing now.' });
  await outcome.waitFor();
  composed = (await outcome.getByRole('link', { name: 'Open the post' }).getAttribute('href'))!.split('/').pop()!;
  expect(await post(composed)).toMatchObject({ content: TEXT, isEvergreen: true, lastRecycledAt: null });
  // The form is ready for the next post: the box unticked.
  expect(await page.getByRole('checkbox', { name: 'Evergreen' }).isChecked()).toBe(false);
  await eventually(() => post(composed), (value) => value.schedules.every((schedule: { status: string }) => schedule.status === 'PUBLISHED'), 30_000);

  await page.goto('/posts');
  const row = page.locator(`tr[data-post-id="${composed}"]`);
  await row.getByText('Evergreen', { exact: true }).waitFor();
  expect(await row.getByText(/^Recycled /).count()).toBe(0);

  // Unmarked, then marked again, from the published post's page (its text is history; whether it is evergreen is not).
  await page.goto(`/posts/${composed}`);
  await page.getByRole('heading', { name: 'Published post', level: 1 }).waitFor();
  const box = page.getByRole('checkbox', { name: 'Evergreen' });
  await box.waitFor();
  expect(await box.isChecked()).toBe(true);
  for (const expected of [false, true]) {
    await tabTo(page, 'Evergreen', { maxTabs: 60 });
    await page.keyboard.press('Space');
    await tabTo(page, 'Save changes');
    await page.keyboard.press('Enter');
    await page.getByRole('status').filter({ hasText: 'Post updated' }).waitFor();
    await eventually(() => post(composed), (value) => value.isEvergreen === expected);
    expect((await post(composed)).isEvergreen).toBe(expected);
    await page.reload();
    await page.getByRole('heading', { name: 'Published post', level: 1 }).waitFor();
    await box.waitFor();
    expect(await box.isChecked()).toBe(expected);
  }
  await screenshot(page, 'evergreen-compose');
  await checkAccessibility(page, 'the composer with the Evergreen box');
  expect(pageErrors(page)).toEqual([]);
});

test('a rule added on the Recycling page by keyboard; its first run recycles one post and skips one with the reason; disabled, changed, deleted', async () => {
  expect(composed).toBeDefined();
  await publishedLongAgo(composed);
  // A second evergreen post, "published" on a channel that has no credentials: the rule skips it, saying why.
  const created = await call(`${service.api}/posts`, {
    method: 'POST',
    key: ws.apiKey,
    body: { rows: [{ content: 'An old favourite on an old channel', isEvergreen: true }], shared: { selectedIntegrations: [old] }, postAction: 'DRAFT' },
  });
  expect(created.status, created.text).toBe(201);
  const stale = created.json.postId as string;
  await publishedLongAgo(stale);

  await page.goto('/recycling');
  await page.getByRole('heading', { name: 'Recycling', level: 1 }).waitFor();
  await page.getByText('No recycle rules yet.').waitFor();
  await page.getByText(/evergreen posts another round/).waitFor();
  await checkAccessibility(page, 'the Recycling page without rules');

  await tabTo(page, 'Add a rule');
  await page.keyboard.press('Enter');
  await waitForFocus(page.getByLabel('Name', { exact: true }));
  await page.keyboard.type('Best of');
  // Without a channel: said under the channels, which take the focus; nothing is sent.
  await tabTo(page, 'Add rule');
  await page.keyboard.press('Enter');
  await page.getByText('Choose at least one channel.').waitFor();
  await waitForFocus(page.getByRole('group', { name: 'Channels' }));
  await checkAccessibility(page, 'the rule form refusing a rule without a channel');
  expect(await rules()).toEqual([]);
  await tabTo(page, `${sky.name} (Bluesky)`);
  await page.keyboard.press('Space');
  await tabTo(page, 'Old (Bluesky)');
  await page.keyboard.press('Space');
  await tabTo(page, 'Posts per run');
  await page.keyboard.press('ControlOrMeta+A');
  await page.keyboard.type('2');
  await tabTo(page, 'LinkedIn variations (optional)');
  await page.keyboard.type('From our archive.');
  await tabTo(page, 'Add rule');
  await page.keyboard.press('Enter');
  await page.getByRole('status').filter({ hasText: 'Added the rule “Best of”: its first run is under way' }).waitFor();
  const row = page.getByRole('row', { name: /Best of/ });
  await row.getByText('Enabled', { exact: true }).waitFor();
  await row.getByText(`${sky.name} (Bluesky)`).waitFor();
  await row.getByText('Old (Bluesky)').waitFor();
  await row.getByText('Evergreen posts out 30 days ago or more').waitFor();
  await row.getByText('No limit of recycles per post').waitFor();
  await row.getByText('Every day, up to 2 posts').waitFor();
  // The form folds away, the focus back on its button, for the next rule.
  await waitForFocus(page.getByRole('button', { name: 'Add a rule' }));
  expect(await page.getByLabel('Name', { exact: true }).count()).toBe(0);

  const [rule] = await rules();
  expect(rule).toMatchObject({
    name: 'Best of',
    integrationIds: [sky.id, old],
    tagIds: [],
    frequency: 'DAILY',
    postsPerRun: 2,
    minIntervalDays: 30,
    maxRuns: null,
    postingWindows: null,
    linkedinVariations: ['From our archive.'],
    enabled: true,
  });

  // The first run is at once (the worker of this service): the composed post recycled on Sky, the other skipped.
  const events = await eventually(() => ws.admin('listRecycleEvents', { ruleId: rule!.id }), (answer) => answer.items.length === 2, 20_000);
  expect(events.items.map((event: { postId: string; status: string }) => [event.postId, event.status]).sort()).toEqual(
    [
      [composed, 'RECYCLED'],
      [stale, 'SKIPPED'],
    ].sort(),
  );
  await tabTo(page, 'Events of Best of');
  await page.keyboard.press('Enter');
  await page.getByRole('heading', { name: 'Recycle events of “Best of”' }).waitFor();
  const log = page.getByRole('table', { name: 'Recycle events of the rule, newest first' });
  const recycled = log.locator('tr', { hasText: TEXT });
  await recycled.getByText('Recycled', { exact: true }).waitFor();
  await recycled.getByText('1 schedule made').waitFor();
  const skipped = log.locator('tr', { hasText: 'An old favourite on an old channel' });
  await skipped.getByText('Skipped', { exact: true }).waitFor();
  await skipped.getByText('"Old" cannot publish (token MISSING, ACTIVE): reconnect it').waitFor();
  // Refresh reads the rules too: the last run is shown.
  await tabTo(page, 'Refresh the recycle events');
  await page.keyboard.press('Enter');
  await expect.poll(async () => row.locator('td[data-label="Last run"]').innerText()).not.toBe('Not yet');
  await screenshot(page, 'recycling-events');
  await checkAccessibility(page, 'the Recycling page with a rule and its events');

  // The post is marked recycled on the posts list; its new schedule is an ordinary one, carrying its origin.
  const after = await post(composed);
  expect(after.lastRecycledAt).not.toBeNull();
  const recycledEvent = events.items.find((event: { postId: string }) => event.postId === composed);
  expect(after.schedules.filter((schedule: { originRecycleEventId: string | null }) => schedule.originRecycleEventId === recycledEvent.id)).toHaveLength(1);
  await page.goto('/posts');
  const postRow = page.locator(`tr[data-post-id="${composed}"]`);
  await postRow.getByText('Evergreen', { exact: true }).waitFor();
  await postRow.getByText(/^Recycled /).waitFor();
  await screenshot(page, 'evergreen-posts');
  await checkAccessibility(page, 'the posts list with an evergreen, recycled post');

  // Disabled by keyboard: the focus stays on the button, which now enables it.
  await page.goto('/recycling');
  await page.getByRole('heading', { name: 'Recycling', level: 1 }).waitFor();
  await tabTo(page, 'Disable Best of', { maxTabs: 60 });
  await page.keyboard.press('Enter');
  await page.getByRole('status').filter({ hasText: 'Disabled the rule “Best of”' }).waitFor();
  await row.getByText('Disabled', { exact: true }).waitFor();
  await waitForFocus(page.getByRole('button', { name: 'Enable Best of' }));
  expect((await rules())[0]).toMatchObject({ id: rule!.id, enabled: false });

  // Changed in its dialog: the focus starts on its name, and comes back to the Edit button.
  await tabTo(page, 'Edit Best of', { backwards: true });
  await page.keyboard.press('Enter');
  const dialog = page.getByRole('dialog', { name: 'Edit the rule “Best of”' });
  await dialog.waitFor();
  await waitForFocus(dialog.getByLabel('Name', { exact: true }));
  expect(await dialog.getByLabel('LinkedIn variations (optional)').inputValue()).toBe('From our archive.');
  await checkAccessibility(page, 'the rule’s edit dialog');
  await tabTo(page, 'Minimum interval in days');
  await page.keyboard.press('ControlOrMeta+A');
  await page.keyboard.type('60');
  await tabTo(page, 'Save rule');
  await page.keyboard.press('Enter');
  await dialog.waitFor({ state: 'hidden' });
  await page.getByRole('status').filter({ hasText: 'Saved the rule “Best of”.' }).waitFor();
  await row.getByText('Evergreen posts out 60 days ago or more').waitFor();
  await waitForFocus(page.getByRole('button', { name: 'Edit Best of' }));
  expect((await rules())[0]).toMatchObject({ minIntervalDays: 60, enabled: false, postsPerRun: 2, linkedinVariations: ['From our archive.'], integrationIds: [sky.id, old] });

  // At a phone's width: the rows are cards, nothing is wider than the screen.
  const phone = await newPage(browser, { size: 'phone', baseURL: service.base });
  await signIn(phone, service.base, credentials);
  await phone.goto('/recycling');
  await phone.getByRole('heading', { name: 'Recycling', level: 1 }).waitFor();
  await phone.getByRole('row', { name: /Best of/ }).waitFor();
  await phone.getByRole('button', { name: 'Events of Best of' }).click();
  await phone.getByRole('table', { name: 'Recycle events of the rule, newest first' }).locator('tr', { hasText: TEXT }).waitFor();
  expect(await phone.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(PHONE.width);
  await screenshot(phone, 'recycling-phone');
  await checkAccessibility(phone, 'the Recycling page at a phone’s width');
  await phone.goto('/posts');
  await phone.locator(`tr[data-post-id="${composed}"]`).getByText(/^Recycled /).waitFor();
  expect(await phone.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(PHONE.width);
  await screenshot(phone, 'evergreen-posts-phone');
  await checkAccessibility(phone, 'the posts list with an evergreen post at a phone’s width');
  expect(pageErrors(phone)).toEqual([]);
  await phone.close();

  // Deleted after a confirmation (Cancel has the focus first); the focus goes to the list's heading.
  await tabTo(page, 'Delete Best of');
  await page.keyboard.press('Enter');
  const confirm = page.getByRole('dialog', { name: 'Delete this rule?' });
  await confirm.waitFor();
  await waitForFocus(confirm.getByRole('button', { name: 'Cancel' }));
  await tabTo(page, 'Delete rule');
  await page.keyboard.press('Enter');
  await page.getByText('No recycle rules yet.').waitFor();
  await page.getByRole('status').filter({ hasText: 'Deleted the rule “Best of”.' }).waitFor();
  await waitForFocus(page.getByRole('heading', { name: 'Rules', level: 2 }));
  expect(await rules()).toEqual([]);
  // Its events stay in the log, without their rule.
  expect((await ws.admin('listRecycleEvents', { postId: composed })).items).toHaveLength(1);
  expect(pageErrors(page)).toEqual([]);
});
