import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { recordKey } from '../src/platforms/bluesky.js';
import { connectThroughForm, createAccount, type TestAccount } from './support/bluesky.js';
import { call, isSettled, startTestService, type TestService, type Workspace } from './support/service.js';

/**
 * The languages a Bluesky post carries (`langs`), published by the worker to the PDS on loopback and read back from
 * the records: the schedule's settings.langs, else the thread's first post's, else the workspace's default languages,
 * else the language detected from the thread's text when the detection is confident, else none. A thread's replies
 * and the first comment carry their post's.
 */

let service: TestService;
let sql: postgres.Sql;
let account: TestAccount;
/** A workspace without default languages, and one with de and en; the same Bluesky account is connected to both. */
let plain: { ws: Workspace; channel: string };
let defaults: { ws: Workspace; channel: string };

beforeAll(async () => {
  service = await startTestService({}, { api: true, worker: true });
  sql = postgres(service.databaseUrl, { max: 2, onnotice: () => {}, transform: postgres.camel });
  account = await createAccount();
  const withChannel = async (ws: Workspace) => ({ ws, channel: await connectThroughForm(service.api, ws.apiKey, account) });
  plain = await withChannel(await service.workspace({ plan: 'business' }));
  defaults = await withChannel(await service.workspace({ plan: 'business' }));
  expect(await defaults.ws.admin('updateWorkspaceSettings', { languages: ['de', 'en'] })).toMatchObject({ languages: ['de', 'en'] });
});
afterAll(async () => {
  await sql?.end();
  await service?.stop();
});

const rest = (ws: Workspace, path: string, options: { method?: string; body?: unknown } = {}) => call(`${service.api}${path}`, { key: ws.apiKey, ...options });

interface Published {
  id: string;
  createdAt: Date;
  status: string;
  failureReason: string | null;
  platformPostId: string | null;
}

/** Waits until the post's schedules are settled; answers them in thread order. */
async function settledSchedules(postId: string, timeoutMs = 20_000): Promise<Published[]> {
  const started = Date.now();
  for (;;) {
    const rows = await sql<Published[]>`
      SELECT id, created_at, status, failure_reason, platform_post_id FROM schedules WHERE post_id = ${postId} ORDER BY thread_order`;
    if (rows.every(isSettled) || Date.now() - started > timeoutMs) return rows;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

const recordAt = async (rkey: string) =>
  (await account.agent.com.atproto.repo.getRecord({ repo: account.did, collection: 'app.bsky.feed.post', rkey })).data.value as {
    text: string;
    langs?: string[];
  };

/**
 * Publishes one post now (a row of createPost) in `to`'s workspace and answers the `langs` of its records as the PDS
 * holds them, in thread order, then its first comment's (when it has one); `null` for a record without `langs`.
 */
async function publishedLangs(to: { ws: Workspace; channel: string }, row: Record<string, unknown>): Promise<(string[] | null)[]> {
  const created = await rest(to.ws, '/posts', { method: 'POST', body: { rows: [row], shared: { selectedIntegrations: [to.channel] }, postAction: 'PUBLISH_NOW' } });
  expect(created.status, created.text).toBe(201);
  return langsOfPost(created.json.postId, row.firstComment !== undefined);
}

async function langsOfPost(postId: string, withComment: boolean): Promise<(string[] | null)[]> {
  const schedules = await settledSchedules(postId);
  for (const schedule of schedules) expect(schedule, JSON.stringify(schedule)).toMatchObject({ status: 'PUBLISHED', failureReason: null });
  const keys = schedules.map((schedule) => recordKey({ scheduleId: schedule.id, createdAt: schedule.createdAt, kind: 'post' }));
  if (withComment) keys.push(recordKey({ scheduleId: schedules[0]!.id, createdAt: schedules[0]!.createdAt, kind: 'firstComment' }));
  const records = await Promise.all(keys.map(recordAt));
  return records.map((record) => record.langs ?? null);
}

const GERMAN = 'Heute Abend stellen wir unser neues Buch über die Geschichte der Stadt im Rathaus vor. Alle sind herzlich eingeladen!';
const FRENCH = 'Ce soir, nous présentons notre nouveau livre sur l\'histoire de la ville à la mairie. Tout le monde est le bienvenu !';
const ENGLISH = 'Tonight we are presenting our new book about the history of the city at the town hall. Everyone is welcome to join us!';

describe('the languages of a Bluesky post', () => {
  it('settings.langs come first, over the workspace\'s and the text\'s, and the thread\'s replies and first comment carry them', async () => {
    const langs = await publishedLangs(defaults, {
      content: ENGLISH,
      thread: [{ content: 'Part two.' }, { content: 'Part three.' }],
      firstComment: 'Tickets: https://example.com/tickets',
      overrides: [{ integrationId: defaults.channel, settings: { langs: ['pt-BR', 'en'] } }],
    });
    expect(langs).toEqual([['pt-BR', 'en'], ['pt-BR', 'en'], ['pt-BR', 'en'], ['pt-BR', 'en']]);
  });

  it('a thread part with settings.langs of its own carries them; the other parts carry the first post\'s', async () => {
    const draft = await rest(plain.ws, '/posts', {
      method: 'POST',
      body: {
        rows: [{ content: GERMAN, thread: [{ content: 'Teil zwei.' }, { content: ENGLISH }], overrides: [{ integrationId: plain.channel, settings: { langs: ['de'] } }] }],
        shared: { selectedIntegrations: [plain.channel] },
        postAction: 'DRAFT',
      },
    });
    expect(draft.status, draft.text).toBe(201);
    const postId = draft.json.postId as string;
    const [, , english] = await sql<{ id: string }[]>`SELECT id FROM schedules WHERE post_id = ${postId} ORDER BY thread_order`;
    const live = await rest(plain.ws, `/posts/${postId}`, { method: 'PATCH', body: { schedules: [{ id: english!.id, settings: { langs: ['en'] } }], postAction: 'PUBLISH_NOW' } });
    expect(live.status, live.text).toBe(200);
    expect(await langsOfPost(postId, false)).toEqual([['de'], ['de'], ['en']]);
  });

  it('without settings.langs, the workspace\'s default languages, whatever the text', async () => {
    const langs = await publishedLangs(defaults, { content: FRENCH, thread: [{ content: 'Deuxième partie.' }], firstComment: 'Billets : https://example.com' });
    expect(langs).toEqual([['de', 'en'], ['de', 'en'], ['de', 'en']]);
  });

  it('settings.langs [] is a choice: no languages, neither the workspace\'s nor detected ones', async () => {
    const langs = await publishedLangs(defaults, {
      content: ENGLISH,
      firstComment: 'Tickets: https://example.com/tickets',
      overrides: [{ integrationId: defaults.channel, settings: { langs: [] } }],
    });
    expect(langs).toEqual([null, null]);
  });

  it('without either, the language detected from the thread\'s text, carried by its short replies and first comment too', async () => {
    const german = await publishedLangs(plain, { content: GERMAN, thread: [{ content: 'Teil zwei: die Karte.' }], firstComment: 'Mehr dazu: https://example.com/buch' });
    expect(german).toEqual([['de'], ['de'], ['de']]);
    expect(await publishedLangs(plain, { content: FRENCH })).toEqual([['fr']]);
    // Settings that name no langs leave them to the next source.
    expect(await publishedLangs(plain, { content: ENGLISH, overrides: [{ integrationId: plain.channel, settings: { other: 'setting' } }] })).toEqual([['en']]);
  });

  it('no languages when the detection is not confident: a short text, a text long only by its link, a text in two languages', async () => {
    expect(await publishedLangs(plain, { content: 'Big news today, stay tuned!', firstComment: 'More soon' })).toEqual([null, null]);
    expect(await publishedLangs(plain, { content: 'Big news! https://example.com/a/very/long/path/to/the/announcement/page' })).toEqual([null]);
    const mixed = 'Heute Abend im Rathaus: unser neues Buch. Tonight at the town hall: our new book, everyone welcome.';
    expect(await publishedLangs(plain, { content: mixed })).toEqual([null]);
  });
});

describe('a thread\'s language is detected when its text is written, not when it is published', () => {
  const detectedFor = async (postId: string) =>
    sql<{ language: string | null }[]>`
      SELECT d.language FROM schedules s JOIN detected_languages d
        ON d.text_md5 = md5((SELECT string_agg(t.scheduled_content, E'\n\n' ORDER BY t.thread_order) FROM schedules t
          WHERE t.id = s.id OR t.thread_root_schedule_id = s.id))::uuid
      WHERE s.post_id = ${postId} AND s.thread_order = 0`;
  const draftOf = async (content: string) => {
    const draft = await rest(plain.ws, '/posts', {
      method: 'POST',
      body: { rows: [{ content, thread: [{ content: 'Teil zwei.' }] }], shared: { selectedIntegrations: [plain.channel] }, postAction: 'DRAFT' },
    });
    expect(draft.status, draft.text).toBe(201);
    return draft.json.postId as string;
  };

  it('kept by the create and by a change of text, and what the engine publishes with', async () => {
    const postId = await draftOf(GERMAN);
    expect(await detectedFor(postId)).toEqual([{ language: 'de' }]);
    // The engine takes the stored detection as it is: a different one stored for the same text is what it publishes.
    await sql`UPDATE detected_languages SET language = 'nl' WHERE language = 'de'`;
    expect((await rest(plain.ws, `/posts/${postId}`, { method: 'PATCH', body: { postAction: 'PUBLISH_NOW' } })).status).toBe(200);
    expect(await langsOfPost(postId, false)).toEqual([['nl'], ['nl']]);
    await sql`DELETE FROM detected_languages WHERE language = 'nl'`;

    const changed = await draftOf(ENGLISH);
    expect(await detectedFor(changed)).toEqual([{ language: 'en' }]);
    const patched = await rest(plain.ws, `/posts/${changed}`, { method: 'PATCH', body: { content: FRENCH } });
    expect(patched.status, patched.text).toBe(200);
    expect(await detectedFor(changed)).toEqual([{ language: 'fr' }]);
    expect((await rest(plain.ws, `/posts/${changed}`, { method: 'PATCH', body: { postAction: 'PUBLISH_NOW' } })).status).toBe(200);
    expect(await langsOfPost(changed, false)).toEqual([['fr'], ['fr']]);
  });

  it('detected when published when none was kept (pruned, or written before detections were kept)', async () => {
    const postId = await draftOf(GERMAN);
    await sql`DELETE FROM detected_languages WHERE language = 'de'`;
    expect(await detectedFor(postId)).toEqual([]);
    expect((await rest(plain.ws, `/posts/${postId}`, { method: 'PATCH', body: { postAction: 'PUBLISH_NOW' } })).status).toBe(200);
    expect(await langsOfPost(postId, false)).toEqual([['de'], ['de']]);
  });
});

describe('settings.langs are checked where they are written', () => {
  const create = (langs: unknown) =>
    rest(plain.ws, '/posts', {
      method: 'POST',
      body: { rows: [{ content: ENGLISH, overrides: [{ integrationId: plain.channel, settings: { langs } }] }], shared: { selectedIntegrations: [plain.channel] }, postAction: 'DRAFT' },
    });
  const field = 'body.rows.0.overrides.0.settings.langs';

  it('refuses a tag that is not well-formed BCP-47, more than 3 tags, a repeat and a value that is not a list, naming the field', async () => {
    const refusals = await Promise.all([create(['en', 'en_US']), create(['de', 'en', 'fr', 'it']), create(['de', 'DE']), create('en')]);
    expect(refusals.map((answer) => [answer.status, answer.json])).toEqual([
      [400, { code: 'VALIDATION_ERROR', message: `${field}.1: must be a well-formed BCP-47 language tag, such as en, pt-BR or zh-Hant` }],
      [400, { code: 'VALIDATION_ERROR', message: `${field}: at most 3 language tags (Bluesky's limit)` }],
      [400, { code: 'VALIDATION_ERROR', message: `${field}.1: DE repeats item 0: list each language once` }],
      [400, { code: 'VALIDATION_ERROR', message: `${field}: must be a list, not text` }],
    ]);
    const accepted = await create(['sr-Latn-RS', 'tlh', 'de-DE-1996']);
    expect(accepted.status, accepted.text).toBe(201);
  });

  it('refuses a well-formed tag that is no registered language (the IANA registry), such as klingon, or a private-use tag', async () => {
    const refusals = await Promise.all([create(['en', 'klingon']), create(['x-klingon']), create(['qqq-DE'])]);
    expect(refusals.map((answer) => [answer.status, answer.json])).toEqual([
      [400, { code: 'VALIDATION_ERROR', message: `${field}.1: is not a registered language: use a tag such as en, pt-BR or zh-Hant` }],
      [400, { code: 'VALIDATION_ERROR', message: `${field}.0: is not a registered language: use a tag such as en, pt-BR or zh-Hant` }],
      [400, { code: 'VALIDATION_ERROR', message: `${field}.0: is not a registered language: use a tag such as en, pt-BR or zh-Hant` }],
    ]);
  });

  it('refuses the same in PATCH /posts/{id}', async () => {
    const draft = await create(['en']);
    expect(draft.status, draft.text).toBe(201);
    const [schedule] = await sql<{ id: string }[]>`SELECT id FROM schedules WHERE post_id = ${draft.json.postId}`;
    const answer = await rest(plain.ws, `/posts/${draft.json.postId}`, { method: 'PATCH', body: { schedules: [{ id: schedule!.id, settings: { langs: ['en_GB'] } }] } });
    expect([answer.status, answer.json]).toEqual([
      400,
      { code: 'VALIDATION_ERROR', message: 'body.schedules.0.settings.langs.0: must be a well-formed BCP-47 language tag, such as en, pt-BR or zh-Hant' },
    ]);
  });
});
