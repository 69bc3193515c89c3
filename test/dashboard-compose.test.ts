import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { definePlan, setSubscription, setWorkspacePlan } from '../src/admin/plans.js';
import { dayOf } from '../src/dashboard/zoned-time.js';
import { blueskyFacets } from '../src/platforms/facets.js';
import { rules, utf8Length } from '../src/platforms/rules.js';
import { connectThroughForm, createAccount, postsOf, type TestAccount } from './support/bluesky.js';
import { checkAccessibility, dragTo, launchBrowser, newPage, openCalendar, pageErrors, PHONE, screenshot, signedInOwner, signIn, tabTo, waitForFocus } from './support/browser.js';
import { photo } from './support/images.js';
import { startFakeLinkedIn, type FakeLinkedIn } from './support/linkedin.js';
import { connectLinkedIn, startServiceWithLinkedIn } from './support/linkedin-browser.js';
import { call, eventually, type TestService, type Workspace } from './support/service.js';

/** January of next year: a future winter date (Paris at UTC+1) whenever the suite runs. */
const JANUARY = `${new Date().getUTCFullYear() + 1}-01`;

/**
 * The composer in a real browser: a post to a Bluesky channel (on the run's PDS) and a LinkedIn one (its contract
 * fake) with two images and their alt text, counters and upload progress watched, scheduled at a time of the
 * workspace's zone and read back over the API; one published now and read back from the PDS; a text over Bluesky's
 * limit blocked with the API's own numbers; a spent quota said without losing the text; axe at both widths; a post
 * composed, scheduled and edited by keyboard alone.
 */
let fake: FakeLinkedIn;
let service: TestService;
let ws: Workspace;
let browser: Browser;
let page: Page;
let account: TestAccount;
let credentials: { email: string; password: string };
let sky: { id: string; name: string };
let inn: { id: string; name: string };
const ZONE = 'Europe/Paris';

beforeAll(async () => {
  fake = await startFakeLinkedIn();
  [service, browser, account] = await Promise.all([startServiceWithLinkedIn(fake), launchBrowser(), createAccount()]);
  ws = await service.workspace({ plan: 'business', workspaceName: 'Compose' });
  await ws.admin('updateWorkspaceSettings', { timeZone: ZONE });
  const skyId = await connectThroughForm(service.api, ws.apiKey, account);
  const innId = await connectLinkedIn(service, ws.apiKey, fake, fake.addMember('Ada Member'));
  const channels = (await call(`${service.api}/integrations`, { key: ws.apiKey })).json as { id: string; name: string }[];
  sky = channels.find((channel) => channel.id === skyId)!;
  inn = channels.find((channel) => channel.id === innId)!;
  let signedIn;
  ({ page, ...signedIn } = await signedInOwner(browser, service, ws));
  credentials = signedIn;
});

afterAll(async () => {
  await browser?.close();
  await service?.stop();
  await fake?.stop();
});

const counter = (name: string) => page.locator('.counter', { hasText: `${name} (` }).first();

/** Records every value the upload progress bars show, from before the files are given (uploads on loopback are fast). */
async function watchProgress() {
  await page.evaluate(() => {
    // Each bar's values, with the step its label names: what the XHR reported is only what was seen while "Uploading…".
    const seen: Record<string, string[]> = {};
    (window as unknown as { progressSeen: typeof seen }).progressSeen = seen;
    const record = () => {
      for (const bar of document.querySelectorAll('progress[aria-label^="Uploading "]')) {
        const name = bar.getAttribute('aria-label')!.slice('Uploading '.length);
        const values = (seen[name] ??= []);
        const step = bar.parentElement?.querySelector('span')?.textContent?.split('…')[0] ?? '';
        const value = `${step} ${bar.getAttribute('value')}`;
        if (values.at(-1) !== value) values.push(value);
      }
    };
    new MutationObserver(record).observe(document.body, { subtree: true, childList: true, characterData: true, attributes: true, attributeFilter: ['value'] });
  });
}

const progressSeen = () => page.evaluate(() => (window as unknown as { progressSeen: Record<string, string[]> }).progressSeen);

/** Drops `file` on the drop zone as a browser's drag and drop does (a DataTransfer holding a File). */
async function dropFile(name: string, bytes: Buffer, type: string) {
  await page.evaluate(
    ({ name, base64, type }) => {
      const binary = atob(base64);
      const data = new Uint8Array(binary.length);
      for (let index = 0; index < binary.length; index++) data[index] = binary.charCodeAt(index);
      const transfer = new DataTransfer();
      transfer.items.add(new File([data], name, { type }));
      const zone = document.querySelector('.dropzone')!;
      zone.dispatchEvent(new DragEvent('dragover', { dataTransfer: transfer, bubbles: true, cancelable: true }));
      zone.dispatchEvent(new DragEvent('drop', { dataTransfer: transfer, bubbles: true, cancelable: true }));
    },
    { name, base64: bytes.toString('base64'), type },
  );
}

test('the shared rules count as the server did, and the preview’s facets are the ones @atproto/api publishes', async () => {
  const { RichText } = await import('@atproto/api');
  const texts = ['plain', 'é and 👩‍👩‍👧 and 👍🏽\r\n', 'lone \ud800 surrogate', 'x'.repeat(3001), 'Hi @alice.test, see https://example.com/a?b=1. #tag #éte $TSLA (https://x.org/p)'];
  for (const text of texts) {
    expect(utf8Length(text)).toBe(Buffer.byteLength(text, 'utf8'));
    const published = new RichText({ text });
    published.detectFacetsWithoutResolution();
    const bytes = Buffer.from(text, 'utf8');
    const expected = (published.facets ?? []).map((facet) => bytes.subarray(facet.index.byteStart, facet.index.byteEnd).toString('utf8'));
    expect(blueskyFacets(text).map((facet) => text.slice(facet.start, facet.end))).toEqual(expected);
  }
  // Bluesky counts graphemes: a family emoji is one, and the text is also held to 3,000 bytes.
  expect(rules.BLUESKY.checkText('👩‍👩‍👧'.repeat(300))).toEqual({ limit: 3000, length: 5400, unit: 'bytes' });
  expect(rules.LINKEDIN.checkText('👍'.repeat(1501))).toEqual({ limit: 3000, length: 3002, unit: 'characters' });
});

let scheduledPostId: string;

test('a post to Bluesky and LinkedIn with two images and alt text: counters, upload progress, preview, scheduled at a time of the workspace’s zone', async () => {
  await page.goto('/compose');
  await page.getByRole('heading', { name: 'Compose', level: 1 }).waitFor();
  await page.getByRole('checkbox', { name: `${sky.name} (Bluesky)`, exact: true }).check();
  await page.getByRole('checkbox', { name: `${inn.name} (LinkedIn)`, exact: true }).check();

  const text = 'Winter sale at https://example.com/sale #winter 👍🏽';
  await page.getByLabel('Text', { exact: true }).fill(text);
  // Bluesky counts graphemes (the emoji with its skin tone is one), LinkedIn UTF-16 code units (it is four).
  await expect.poll(() => counter(sky.name).textContent()).toBe(`${sky.name} (Bluesky): ${[...new Intl.Segmenter().segment(text)].length} / 300 characters`);
  await expect.poll(() => counter(inn.name).textContent()).toBe(`${inn.name} (LinkedIn): ${text.length} / 3,000 characters`);

  await watchProgress();
  const [first, second] = await Promise.all([photo(1200, 900), photo(900, 1200, 'png')]);
  await page.getByLabel('Add images').setInputFiles([{ name: 'harbour.jpg', mimeType: 'image/jpeg', buffer: first }]);
  await dropFile('hills.png', second, 'image/png');
  const items = page.locator('.media-item');
  await expect.poll(() => items.count()).toBe(2);
  await expect.poll(() => page.locator('.media-item .success', { hasText: 'Uploaded' }).count(), { timeout: 15_000 }).toBe(2);
  const seen = await progressSeen();
  // Each file showed its bar from its checksum (0), then the PUT's own progress as the browser reported it, to 100.
  for (const name of ['harbour.jpg', 'hills.png']) {
    expect(seen[name]?.[0], JSON.stringify(seen)).toBe('Computing its checksum 0');
    expect(seen[name], JSON.stringify(seen)).toContain('Uploading 100');
  }
  await page.getByLabel('Alt text for harbour.jpg').fill('A harbour at dawn, boats moored');
  await page.getByLabel('Alt text for hills.png').fill('Green hills under snow');
  await page.getByText('at most 4 images').waitFor();
  await page.getByText('JPEG, PNG, GIF only').waitFor();

  // The previews: the link and hashtag highlighted where the facets will be, both images under the text.
  const skyPreview = page.getByRole('article', { name: `Preview on Bluesky: ${sky.name}` });
  await expect.poll(() => skyPreview.locator('[data-facet="link"]').textContent()).toBe('https://example.com/sale');
  expect(await skyPreview.locator('[data-facet="tag"]').textContent()).toBe('#winter');
  expect(await skyPreview.getByRole('img', { name: 'Green hills under snow' }).count()).toBe(1);
  const innPreview = page.getByRole('article', { name: `Preview on LinkedIn: ${inn.name}` });
  expect(await innPreview.locator('[data-facet="tag"]').textContent()).toBe('#winter');

  await page.getByLabel('At a chosen time').check();
  await page.getByText(`In the workspace’s time zone, Europe/Paris.`).waitFor();
  await page.getByLabel('Date', { exact: true }).fill(`${JANUARY}-15`);
  await page.getByLabel('Time', { exact: true }).fill('10:30');
  await screenshot(page, 'compose-two-channels-two-images');
  await checkAccessibility(page, 'the composer with two channels and two images');
  await page.getByRole('button', { name: 'Schedule', exact: true }).click();

  const outcome = page.getByRole('status').filter({ hasText: 'Scheduled.' });
  await outcome.waitFor();
  // 10:30 in Paris in January is 09:30 UTC.
  await outcome.getByText(new RegExp(`^${sky.name} \\(Bluesky\\): Scheduled, \\w{3}, Jan 15, ${JANUARY.slice(0, 4)}, 10:30\\sAM \\(Europe/Paris\\)$`)).waitFor();
  const href = await outcome.getByRole('link', { name: 'Open the post' }).getAttribute('href');
  scheduledPostId = href!.split('/').pop()!;
  const post = (await call(`${service.api}/posts/${scheduledPostId}`, { key: ws.apiKey })).json;
  expect(post.content).toBe(text);
  expect(post.schedules.map((schedule: { scheduledAt: string; status: string }) => [schedule.status, schedule.scheduledAt])).toEqual([
    ['SCHEDULED', `${JANUARY}-15T09:30:00.000Z`],
    ['SCHEDULED', `${JANUARY}-15T09:30:00.000Z`],
  ]);
  expect(post.attachments.map((attachment: { order: number; altText: string }) => [attachment.order, attachment.altText])).toEqual([
    [0, 'A harbour at dawn, boats moored'],
    [1, 'Green hills under snow'],
  ]);
  await screenshot(page, 'compose-scheduled');
  // The PUTs went to the object store's origin, which the shell's CSP names (and no other) beside this origin.
  const store = service.service.core.app.storage.origins.upload;
  const policy = (await fetch(`${service.base}/compose`, { headers: { accept: 'text/html' } })).headers.get('content-security-policy');
  expect(policy).toContain(`connect-src 'self' ${store};`);
  expect(pageErrors(page)).toEqual([]);
});

test('the composed post on the calendar: found on its day, dragged to the next, its scheduledAt changed through the API', async () => {
  const post = (await call(`${service.api}/posts/${scheduledPostId}`, { key: ws.apiKey })).json;
  const onSky = post.schedules.find((schedule: { integrationId: string }) => schedule.integrationId === sky.id);
  const onIn = post.schedules.find((schedule: { integrationId: string }) => schedule.integrationId === inn.id);
  await openCalendar(page, 'month', `${JANUARY}-15`);
  const item = page.locator(`.month-grid [data-day="${JANUARY}-15"] [data-schedule-id="${onSky.id}"]`);
  await item.waitFor();
  // Both channels' entries are on the 15th, each with its channel and the first image's thumbnail.
  await page.locator(`.month-grid [data-day="${JANUARY}-15"] [data-schedule-id="${onIn.id}"]`).waitFor();
  expect(await item.locator('img').count()).toBeGreaterThan(0);
  await dragTo(page, item, page.locator(`.month-grid [data-day="${JANUARY}-16"]`));
  await page.getByRole('status').filter({ hasText: new RegExp(`^Moved “.*” on ${sky.name} to `) }).waitFor();
  await page.locator(`.month-grid [data-day="${JANUARY}-16"] [data-schedule-id="${onSky.id}"]`).waitFor();
  const moved = (await call(`${service.api}/posts/${scheduledPostId}`, { key: ws.apiKey })).json;
  expect(moved.schedules.map((schedule: { integrationId: string; scheduledAt: string }) => [schedule.integrationId, schedule.scheduledAt]).sort()).toEqual(
    [
      [sky.id, `${JANUARY}-16T09:30:00.000Z`],
      [inn.id, `${JANUARY}-15T09:30:00.000Z`],
    ].sort(),
  );
  await screenshot(page, 'compose-on-the-calendar');
  expect(pageErrors(page)).toEqual([]);
});

test('the calendar follows a publish without a reload: Publishing while LinkedIn holds the request, then Published', async () => {
  const release = fake.holdNext('posts');
  try {
    const created = await call(`${service.api}/posts`, {
      method: 'POST',
      key: ws.apiKey,
      body: { rows: [{ content: `Held by LinkedIn a moment ${Date.now()}` }], shared: { selectedIntegrations: [inn.id] }, postAction: 'PUBLISH_NOW' },
    });
    expect(created.status, created.text).toBe(201);
    const post = (await call(`${service.api}/posts/${created.json.postIds[0]}`, { key: ws.apiKey })).json;
    await openCalendar(page, 'agenda', dayOf(new Date(), ZONE));
    await page.evaluate(() => ((window as unknown as { notReloaded: boolean }).notReloaded = true));
    const item = page.locator(`[data-schedule-id="${post.schedules[0].id}"]`);
    await item.getByText('Publishing', { exact: true }).waitFor({ timeout: 20_000 });
    await screenshot(page, 'calendar-publishing');
    release();
    await item.getByText('Published', { exact: true }).waitFor({ timeout: 20_000 });
    expect(await page.evaluate(() => (window as unknown as { notReloaded?: boolean }).notReloaded)).toBe(true);
    const published = (await call(`${service.api}/posts/${post.id}`, { key: ws.apiKey })).json.schedules[0];
    expect(published.status).toBe('PUBLISHED');
    expect(fake.posts.get(published.platformPostId)?.text).toBe(post.content);
  } finally {
    release();
  }
  expect(pageErrors(page)).toEqual([]);
}, 60_000);

test('published now to Bluesky: the composer follows it to PUBLISHED, and the PDS holds the record with its facets and first comment', async () => {
  await page.goto('/compose');
  await page.getByRole('checkbox', { name: `${sky.name} (Bluesky)`, exact: true }).check();
  const text = `Live now: see https://example.com/now #launch ${Date.now()}`;
  await page.getByLabel('Text', { exact: true }).fill(text);
  await page.getByRole('button', { name: 'Add a first comment' }).click();
  await page.getByLabel('First comment').fill('Questions welcome below');
  await page.getByRole('article', { name: `Preview on Bluesky: ${sky.name}` }).getByText('First comment').waitFor();
  await page.getByLabel('Publish now').check();
  await page.getByRole('button', { name: 'Publish now' }).click();
  const outcome = page.getByRole('status').filter({ hasText: 'Publishing now.' });
  await outcome.waitFor();
  await outcome.getByText(`${sky.name} (Bluesky): Published`).waitFor({ timeout: 30_000 });
  await outcome.getByRole('link', { name: 'View on Bluesky' }).waitFor();
  await screenshot(page, 'compose-published');

  const records = await postsOf(account);
  const record = records.find((item) => (item.value as { text: string }).text === text)!.value as {
    facets: { index: { byteStart: number; byteEnd: number }; features: { $type: string }[] }[];
  };
  expect(record.facets.map((facet) => facet.features[0]!.$type)).toEqual(['app.bsky.richtext.facet#link', 'app.bsky.richtext.facet#tag']);
  const comment = records.find((item) => (item.value as { text: string }).text === 'Questions welcome below')!.value as { reply: { root: { uri: string } } };
  expect(comment.reply.root.uri).toContain(account.did);
  expect(pageErrors(page)).toEqual([]);
});

test('a text over Bluesky’s limit is blocked in the composer with the numbers the API answers', async () => {
  await page.goto('/compose');
  await page.getByRole('checkbox', { name: `${sky.name} (Bluesky)`, exact: true }).check();
  const field = page.getByLabel('Text', { exact: true });
  // 290 letters and 10 emoji with skin tones: 300 graphemes, at the limit (a warning, not an error).
  const atLimit = 'a'.repeat(290) + '👍🏽'.repeat(10);
  await field.fill(atLimit);
  await expect.poll(() => counter(sky.name).getAttribute('class')).toBe('counter warn');
  expect(await field.getAttribute('aria-invalid')).toBeNull();
  await field.press('End');
  await field.pressSequentially('👍🏽');
  await expect.poll(() => counter(sky.name).getAttribute('class')).toBe('counter over');
  expect(await field.getAttribute('aria-invalid')).toBe('true');
  expect(await counter(sky.name).textContent()).toContain('301 / 300 characters, 1 over the limit');

  await page.getByRole('button', { name: 'Schedule at the next free slot' }).click();
  const alert = page.getByRole('alert').filter({ hasText: 'Not sent' });
  await alert.waitFor();
  const refused = await call(`${service.api}/posts`, {
    method: 'POST',
    key: ws.apiKey,
    body: { rows: [{ content: atLimit + '👍🏽' }], shared: { selectedIntegrations: [sky.id] }, postAction: 'NEXT_WINDOW' },
  });
  expect(refused.status).toBe(400);
  expect(refused.json.code).toBe('CONTENT_TOO_LONG');
  // The API names the field and the unit for a program; the page says the same sentence and numbers, under the field.
  const sentence = `Too long for Bluesky (${sky.name}): 301 of 300 characters`;
  expect(refused.json.message).toBe(`rows[0].content: ${sentence} (graphemes)`);
  await alert.getByText(sentence, { exact: true }).waitFor();
  const under = page.locator(`#${await field.getAttribute('id')}-error`);
  expect(await under.textContent()).toBe(sentence);
  expect((await field.getAttribute('aria-describedby'))!.split(' ')).toContain(`${await field.getAttribute('id')}-error`);
  expect(await page.locator('main').innerText()).not.toMatch(/rows\[|body\.|BLUESKY|graphemes/);
  // Shortened by one, the sentence goes from under the field and from the list, which follow what is typed.
  await field.fill(atLimit);
  await under.waitFor({ state: 'detached' });
  await alert.waitFor({ state: 'detached' });
  await field.fill(atLimit + '👍🏽');
  await page.getByRole('button', { name: 'Schedule at the next free slot' }).click();
  await under.waitFor();
  await screenshot(page, 'compose-over-the-limit');
  await checkAccessibility(page, 'the composer blocking a text over the limit');
  // Nothing was created, and nothing typed is lost.
  expect((await call(`${service.api}/posts?search=aaaaaaaaaa`, { key: ws.apiKey })).json.items).toHaveLength(0);
  expect(await field.inputValue()).toBe(atLimit + '👍🏽');
  expect(pageErrors(page)).toEqual([]);
});

test('the media rules are said before submit, in words with the numbers of the API’s MEDIA_RULE_VIOLATED', async () => {
  await page.goto('/compose');
  await page.getByRole('checkbox', { name: `${sky.name} (Bluesky)`, exact: true }).check();
  await page.getByLabel('Text', { exact: true }).fill('Five pictures');
  const small = await photo(64, 48);
  await page.getByLabel('Add images').setInputFiles([1, 2, 3, 4, 5].map((n) => ({ name: `p${n}.jpg`, mimeType: 'image/jpeg', buffer: small })));
  await expect.poll(() => page.locator('.media-item .success', { hasText: 'Uploaded' }).count(), { timeout: 15_000 }).toBe(5);
  await page.getByRole('button', { name: 'Schedule at the next free slot' }).click();
  const alert = page.getByRole('alert').filter({ hasText: 'Not sent' });
  const sentence = `Too many images for Bluesky (${sky.name}): 5, and it takes at most 4`;
  const expected = `rows[0].media: ${sentence}`;
  await alert.getByText(sentence, { exact: true }).waitFor();
  // Under the images too.
  await page.locator('.field-error', { hasText: sentence }).waitFor();
  // The API answers the same for the same media (the five just uploaded, completed from the browser).
  const db = service.service.core.db;
  const uploaded = (await db<{ id: string }[]>`SELECT id FROM media WHERE organization_id = ${ws.workspaceId} AND size = ${small.length}`).map((row) => row.id);
  expect(uploaded).toHaveLength(5);
  const refused = await call(`${service.api}/posts`, {
    method: 'POST',
    key: ws.apiKey,
    body: { rows: [{ content: 'Five pictures', media: uploaded.map((id) => ({ id })) }], shared: { selectedIntegrations: [sky.id] }, postAction: 'DRAFT' },
  });
  expect(refused.json).toEqual({ code: 'MEDIA_RULE_VIOLATED', message: expected });
  // Removing one is enough.
  await page.getByRole('button', { name: 'Remove image 5' }).click();
  await alert.waitFor({ state: 'detached' });
  expect(pageErrors(page)).toEqual([]);
});

test('a spent quota is said with the API’s message, and the text, channels and comment stay', async () => {
  await definePlan(service.service.core.db, { name: 'no-linkedin', rateLimitPerMinute: 1200, storageBytes: 1024 ** 3, monthlyPostQuotas: { BLUESKY: 100, LINKEDIN: 0 } });
  await setWorkspacePlan(service.service.core.db, ws.workspaceId, 'no-linkedin');
  try {
    await page.goto('/compose');
    await page.getByRole('checkbox', { name: `${inn.name} (LinkedIn)`, exact: true }).check();
    const text = 'A post the quota refuses';
    await page.getByLabel('Text', { exact: true }).fill(text);
    await page.getByRole('button', { name: 'Add a first comment' }).click();
    await page.getByLabel('First comment').fill('and its comment');
    await page.getByRole('button', { name: 'Schedule at the next free slot' }).click();
    const alert = page.getByRole('alert').filter({ hasText: 'The monthly post quota is spent.' });
    await alert.waitFor();
    // The message is the API's own, in words: the platform by its label, the reset as the page writes times.
    const refused = await call(`${service.api}/posts`, {
      method: 'POST',
      key: ws.apiKey,
      body: { rows: [{ content: text }], shared: { selectedIntegrations: [inn.id] }, postAction: 'NEXT_WINDOW' },
    });
    expect(refused.json.code).toBe('POST_QUOTA_EXCEEDED');
    expect(refused.json.message).toMatch(/^The no-linkedin plan allows 0 LINKEDIN posts a month; \d+ used this month, and this request needs 1\./);
    expect(await alert.locator('.error').textContent()).toMatch(
      /^The monthly post quota is spent\. The no-linkedin plan allows 0 LinkedIn posts a month; \d+ used this month, and this request needs 1\. The quota resets at \w{3}, \w{3} \d+, \d{4}, \d+:\d{2} [AP]M$/,
    );
    await waitForFocus(alert);
    expect(await page.getByLabel('Text', { exact: true }).inputValue()).toBe(text);
    expect(await page.getByLabel('First comment').inputValue()).toBe('and its comment');
    expect(await page.getByRole('checkbox', { name: `${inn.name} (LinkedIn)`, exact: true }).isChecked()).toBe(true);
    await screenshot(page, 'compose-quota-refused');
    await checkAccessibility(page, 'the composer after a quota refusal');
  } finally {
    await setWorkspacePlan(service.service.core.db, ws.workspaceId, 'business');
  }
  expect(pageErrors(page)).toEqual([]);
});

test('no subscription: the API’s PAYMENT_REQUIRED is said, the thread and comment stay, and the same post saves as a draft', async () => {
  await setSubscription(service.service.core.db, ws.workspaceId, 'none');
  try {
    await page.goto('/compose');
    await page.getByRole('checkbox', { name: `${sky.name} (Bluesky)`, exact: true }).check();
    const text = `Refused for want of a subscription ${Date.now()}`;
    await page.getByLabel('Text', { exact: true }).fill(text);
    await page.getByRole('button', { name: 'Add a thread part' }).click();
    await page.getByLabel('Thread part 2').fill('and its second part');
    await page.getByRole('button', { name: 'Add a first comment' }).click();
    await page.getByLabel('First comment').fill('with a comment');
    await page.getByLabel('Publish now').check();
    await page.getByRole('button', { name: 'Publish now' }).click();
    const alert = page.getByRole('alert').filter({ hasText: 'Nothing can be scheduled or published now.' });
    await alert.waitFor();
    const refused = await call(`${service.api}/posts`, {
      method: 'POST',
      key: ws.apiKey,
      body: { rows: [{ content: text }], shared: { selectedIntegrations: [sky.id] }, postAction: 'PUBLISH_NOW' },
    });
    expect(refused.status).toBe(402);
    expect(refused.json.code).toBe('PAYMENT_REQUIRED');
    // The API's message, its bracket for programs (`postAction DRAFT`) left out.
    expect(refused.json.message).toBe('The workspace has no active subscription: posts can be saved as drafts (postAction DRAFT), not scheduled');
    expect(await alert.locator('.error').textContent()).toBe('Nothing can be scheduled or published now. The workspace has no active subscription: posts can be saved as drafts, not scheduled');
    await waitForFocus(alert);
    expect(await page.getByLabel('Text', { exact: true }).inputValue()).toBe(text);
    expect(await page.getByLabel('Thread part 2').inputValue()).toBe('and its second part');
    expect(await page.getByLabel('First comment').inputValue()).toBe('with a comment');
    await screenshot(page, 'compose-payment-required');

    // Drafts need no subscription, as the message says: the same form saves as one.
    await page.getByLabel('Save as a draft').check();
    await page.getByRole('button', { name: 'Save draft' }).click();
    const outcome = page.getByRole('status').filter({ hasText: 'Saved as a draft' });
    await outcome.waitFor();
    const postId = (await outcome.getByRole('link', { name: 'Open the post' }).getAttribute('href'))!.split('/').pop()!;
    const draft = (await call(`${service.api}/posts/${postId}`, { key: ws.apiKey })).json;
    expect(draft.content).toBe(text);
    expect(draft.schedules.map((schedule: { status: string; scheduledContent: string; threadOrder: number }) => [schedule.threadOrder, schedule.status, schedule.scheduledContent])).toEqual([
      [0, 'DRAFT', text],
      [1, 'DRAFT', 'and its second part'],
    ]);
  } finally {
    await setSubscription(service.service.core.db, ws.workspaceId, 'active');
  }
  expect(pageErrors(page)).toEqual([]);
});

test('an edit while one channel starts publishing: the others change, the publishing one is left as it was, and the answer says so', async () => {
  const release = fake.holdNext('posts');
  try {
    const text = `Before the edit ${Date.now()}`;
    const created = await call(`${service.api}/posts`, {
      method: 'POST',
      key: ws.apiKey,
      body: { rows: [{ content: text, scheduledAt: `${JANUARY}-20T09:00:00.000Z` }], shared: { selectedIntegrations: [sky.id, inn.id] }, postAction: 'SCHEDULED_TIME' },
    });
    expect(created.status, created.text).toBe(201);
    const postId = created.json.postIds[0] as string;
    const before = (await call(`${service.api}/posts/${postId}`, { key: ws.apiKey })).json;
    const onIn = before.schedules.find((schedule: { integrationId: string }) => schedule.integrationId === inn.id);
    const onSky = before.schedules.find((schedule: { integrationId: string }) => schedule.integrationId === sky.id);
    await page.goto(`/posts/${postId}`);
    await page.getByRole('heading', { name: 'Edit post', level: 1 }).waitFor();
    await page.getByLabel('Text', { exact: true }).waitFor();

    // Meanwhile the LinkedIn schedule is moved to now (by someone else) and the worker starts sending it.
    const moved = await call(`${service.api}/posts/schedules/${onIn.id}/reschedule`, {
      method: 'POST',
      key: ws.apiKey,
      body: { scheduledAt: new Date(Date.now() + 1500).toISOString() },
    });
    expect(moved.status, moved.text).toBe(200);
    await eventually(
      async () => (await call(`${service.api}/posts/${postId}`, { key: ws.apiKey })).json,
      (post) => post.schedules.find((schedule: { id: string }) => schedule.id === onIn.id).status === 'PUBLISHING',
      20_000,
    );

    await page.getByLabel('Text', { exact: true }).fill(`${text} (edited)`);
    await page.getByRole('checkbox', { name: `Different text for ${sky.name} (Bluesky)` }).check();
    await page.getByRole('textbox', { name: `Text for ${sky.name}` }).fill(`${text} for Bluesky`);
    await page.getByRole('button', { name: 'Save changes' }).click();
    await page.getByRole('status').filter({ hasText: 'Post updated; 1 schedule was not altered because it is PUBLISHING' }).waitFor();
    const after = (await call(`${service.api}/posts/${postId}`, { key: ws.apiKey })).json;
    expect(after.content).toBe(`${text} (edited)`);
    expect(after.schedules.find((schedule: { id: string }) => schedule.id === onSky.id).scheduledContent).toBe(`${text} for Bluesky`);
    expect(after.schedules.find((schedule: { id: string }) => schedule.id === onIn.id).scheduledContent).toBe(text);

    // LinkedIn answers: what goes out is the text it was sending.
    release();
    const published = await eventually(
      async () => (await call(`${service.api}/posts/${postId}`, { key: ws.apiKey })).json.schedules.find((schedule: { id: string }) => schedule.id === onIn.id),
      (schedule) => schedule.status === 'PUBLISHED',
      20_000,
    );
    expect(fake.posts.get(published.platformPostId)?.text).toBe(text);
  } finally {
    release();
  }
  expect(pageErrors(page)).toEqual([]);
}, 60_000);

test('editing a thread: a rewritten part alone is sent, and a part over Bluesky’s limit is blocked with the API’s numbers', async () => {
  const created = await call(`${service.api}/posts`, {
    method: 'POST',
    key: ws.apiKey,
    body: {
      rows: [{ content: 'A thread to edit', thread: [{ content: 'Part two' }, { content: 'Part three' }], scheduledAt: `${JANUARY}-21T09:00:00.000Z` }],
      shared: { selectedIntegrations: [sky.id] },
      postAction: 'SCHEDULED_TIME',
    },
  });
  expect(created.status, created.text).toBe(201);
  const postId = created.json.postIds[0] as string;
  const before = (await call(`${service.api}/posts/${postId}`, { key: ws.apiKey })).json;
  await page.goto(`/posts/${postId}`);
  await page.getByRole('heading', { name: 'Edit post', level: 1 }).waitFor();
  await page.getByLabel('Thread part 2').fill('Part two, rewritten');
  await page.getByRole('article', { name: `Preview on Bluesky: ${sky.name}` }).getByText('Part two, rewritten').waitFor();
  await page.getByRole('button', { name: 'Save changes' }).click();
  await page.getByRole('status').filter({ hasText: 'Post updated' }).waitFor();
  const after = (await call(`${service.api}/posts/${postId}`, { key: ws.apiKey })).json;
  const texts = (post: { schedules: { threadOrder: number; scheduledContent: string; updatedAt: string }[] }) =>
    post.schedules.sort((a, b) => a.threadOrder - b.threadOrder).map((schedule) => schedule.scheduledContent);
  expect(texts(after)).toEqual(['A thread to edit', 'Part two, rewritten', 'Part three']);
  // Only the rewritten part was written: the others keep their updatedAt.
  const updated = (post: { schedules: { threadOrder: number; updatedAt: string }[] }) => post.schedules.sort((a, b) => a.threadOrder - b.threadOrder).map((schedule) => schedule.updatedAt);
  const [root, second, third_] = updated(after);
  expect([root, third_]).toEqual([updated(before)[0], updated(before)[2]]);
  expect(second).not.toBe(updated(before)[1]);

  const long = 'x'.repeat(301);
  await page.getByLabel('Thread part 3').fill(long);
  await counter(sky.name).waitFor();
  await page.locator('.thread-part .counter.over').getByText('301 / 300', { exact: false }).waitFor();
  await page.getByRole('button', { name: 'Save changes' }).click();
  const third = after.schedules.find((schedule: { threadOrder: number }) => schedule.threadOrder === 2);
  const refused = await call(`${service.api}/posts/${postId}`, { method: 'PATCH', key: ws.apiKey, body: { schedules: [{ id: third.id, content: long }] } });
  expect(refused.json.code).toBe('CONTENT_TOO_LONG');
  expect(refused.json.message).toBe(`body.schedules[0].content: Too long for Bluesky (${sky.name}): 301 of 300 characters (graphemes)`);
  await page.getByRole('alert').getByText(`Thread part 3: too long for Bluesky (${sky.name}): 301 of 300 characters`, { exact: true }).waitFor();
  const partField = page.getByLabel('Thread part 3');
  expect(await page.locator(`#${await partField.getAttribute('id')}-error`).textContent()).toBe(`Too long for Bluesky (${sky.name}): 301 of 300 characters`);
  expect(texts((await call(`${service.api}/posts/${postId}`, { key: ws.apiKey })).json)).toEqual(['A thread to edit', 'Part two, rewritten', 'Part three']);
  expect(pageErrors(page)).toEqual([]);
});

test('the composer at a phone’s width: nothing wider than the screen, no serious accessibility violation', async () => {
  const phone = await newPage(browser, { size: 'phone', baseURL: service.base });
  await signIn(phone, service.base, credentials);
  await phone.goto('/compose');
  await phone.getByRole('checkbox', { name: `${sky.name} (Bluesky)`, exact: true }).check();
  await phone.getByRole('checkbox', { name: `${inn.name} (LinkedIn)`, exact: true }).check();
  await phone.getByLabel('Text', { exact: true }).fill('On the phone: https://example.com #small');
  await phone.getByRole('button', { name: 'Add a thread part' }).click();
  await phone.getByLabel('Thread part 2').fill('A second part');
  await phone.getByRole('article', { name: `Preview on Bluesky: ${sky.name}` }).getByText('A second part').waitFor();
  // LinkedIn has no threads: said before anything is sent, as the API would refuse it.
  await phone.getByRole('button', { name: 'Schedule at the next free slot' }).click();
  await phone.getByRole('alert').getByText(`LinkedIn (${inn.name}) has no threads: publish each part as a post of its own, or leave ${inn.name} out`, { exact: true }).waitFor();
  expect(await phone.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(PHONE.width);
  await screenshot(phone, 'compose-phone');
  await checkAccessibility(phone, 'the composer at a phone’s width');
  expect(pageErrors(phone)).toEqual([]);
  await phone.close();
});

test('by keyboard alone: a post composed, a tag created, scheduled at the next free slot (which one is said), then edited', async () => {
  await page.goto('/compose');
  await page.getByRole('heading', { name: 'Compose', level: 1 }).waitFor();
  // The channels arrive after the heading (a slow machine shows "Loading…" a while): tab once they are there.
  await page.getByRole('checkbox', { name: `${inn.name} (LinkedIn)`, exact: true }).waitFor();
  await tabTo(page, `${inn.name} (LinkedIn)`);
  await page.keyboard.press('Space');
  await page.getByRole('checkbox', { name: `${inn.name} (LinkedIn)`, exact: true, checked: true }).waitFor();
  await tabTo(page, page.getByRole('textbox', { name: 'Text', exact: true }));
  await page.keyboard.type('Typed by keyboard #a11y');
  await counter(inn.name).getByText('23 / 3,000 characters', { exact: false }).waitFor();
  // Tags are folded until asked for: the button opens them and the focus goes into them.
  await tabTo(page, 'Add tags');
  await page.keyboard.press('Enter');
  await tabTo(page, 'New tag');
  await page.keyboard.type('Accessibility');
  await page.keyboard.press('Enter');
  await page.getByRole('checkbox', { name: 'Accessibility', checked: true }).waitFor();
  // "Next free posting slot" is the default; the radio group is reached and left as it is.
  await tabTo(page, 'Next free posting slot');
  await tabTo(page, 'Schedule at the next free slot');
  await page.keyboard.press('Enter');
  const outcome = page.getByRole('status').filter({ hasText: 'Scheduled at the next free posting slot.' });
  await outcome.waitFor();
  const postId = (await outcome.getByRole('link', { name: 'Open the post' }).getAttribute('href'))!.split('/').pop()!;
  const post = (await call(`${service.api}/posts/${postId}`, { key: ws.apiKey })).json;
  const slot = post.schedules[0].scheduledAt as string;
  const local = new Intl.DateTimeFormat('en-US', { timeZone: ZONE, weekday: 'short', day: 'numeric', month: 'short', year: 'numeric', hour: 'numeric', minute: '2-digit' }).format(new Date(slot));
  await outcome.getByText(`${inn.name} (LinkedIn): Scheduled, ${local} (Europe/Paris)`).waitFor();
  expect(post.tags.map((tag: { name: string }) => tag.name)).toEqual(['Accessibility']);
  await screenshot(page, 'compose-keyboard-scheduled');

  await tabTo(page, 'Open the post', { backwards: true });
  await page.keyboard.press('Enter');
  // An in-app navigation: the heading shows at once and the page puts the focus on it in an effect just after (so Tab
  // starts from the page's top); the composer comes once the post is loaded. Tab only once both hold (tabTo waits for
  // the field): before the focus moves it is on the link clicked, gone, and Tab starts from the navigation.
  const heading = page.getByRole('heading', { name: 'Edit post', level: 1 });
  await heading.waitFor();
  await waitForFocus(heading);
  await tabTo(page, page.getByRole('textbox', { name: 'Text', exact: true }));
  await page.keyboard.press('End');
  await page.keyboard.type(' (edited)');
  await tabTo(page, 'Save changes');
  await page.keyboard.press('Enter');
  await page.getByRole('status').filter({ hasText: 'Post updated' }).waitFor();
  const edited = await eventually(
    async () => (await call(`${service.api}/posts/${postId}`, { key: ws.apiKey })).json,
    (value) => value.content.endsWith('(edited)'),
  );
  expect(edited.content).toBe('Typed by keyboard #a11y (edited)');
  expect(edited.schedules[0]).toMatchObject({ scheduledContent: 'Typed by keyboard #a11y (edited)', scheduledAt: slot, status: 'SCHEDULED' });
  await checkAccessibility(page, 'the composer editing a post');
  await screenshot(page, 'compose-edit');
  expect(pageErrors(page)).toEqual([]);
});
