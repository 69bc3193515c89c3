import { createHash } from 'node:crypto';
import type { Browser, Locator, Page } from 'playwright-core';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { addDays, addMonths, dayOf, instantAt, weekdayOf } from '../src/dashboard/zoned-time.js';
import { checkAccessibility, dragTo, launchBrowser, newPage, openCalendar, pageErrors, screenshot, setOwnerPassword, signIn, tabTo, waitForFocus } from './support/browser.js';
import { photo } from './support/images.js';
import { call, eventually, startTestService, type TestService, type Workspace } from './support/service.js';

/**
 * The calendar in a real browser, in the workspace's time zone (Europe/Paris; the browser's is UTC): month, week and
 * agenda views; moving an entry by dragging it and by the keyboard's "Move to…" dialog, checked through the API; a
 * schedule that failed (a channel without credentials, published by the worker) shown with its reason and retried; a
 * status change appearing without a reload; the agenda paged by the keyset cursor; axe-core at both widths.
 */
const TZ = 'Europe/Paris';
let service: TestService;
let ws: Workspace;
let browser: Browser;
let sql: postgres.Sql;
let credentials: { email: string; password: string };
let sky: string;
let linkedin: string;

/** A day in the middle of next month (not a Sunday, so that the day after is in the same week), and days around it. */
let base: string;
let nextDay: string;
const created: Partial<Record<string, { postId: string; scheduleId: string }>> = {};

const rest = (path: string, options: { method?: string; body?: unknown } = {}) => call(`${service.api}${path}`, { key: ws.apiKey, ...options });

async function createPost(content: string | string[], scheduledAt: string | undefined, integrations: string[], extra: Record<string, unknown> = {}) {
  const contents = Array.isArray(content) ? content : [content];
  const answer = await rest('/posts', {
    method: 'POST',
    body: {
      rows: contents.map((text, index) => ({
        content: text,
        ...(scheduledAt && { scheduledAt: new Date(Date.parse(scheduledAt) + index * 3_600_000).toISOString() }),
        ...extra,
      })),
      shared: { selectedIntegrations: integrations },
      postAction: scheduledAt ? 'SCHEDULED_TIME' : 'PUBLISH_NOW',
    },
  });
  expect(answer.status, answer.text).toBe(201);
  const posts = [];
  for (const postId of answer.json.postIds as string[]) {
    const post = await rest(`/posts/${postId}`);
    posts.push({ postId, scheduleId: post.json.schedules[0].id as string });
  }
  return posts;
}

/** The schedule as the API answers it (GET /schedules/{id}?postId=…). */
async function scheduleOf(name: string) {
  const { postId, scheduleId } = created[name]!;
  const answer = await rest(`/schedules/${scheduleId}?postId=${postId}`);
  expect(answer.status, answer.text).toBe(200);
  return answer.json.schedules[0] as { status: string; scheduledAt: string; failureReason: string | null; lastAttempt: string | null };
}

beforeAll(async () => {
  [service, browser] = await Promise.all([startTestService({}, { api: true, worker: true }), launchBrowser()]);
  ws = await service.workspace({ workspaceName: 'Calendar', ownerName: 'Ada Lovelace', plan: 'business' });
  sql = postgres(service.databaseUrl, { max: 2, onnotice: () => {} });
  credentials = await setOwnerPassword(service, ws);
  await ws.admin('updateWorkspaceSettings', { timeZone: TZ });
  sky = (await ws.admin('createIntegration', { platform: 'BLUESKY', name: 'Sky' })).id;
  linkedin = (await ws.admin('createIntegration', { platform: 'LINKEDIN', name: 'In' })).id;
  // The Bluesky channel has an avatar (the platform's CDN, in real life).
  const avatar = `data:image/png;base64,${(await photo(8, 8, 'png')).toString('base64')}`;
  await sql`UPDATE integrations SET image = ${avatar} WHERE id = ${sky}`;

  // A photo for the first post, uploaded as any client does.
  const bytes = await photo(120, 90);
  const checksum = createHash('sha256').update(bytes).digest('base64');
  const started = await rest('/uploads/initiate', {
    method: 'POST',
    body: { scenarioId: 'post_attachments', fileName: 'photo.jpg', fileType: 'image/jpeg', fileSize: bytes.length, checksum },
  });
  expect(started.status, started.text).toBe(200);
  const put = await fetch(started.json.signedUrl, { method: 'PUT', body: new Uint8Array(bytes), headers: started.json.requiredHeaders });
  expect(put.status).toBe(200);
  const completed = await rest('/uploads/complete', { method: 'POST', body: { uploadId: started.json.uploadId, checksum } });
  expect(completed.status, completed.text).toBe(200);

  base = addDays(addMonths(dayOf(new Date(), TZ), 1), 9);
  if (weekdayOf(base) === 6) base = addDays(base, -1);
  nextDay = addDays(base, 1);
  [created.launch] = await createPost('Launch day announcement', instantAt(base, '10:00', TZ), [sky], { media: [{ id: completed.json.mediaId, altText: 'A gradient' }] });
  [created.digest] = await createPost('Weekly digest for the team', instantAt(base, '16:00', TZ), [linkedin]);
  [created.keyboard] = await createPost('Moved by keyboard', instantAt(base, '12:00', TZ), [sky]);
  const agenda = await createPost(
    Array.from({ length: 22 }, (_, index) => `Agenda item ${String(index).padStart(2, '0')}`),
    instantAt(addDays(base, 10), '00:30', TZ),
    [linkedin],
  );
  agenda.forEach((post, index) => (created[`agenda${index}`] = post));
  // Published now to a channel without credentials: the worker fails it meanwhile (see "a failed schedule…").
  [created.failing] = await createPost('This one cannot be published', undefined, [sky]);
});

afterAll(async () => {
  await browser?.close();
  await sql?.end();
  await service?.stop();
});

async function signedIn(size: 'desktop' | 'phone' = 'desktop') {
  const page = await newPage(browser, { size, baseURL: service.base });
  await signIn(page, service.base, credentials);
  return page;
}


const entry = (page: Page, name: string): Locator => page.locator(`[data-schedule-id="${created[name]!.scheduleId}"]`);

async function fitsTheWidth(page: Page, label: string) {
  const { scrollWidth, screenWidth } = await page.evaluate(() => ({ scrollWidth: document.documentElement.scrollWidth, screenWidth: window.innerWidth }));
  expect(scrollWidth, `${label}: ${scrollWidth} px wide on a ${screenWidth} px screen`).toBeLessThanOrEqual(screenWidth);
}

describe('views', () => {
  test('month, week and agenda show the scheduled posts in the workspace’s time zone, with status words, avatar and thumbnail', async () => {
    const page = await signedIn();
    await openCalendar(page, 'month', base);
    const launch = entry(page, 'launch');
    await launch.waitFor();
    // 10:00 in Paris, on the browser whose clock is UTC.
    expect(await launch.innerText()).toMatch(/10:00\s*AM[\s\S]*Scheduled[\s\S]*Sky[\s\S]*Launch day announcement/);
    expect(await page.locator(`.month-grid [data-day="${base}"]`).innerText()).toContain('Weekly digest for the team');
    await launch.locator('img.entry-avatar').waitFor();
    await launch.locator('img.entry-thumb').waitFor();
    // The digest's channel has no avatar: its initial stands in.
    await entry(page, 'digest').locator('.entry-avatar.initial').waitFor();
    // The legend says what each colour means, in words.
    const legend = await page.getByRole('list', { name: 'Status colours' }).innerText();
    for (const word of ['Draft', 'Scheduled', 'Publishing', 'Published', 'Failed']) expect(legend).toContain(word);
    await page.getByText(`Times are in the workspace’s time zone, ${TZ}`).waitFor();
    await checkAccessibility(page, 'the calendar, month');
    await screenshot(page, 'calendar-month-desktop');

    // Week: each entry in its hour.
    await page.getByRole('link', { name: 'Week', exact: true }).click();
    await page.waitForURL(`**/calendar?view=week&date=${base}`);
    await page.locator(`.week-grid [data-day="${base}"] [data-hour="10"] [data-schedule-id="${created.launch!.scheduleId}"]`).waitFor();
    await page.locator(`.week-grid [data-day="${base}"] [data-hour="16"] [data-schedule-id="${created.digest!.scheduleId}"]`).waitFor();
    await checkAccessibility(page, 'the calendar, week');
    await screenshot(page, 'calendar-week-desktop');

    // Agenda: from that day on, a day heading each.
    await page.getByRole('link', { name: 'Agenda', exact: true }).click();
    await page.waitForURL(`**/calendar?view=agenda&date=${base}`);
    await entry(page, 'launch').waitFor();
    await page.getByRole('heading', { name: new RegExp(`${Number(base.slice(8))}, ${base.slice(0, 4)}$`), level: 3 }).first().waitFor();
    await checkAccessibility(page, 'the calendar, agenda');
    await screenshot(page, 'calendar-agenda-desktop');

    // Paging by period: the next month is one link away, and back works.
    await openCalendar(page, 'month', base);
    await page.getByRole('link', { name: 'Next month' }).click();
    await page.waitForURL(`**/calendar?view=month&date=${addMonths(base, 1)}`);
    await expect.poll(() => entry(page, 'launch').count()).toBe(0);
    await page.goBack();
    await entry(page, 'launch').waitFor();
    expect(pageErrors(page)).toEqual([]);
    await page.close();
  });

  test('at a phone’s width: each view readable, no sideways scrolling, no serious accessibility violation', async () => {
    const page = await signedIn('phone');
    for (const view of ['month', 'week', 'agenda']) {
      await openCalendar(page, view, base);
      await entry(page, 'launch').waitFor();
      await checkAccessibility(page, `the calendar, ${view} (phone)`);
      await fitsTheWidth(page, `calendar ${view}`);
      await screenshot(page, `calendar-${view}-phone`);
    }
    // The dialog too.
    await entry(page, 'launch').getByRole('button').click();
    await page.getByRole('dialog').waitFor();
    await checkAccessibility(page, 'the schedule dialog (phone)');
    await screenshot(page, 'calendar-dialog-phone');
    expect(pageErrors(page)).toEqual([]);
    await page.close();
  });

  test('filtered by platform and status (keyboard), the filters in the address; back undoes them', async () => {
    const page = await signedIn();
    await openCalendar(page, 'month', base);
    await entry(page, 'launch').waitFor();
    // The filters are folded while none is on, so that the month comes first.
    await tabTo(page, 'Filters');
    await page.keyboard.press('Enter');
    await tabTo(page, 'LinkedIn');
    await page.keyboard.press('Space');
    await page.waitForURL(`**/calendar?view=month&date=${base}&platforms=LINKEDIN`);
    await entry(page, 'launch').waitFor({ state: 'detached' });
    await entry(page, 'digest').waitFor();
    // The focus stays on the checkbox, for the next choice.
    await waitForFocus(page.getByRole('checkbox', { name: 'LinkedIn' }));
    await tabTo(page, 'Failed');
    await page.keyboard.press('Space');
    await page.waitForURL(/platforms=LINKEDIN&statuses=FAILED$/);
    await page.getByText('No schedules this month with these filters.').waitFor();
    await page.goBack();
    await entry(page, 'digest').waitFor();
    await page.goBack();
    await entry(page, 'launch').waitFor();
    expect(await page.getByRole('checkbox', { name: 'LinkedIn' }).isChecked()).toBe(false);
    expect(pageErrors(page)).toEqual([]);
    await page.close();
  });

  test('the agenda pages forward and backward by the keyset cursor', async () => {
    const page = await signedIn();
    await openCalendar(page, 'agenda', addDays(base, 10));
    await entry(page, 'agenda0').waitFor();
    expect(await page.locator('.agenda .entry').count()).toBe(20);
    expect(await entry(page, 'agenda20').count()).toBe(0);
    await page.getByRole('button', { name: 'Later schedules' }).click();
    await entry(page, 'agenda21').waitFor();
    expect(await page.locator('.agenda .entry').count()).toBe(2);
    // The last page: nothing later.
    expect(await page.getByRole('button', { name: 'Later schedules' }).isDisabled()).toBe(true);
    await page.getByRole('button', { name: 'Earlier schedules' }).click();
    await entry(page, 'agenda19').waitFor();
    expect(await page.locator('.agenda .entry').count()).toBe(20);
    expect(await entry(page, 'agenda0').count()).toBe(1);
    expect(await entry(page, 'agenda20').count()).toBe(0);
    await page.close();
  });
});


describe('moving', () => {
  test('an entry dragged to the next day (month), then to another hour (week): scheduledAt changes through the API', async () => {
    const page = await signedIn();
    await openCalendar(page, 'month', base);
    await dragTo(page, entry(page, 'launch'), page.locator(`.month-grid [data-day="${nextDay}"]`));
    await page.getByRole('status').filter({ hasText: /^Moved “Launch day announcement”/ }).waitFor();
    await page.locator(`.month-grid [data-day="${nextDay}"] [data-schedule-id="${created.launch!.scheduleId}"]`).waitFor();
    expect((await scheduleOf('launch')).scheduledAt).toBe(instantAt(nextDay, '10:00', TZ));

    await openCalendar(page, 'week', nextDay);
    await dragTo(page, entry(page, 'launch'), page.locator(`.week-grid [data-day="${nextDay}"] [data-hour="14"]`));
    await page.locator(`.week-grid [data-day="${nextDay}"] [data-hour="14"] [data-schedule-id="${created.launch!.scheduleId}"]`).waitFor();
    expect((await scheduleOf('launch')).scheduledAt).toBe(instantAt(nextDay, '14:00', TZ));
    await screenshot(page, 'calendar-week-after-drag');
    expect(pageErrors(page)).toEqual([]);
    await page.close();
  });

  test('by keyboard: the entry’s “Move to…” dialog takes a date and a time; Escape steps back; the focus returns', async () => {
    const page = await signedIn();
    await openCalendar(page, 'month', base);
    const button = entry(page, 'keyboard').getByRole('button');
    await button.waitFor();
    await tabTo(page, button, { maxTabs: 80 });
    await page.keyboard.press('Enter');
    const dialog = page.getByRole('dialog');
    await dialog.waitFor();
    await waitForFocus(dialog.getByRole('link', { name: 'Open in the composer' }));
    expect(await dialog.getByRole('link', { name: 'Open in the composer' }).getAttribute('href')).toBe(`/posts/${created.keyboard!.postId}`);
    await tabTo(page, 'Move to…', { maxTabs: 5 });
    await page.keyboard.press('Enter');
    await dialog.getByRole('heading', { name: 'Move to…' }).waitFor();
    const date = dialog.getByLabel('Date');
    await waitForFocus(date);
    expect(await date.inputValue()).toBe(base);
    expect(await dialog.getByLabel('Time').inputValue()).toBe('12:00');
    await checkAccessibility(page, 'the Move to dialog');
    await screenshot(page, 'calendar-move-dialog');
    // Escape goes back to the details, a second one closes, and the focus is back on the entry.
    await page.keyboard.press('Escape');
    await dialog.getByRole('button', { name: 'Move to…' }).waitFor();
    await page.keyboard.press('Escape');
    await dialog.waitFor({ state: 'hidden' });
    await waitForFocus(button);

    await page.keyboard.press('Enter');
    await waitForFocus(dialog.getByRole('link', { name: 'Open in the composer' }));
    await tabTo(page, 'Move to…', { maxTabs: 5 });
    await page.keyboard.press('Enter');
    await waitForFocus(dialog.getByLabel('Date'));
    const [year, month, day] = nextDay.split('-');
    await page.keyboard.type(`${month}${day}${year}`);
    // Tab goes through the date's own parts (month, day, year) before the time.
    await tabTo(page, 'Time', { maxTabs: 4 });
    await page.keyboard.type('0345PM');
    await tabTo(page, 'Move', { maxTabs: 10 });
    await page.keyboard.press('Enter');
    await dialog.waitFor({ state: 'hidden' });
    await page.getByRole('status').filter({ hasText: /^Moved “Moved by keyboard”/ }).waitFor();
    expect((await scheduleOf('keyboard')).scheduledAt).toBe(instantAt(nextDay, '15:45', TZ));
    // The entry is now in its new day, and has the focus again.
    const moved = page.locator(`.month-grid [data-day="${nextDay}"] [data-schedule-id="${created.keyboard!.scheduleId}"] button`);
    await moved.waitFor();
    await waitForFocus(moved);

    // A time in the past is refused with the API's message, under the field, nothing lost.
    await page.keyboard.press('Enter');
    await waitForFocus(dialog.getByRole('link', { name: 'Open in the composer' }));
    await tabTo(page, 'Move to…', { maxTabs: 5 });
    await page.keyboard.press('Enter');
    await waitForFocus(dialog.getByLabel('Date'));
    await page.keyboard.type('01022020');
    await tabTo(page, 'Move', { maxTabs: 10 });
    await page.keyboard.press('Enter');
    await dialog.getByText(/is in the past/).waitFor();
    expect(await dialog.getByLabel('Date').inputValue()).toBe('2020-01-02');
    expect((await scheduleOf('keyboard')).scheduledAt).toBe(instantAt(nextDay, '15:45', TZ));
    expect(pageErrors(page)).toEqual([]);
    await page.close();
  });
});

describe('failures and live updates', () => {
  test('a failed schedule shows its reason and the platform’s message; Retry publishes it again (keyboard only)', async () => {
    const failed = await eventually(() => scheduleOf('failing'), (schedule) => schedule.status === 'FAILED', 20_000);
    expect(failed.failureReason).toMatch(/not connected/);
    // What a platform says when it refuses (this channel never reached one): as the worker records it.
    await sql`UPDATE schedules SET failure_detail = ${sql.json({ status: 401, platformMessage: 'Token could not be verified', platformCode: 'InvalidToken', traceId: null, raw: null })}
      WHERE id = ${created.failing!.scheduleId}`;

    const page = await signedIn();
    await openCalendar(page, 'agenda', dayOf(new Date(), TZ));
    const item = entry(page, 'failing');
    await item.waitFor();
    // The agenda shows the reason on the entry itself.
    expect(await item.innerText()).toMatch(/Failed[\s\S]*not connected/);
    await tabTo(page, item.getByRole('button'), { maxTabs: 30 });
    await page.keyboard.press('Enter');
    const dialog = page.getByRole('dialog');
    const why = dialog.getByRole('group', { name: 'Why it failed' });
    await why.waitFor();
    expect(await why.innerText()).toMatch(/Why it failed: This channel is not connected[\s\S]*The platform said: Token could not be verified \(HTTP 401, InvalidToken\)/);
    await checkAccessibility(page, 'a failed schedule’s dialog');
    await screenshot(page, 'calendar-failed-dialog');

    await tabTo(page, 'Retry now', { maxTabs: 6 });
    await page.keyboard.press('Enter');
    await page.getByRole('status').filter({ hasText: /^Retrying “This one cannot be published”/ }).waitFor();
    // Published again (and, the channel still not connected, failed again): a new attempt, at a new time.
    const again = await eventually(
      () => scheduleOf('failing'),
      (schedule) => schedule.scheduledAt > failed.scheduledAt && schedule.status === 'FAILED' && schedule.lastAttempt! > failed.lastAttempt!,
      20_000,
    );
    expect(again.scheduledAt > failed.scheduledAt).toBe(true);
    expect(again.lastAttempt! > failed.lastAttempt!).toBe(true);
    // The dialog is still open, showing the schedule as it is now.
    await dialog.getByRole('group', { name: 'Why it failed' }).waitFor();
    expect(pageErrors(page)).toEqual([]);
    await page.close();
  });

  test('a status change shows without a reload, and the open dialog and its focus stay', async () => {
    const page = await signedIn();
    // Due once the dialog is open (below), not before: a slow page must not miss the Scheduled state.
    [created.soon] = await createPost('Going out in a moment', new Date(Date.now() + 600_000).toISOString(), [sky]);
    await openCalendar(page, 'agenda', dayOf(new Date(), TZ));
    const item = entry(page, 'soon');
    await item.waitFor();
    expect(await item.innerText()).toContain('Scheduled');
    await page.evaluate(() => ((window as unknown as { notReloaded: boolean }).notReloaded = true));
    await item.getByRole('button').focus();
    await page.keyboard.press('Enter');
    const dialog = page.getByRole('dialog');
    const composer = dialog.getByRole('link', { name: 'Open in the composer' });
    await composer.waitFor();
    const soon = await rest(`/posts/schedules/${created.soon!.scheduleId}/reschedule`, { method: 'POST', body: { scheduledAt: new Date(Date.now() + 2000).toISOString() } });
    expect(soon.status, soon.text).toBe(200);
    // The worker publishes it at its time (and fails: no credentials); the page reads the change by itself.
    await dialog.getByRole('group', { name: 'Why it failed' }).waitFor({ timeout: 25_000 });
    expect(await dialog.innerText()).toContain('Failed');
    await waitForFocus(composer);
    await page.keyboard.press('Escape');
    await dialog.waitFor({ state: 'hidden' });
    expect(await item.innerText()).toContain('Failed');
    expect(await page.evaluate(() => (window as unknown as { notReloaded?: boolean }).notReloaded)).toBe(true);
    expect((await scheduleOf('soon')).status).toBe('FAILED');
    expect(pageErrors(page)).toEqual([]);
    await page.close();
  }, 40_000);

  test('delete asks first; the schedule is gone from the calendar and the API', async () => {
    const page = await signedIn();
    await openCalendar(page, 'week', base);
    const item = entry(page, 'digest');
    await item.getByRole('button').click();
    const dialog = page.getByRole('dialog');
    await dialog.getByRole('button', { name: 'Delete…' }).click();
    await dialog.getByRole('heading', { name: 'Delete this schedule?' }).waitFor();
    await waitForFocus(dialog.getByRole('button', { name: 'Cancel' }));
    await dialog.getByRole('button', { name: 'Delete', exact: true }).click();
    await dialog.waitFor({ state: 'hidden' });
    await item.waitFor({ state: 'detached' });
    const answer = await rest(`/schedules/${created.digest!.scheduleId}?postId=${created.digest!.postId}`);
    expect(answer.status).toBe(404);
    expect(pageErrors(page)).toEqual([]);
    await page.close();
  });
});
