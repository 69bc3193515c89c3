/**
 * The README's screenshots, of the real dashboard: starts the service as `npm start` does (the API and the worker, an
 * embedded Postgres and object store under a temporary DATA_DIR), a Bluesky PDS on loopback (test/support/pds.ts, as
 * the tests use), makes a workspace with a Bluesky channel on it and a few posts (scheduled, a draft, one published
 * now, one with an image), then saves the calendar, the composer and the posts list at 1280 × 800 in Chromium (the one
 * inside @sparticuz/chromium the tests drive).
 *
 *   npm run screenshots                                    writes docs/images/{calendar,composer,posts}.png
 *   npm run screenshots -- --out DIR                       writes them into DIR
 *
 * `test/screenshots.test.ts` runs it on every `npm test` into a temporary directory, so it cannot rot; there it is given
 * the run's Postgres server (`--postgres-url`: a fresh database is made on it and dropped), PDS (`--pds-url`) and
 * Chromium directory (`--chromium-dir`) instead of starting its own. It waits for states (a page's content shown, a post
 * published, an image's variants made), never for a length of time.
 */
import { randomBytes, createHash } from 'node:crypto';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { AtpAgent } from '@atproto/api';
import postgres from 'postgres';
import { chromium } from 'playwright-core';
import sharp from 'sharp';
import { bootstrapWorkspace } from '../src/admin/first-workspace.js';
import { createAccountLink } from '../src/auth/sessions.js';
import { loadConfig } from '../src/process/config.js';
import { createLogger } from '../src/process/logger.js';
import { startService, type Service } from '../src/service/start.js';
import { chromiumExecutable } from '../test/support/chromium.js';
import { startPds } from '../test/support/pds.js';
import { removeDataDir } from '../test/support/processes.js';

export const VIEWPORT = { width: 1280, height: 800 } as const;
export const SCREENSHOTS = ['calendar', 'composer', 'posts'] as const;

/** What test/support/browser.ts launches Chromium with (its own list is private to the tests). */
const CHROMIUM_ARGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
  '--disable-dev-shm-usage',
  '--font-render-hinting=none',
];

export interface ScreenshotOptions {
  /** Where the PNGs go. */
  out: string;
  /** A Postgres server to make a fresh database on; without it, the service's embedded one under its DATA_DIR. */
  postgresUrl?: string;
  /** A running PDS; without it, one is started on loopback. */
  pdsUrl?: string;
  /** Where Chromium is (or is to be) unpacked; without it, a temporary directory, removed at the end. */
  chromiumDir?: string;
}

/** An operation run as the workspace's owner, as the admin command runs it. */
type RunAs = <T>(operationId: string, args?: Record<string, unknown>) => Promise<T>;
/** A call of the REST API with the workspace's key; its answer, or an error saying what it was. */
type Rest = <T>(path: string, init?: { method?: string; body?: unknown }) => Promise<T>;

/** Runs `steps` in order, then every cleanup registered, last first, whatever failed. */
async function withCleanups<T>(steps: (cleanup: (step: () => Promise<unknown>) => void) => Promise<T>): Promise<T> {
  const cleanups: (() => Promise<unknown>)[] = [];
  try {
    return await steps((step) => cleanups.push(step));
  } finally {
    for (const step of cleanups.reverse()) await step().catch((error: unknown) => console.error('cleanup:', error));
  }
}

/** Reads `read` until `done` holds of what it answers (the state waited for); `timeoutMs` is only a safety bound. */
async function until<T>(what: string, read: () => Promise<T>, done: (value: T) => boolean, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (let delay = 20; ; delay = Math.min(delay * 2, 250)) {
    const value = await read();
    if (done(value)) return value;
    if (Date.now() > deadline) throw new Error(`${what}: not so after ${timeoutMs} ms (last: ${JSON.stringify(value)})`);
    await new Promise((next) => setTimeout(next, delay));
  }
}

export async function takeScreenshots(options: ScreenshotOptions): Promise<string[]> {
  return withCleanups(async (cleanup) => {
    const out = resolve(options.out);
    await mkdir(out, { recursive: true });

    // A Postgres database, a PDS and Chromium: given, or started here.
    let databaseUrl: string | undefined;
    if (options.postgresUrl) {
      const name = `screenshots_${randomBytes(6).toString('hex')}`;
      const server = postgres(options.postgresUrl, { max: 1, onnotice: () => {} });
      await server.unsafe(`CREATE DATABASE ${name}`);
      cleanup(async () => {
        await server.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
        await server.end();
      });
      const url = new URL(options.postgresUrl);
      url.pathname = `/${name}`;
      databaseUrl = url.href;
    }
    let pdsUrl = options.pdsUrl;
    if (!pdsUrl) {
      const pds = await startPds();
      cleanup(pds.stop);
      pdsUrl = pds.url;
    }
    const chromiumDir = options.chromiumDir ?? (await mkdtemp(join(tmpdir(), 'postwise-chromium-')));
    if (!options.chromiumDir) cleanup(() => rm(chromiumDir, { recursive: true, force: true }));

    // The service, as `npm start` runs it: the API and the worker (which publishes and makes image variants).
    const dataDir = await mkdtemp(join(tmpdir(), 'postwise-screenshots-'));
    cleanup(() => removeDataDir(dataDir));
    const config = { ...loadConfig({}), dataDir, databaseUrl, port: 0, logLevel: 'warn' as const, encryptionKey: randomBytes(32).toString('base64') };
    const service: Service = await startService(config, createLogger(config.logLevel), { api: true, worker: true });
    cleanup(() => service.stop());
    const base = service.url!;
    const { db } = service.core;

    // A workspace, its owner's password, and a Bluesky account on the PDS connected as its channel.
    const ws = await bootstrapWorkspace(db, { workspaceName: 'Harbour Bakery', ownerName: 'Ada Lovelace', plan: 'pro' });
    const runAs: RunAs = async <T>(operationId: string, args: Record<string, unknown> = {}) => {
      const outcome = await service.core.runAs(ws, operationId, args);
      if (!outcome.ok) throw new Error(`${operationId}: ${JSON.stringify(outcome.body)}`);
      return outcome.body as T;
    };
    const account = await blueskyAccount(pdsUrl);
    await runAs('connectBluesky', { handle: account.handle, appPassword: account.appPassword, serviceUrl: pdsUrl });
    const [channel] = await runAs<{ id: string }[]>('listIntegrations');
    const posts = await writePosts(`${base}/api/v1`, ws.apiKey, channel!.id, runAs);

    // Chromium, signed in as the owner.
    const { executable, fontConfig } = await chromiumExecutable(chromiumDir);
    const browser = await chromium.launch({ executablePath: executable, headless: true, args: CHROMIUM_ARGS, env: { ...process.env, FONTCONFIG_FILE: fontConfig }, timeout: 60_000 });
    cleanup(() => browser.close());
    const page = await browser.newPage({ baseURL: base, viewport: VIEWPORT, deviceScaleFactor: 1, locale: 'en-US', timezoneId: 'UTC', reducedMotion: 'reduce' });
    page.setDefaultTimeout(15_000);
    const [owner] = await db<{ email: string }[]>`SELECT email FROM users WHERE id = ${ws.userId}`;
    const link = await createAccountLink(db, base, { purpose: 'setup', workspaceId: ws.workspaceId, userId: ws.userId, email: owner!.email });
    const setup = await page.request.post(`${base}/auth/setup`, { data: { token: new URL(link.url).searchParams.get('token'), password: 'screenshots are real pages' } });
    if (!setup.ok()) throw new Error(`POST /auth/setup: ${setup.status()} ${await setup.text()}`);

    const written: string[] = [];
    const shoot = async (name: (typeof SCREENSHOTS)[number], path: string, shown: string) => {
      await page.goto(path);
      await page.getByRole('heading', { level: 1 }).first().waitFor();
      await page.getByText(shown).first().waitFor();
      await page.locator('progress').first().waitFor({ state: 'detached' });
      const file = join(out, `${name}.png`);
      await page.screenshot({ path: file, animations: 'disabled', caret: 'hide' });
      written.push(file);
    };
    await shoot('calendar', `/calendar?view=month&date=${posts.month}`, posts.shownOnCalendar);
    await shoot('composer', `/posts/${posts.withImage}`, posts.withImageText);
    await shoot('posts', '/posts', posts.withImageText);
    return written;
  });
}

/** A fresh account on the PDS (`<name>.test`, as the PDS's handles are) with an app password for Postwise. */
async function blueskyAccount(pdsUrl: string): Promise<{ handle: string; appPassword: string }> {
  const agent = new AtpAgent({ service: pdsUrl });
  // The bakery's own handle, unless that PDS has it already (the test run's, shared by every test file).
  for (const handle of ['harbourbakery.test', `harbour${randomBytes(4).toString('hex')}.test`]) {
    const password = randomBytes(12).toString('hex');
    const created = await agent.com.atproto.server.createAccount({ handle, password, email: `${handle}@example.com` }).catch(() => undefined);
    if (!created) continue;
    await agent.login({ identifier: handle, password });
    const appPassword = (await agent.com.atproto.server.createAppPassword({ name: 'postwise' })).data.password;
    return { handle, appPassword };
  }
  throw new Error(`Could not make an account on ${pdsUrl}`);
}

/**
 * The posts the pages show, written over the REST API with the workspace's key as an integrator would: a few scheduled
 * over the days to come (one with an image, one with a thread), a draft with a date, and one published now (waited for
 * until the PDS has it). Their days fall in one month, which the calendar shows.
 */
async function writePosts(api: string, key: string, channel: string, runAs: RunAs) {
  const rest: Rest = async <T>(path: string, init: { method?: string; body?: unknown } = {}) => {
    const answer = await fetch(`${api}${path}`, {
      method: init.method ?? 'GET',
      headers: { 'x-api-key': key, ...(init.body !== undefined && { 'content-type': 'application/json' }) },
      body: init.body === undefined ? undefined : JSON.stringify(init.body),
    });
    const json: unknown = await answer.json();
    if (!answer.ok) throw new Error(`${init.method ?? 'GET'} ${path}: ${answer.status} ${JSON.stringify(json)}`);
    return json as T;
  };
  const create = async (body: unknown) => (await rest<{ postId: string }>('/posts', { method: 'POST', body })).postId;

  // Days of one month, all ahead: the rest of this month, or the start of the next when this one is nearly over.
  const now = new Date();
  const nextMonth = now.getUTCDate() > 20;
  const first = nextMonth ? new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 2)) : new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() + 1));
  const at = (days: number, time: string) => {
    const day = new Date(first.getTime() + days * 86_400_000);
    return `${day.toISOString().slice(0, 10)}T${time}:00.000Z`;
  };
  const month = first.toISOString().slice(0, 10);

  const tag = await runAs<{ id: string }>('createTag', { name: 'Bread' });
  const image = await uploadImage(rest);
  const withImageText = 'Sourdough Saturday: the first loaves are out of the oven at 7. Come early! #sourdough';
  const withImage = await create({
    rows: [{ content: withImageText, scheduledAt: at(1, '07:00'), media: [{ id: image, altText: 'Golden loaves cooling on a rack' }], tagIds: [tag.id] }],
    shared: { selectedIntegrations: [channel] },
    postAction: 'SCHEDULED_TIME',
  });
  const scheduled = [
    { content: 'New this week: cardamom buns, the Swedish way. Baked fresh every morning until Sunday.', scheduledAt: at(0, '09:30') },
    { content: 'We are closed on Monday for a well-earned rest. See you Tuesday!', scheduledAt: at(3, '17:00') },
    {
      content: 'How we make our croissants, a thread: it starts with cold butter and a lot of patience.',
      scheduledAt: at(4, '12:00'),
      thread: [{ content: 'Day one: the dough rests overnight.' }, { content: 'Day two: three folds, then shaping and baking.' }],
    },
    { content: 'Baking class for kids this Saturday at 10: aprons provided. Sign up at https://example.com/class', scheduledAt: at(5, '08:00'), tagIds: [tag.id] },
  ];
  await create({ rows: scheduled, shared: { selectedIntegrations: [channel] }, postAction: 'SCHEDULED_TIME' });
  await create({
    rows: [{ content: 'Draft: our autumn menu, pumpkin loaf and apple tart (prices to check).', scheduledAt: at(6, '10:00') }],
    shared: { selectedIntegrations: [channel] },
    postAction: 'DRAFT',
  });
  const published = await create({
    rows: [{ content: 'Good morning! The ovens are on and the coffee is ready. ☕' }],
    shared: { selectedIntegrations: [channel] },
    postAction: 'PUBLISH_NOW',
  });
  type Schedules = { schedules: { status: string; failureReason: string | null }[] };
  const settled = await until(
    'the post published now',
    () => rest<Schedules>(`/posts/${published}`),
    (post) => post.schedules.every((schedule) => schedule.status === 'PUBLISHED' || schedule.status === 'FAILED'),
  );
  const failed = settled.schedules.find((schedule) => schedule.status === 'FAILED');
  if (failed) throw new Error(`publishing to the PDS failed: ${failed.failureReason}`);
  return { month, withImage, withImageText, shownOnCalendar: 'Sourdough Saturday' };
}

/** A photo-like image (a warm gradient) uploaded as a browser does: initiate, PUT to the signed URL, complete; its variants made. */
async function uploadImage(rest: Rest): Promise<string> {
  const width = 1200;
  const height = 800;
  const raw = Buffer.alloc(width * height * 3);
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) raw.set([200 + (x * 55) / width, 120 + (y * 80) / height, 40 + ((x + y) % 40)], (y * width + x) * 3);
  }
  const bytes = await sharp(raw, { raw: { width, height, channels: 3 } }).jpeg({ quality: 85 }).toBuffer();
  const checksum = createHash('sha256').update(bytes).digest('base64');
  const started = await rest<{ uploadId: string; signedUrl: string; requiredHeaders: Record<string, string> }>('/uploads/initiate', {
    method: 'POST',
    body: { scenarioId: 'post_attachments', fileName: 'loaves.jpg', fileType: 'image/jpeg', fileSize: bytes.length, checksum },
  });
  const put = await fetch(started.signedUrl, { method: 'PUT', body: new Uint8Array(bytes), headers: started.requiredHeaders });
  if (!put.ok) throw new Error(`PUT to the signed URL: ${put.status} ${await put.text()}`);
  const done = await until(
    'the image\'s variants',
    () => rest<{ mediaId: string; variantsStatus: string }>('/uploads/complete', { method: 'POST', body: { uploadId: started.uploadId, checksum } }),
    (answer) => answer.variantsStatus !== 'pending',
  );
  if (done.variantsStatus !== 'ready') throw new Error(`the image's variants: ${done.variantsStatus}`);
  return done.mediaId;
}

// Run as a command (not when a test imports it).
if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const { values } = parseArgs({
    options: {
      out: { type: 'string', default: 'docs/images' },
      'postgres-url': { type: 'string' },
      'pds-url': { type: 'string' },
      'chromium-dir': { type: 'string' },
    },
  });
  takeScreenshots({ out: values.out!, postgresUrl: values['postgres-url'], pdsUrl: values['pds-url'], chromiumDir: values['chromium-dir'] }).then(
    (files) => {
      console.log(`wrote ${files.join(', ')}`);
      process.exit(0);
    },
    (error: unknown) => {
      console.error(error);
      process.exit(1);
    },
  );
}
