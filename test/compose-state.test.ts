import { describe, expect, it } from 'vitest';
import type { operations } from '../src/dashboard/api-types.js';
import {
  compose,
  counterState,
  createBody,
  initialState,
  mastodonSettings,
  missing,
  patchBody,
  previewShown,
  problems,
  summaryOf,
  whereOf,
  MAX_THREAD_PARTS,
  type ComposeEvent,
  type Channel,
  type ComposeState,
  type MediaItem,
  type Post,
} from '../src/dashboard/compose/state.js';
import {
  gifSearch,
  gifSearchSummary,
  gridMove,
  hasMore,
  importedGif,
  NO_GIF_SEARCH,
  pickedGif,
  searchToSend,
  type GifResult,
  type GifSearchEvent,
  type GifSearchState,
} from '../src/dashboard/compose/gif-search.js';
import { channelLabel, listed, platformLabel, platformsWhere } from '../src/dashboard/platforms.js';
import { platforms } from '../src/platforms/index.js';
import { MASTODON_DEFAULT_LIMITS, PLATFORMS, rules } from '../src/platforms/rules.js';

// The composer's state apart from its view (src/dashboard/compose/state.ts): no browser, no server.

type CreateRequest = operations['createPost']['requestBody']['content']['application/json'];
type PatchRequest = NonNullable<operations['updatePost']['requestBody']>['content']['application/json'];

const ZONE = 'Europe/Paris';

const sky: Channel = { id: 'sky', name: 'Sky', platform: 'BLUESKY' };
const inn: Channel = { id: 'inn', name: 'In', platform: 'LINKEDIN' };

// The posts below hold what the composer reads of GET /posts/{id}'s answer (the rest of its shape plays no part here).
type Schedule = Post['schedules'][number];
const schedule = (id: string, on: Channel, change: Partial<Schedule>) =>
  ({
    id,
    integrationId: on.id,
    status: 'DRAFT',
    scheduledAt: null,
    scheduledContent: 'Hello',
    firstComment: null,
    threadRootScheduleId: null,
    threadOrder: 0,
    integration: { ...on, tokenStatus: 'VALID' },
    ...change,
  }) as Schedule;

/** A post on Sky (with a thread of two parts) and In (a text of its own), drafts at 10:30 in Paris, with one image. */
const written = (change: { sky?: Partial<Schedule>; inn?: Partial<Schedule> } = {}) =>
  ({
    id: 'post',
    content: 'Hello',
    isEvergreen: false,
    tagIds: ['t1'],
    attachments: [
      {
        id: 'a1',
        altText: 'A harbour',
        mediaId: 'm1',
        media: {
          url: 'https://store.example/m1/harbour.png',
          size: 1234,
          variants: { '1:1': { url: 'https://store.example/m1/square.png' }, source: { url: 'https://store.example/m1/source.png', sizeBytes: 900, width: 1000, height: 800 } },
          variantsStatus: 'ready',
        },
      },
    ],
    schedules: [
      schedule('s-sky', sky, { scheduledAt: '2027-01-15T09:30:00.000Z', firstComment: 'First!', ...change.sky }),
      schedule('s-part2', sky, { threadRootScheduleId: 's-sky', threadOrder: 2, scheduledContent: 'Part three' }),
      schedule('s-part1', sky, { threadRootScheduleId: 's-sky', threadOrder: 1, scheduledContent: 'Part two' }),
      schedule('s-inn', inn, { scheduledAt: '2027-01-15T09:30:00.000Z', scheduledContent: 'Hello, LinkedIn', firstComment: 'First!', ...change.inn }),
    ],
  }) as Post;

const run = (state: ComposeState, ...events: ComposeEvent[]) => events.reduce(compose, state);
const fresh = () => initialState(undefined, ZONE);
const uploaded = (key: string, change: Partial<MediaItem> = {}): MediaItem => ({
  key,
  name: `${key}.jpg`,
  mimeType: 'image/jpeg',
  size: 1000,
  src: '',
  step: 'done',
  progress: 1,
  mediaId: `media-${key}`,
  uploadId: `upload-${key}`,
  variantsStatus: 'ready',
  publishedBytes: 500,
  altText: '',
  ...change,
});

describe('the form and its transitions', () => {
  it('starts empty for a new post, for the next free slot', () => {
    expect(fresh()).toEqual({ selected: [], content: '', overrides: {}, mastodon: {}, thread: [], firstComment: '', tagIds: [], evergreen: false, media: [], action: 'NEXT_WINDOW', date: '', time: '' });
  });

  it('chooses channels and lets one go', () => {
    const state = run(fresh(), { type: 'channel', id: 'sky', chosen: true }, { type: 'channel', id: 'inn', chosen: true }, { type: 'channel', id: 'sky', chosen: false });
    expect(state.selected).toEqual(['inn']);
  });

  it('gives a channel a text of its own, starting as the post’s, and drops it again', () => {
    let state = run(fresh(), { type: 'set', change: { content: 'Hello' } }, { type: 'ownText', id: 'inn', on: true });
    expect(state.overrides).toEqual({ inn: 'Hello' });
    state = run(state, { type: 'override', id: 'inn', value: 'Hello, LinkedIn' }, { type: 'set', change: { content: 'Hello again' } });
    expect(state.overrides).toEqual({ inn: 'Hello, LinkedIn' });
    expect(run(state, { type: 'ownText', id: 'inn', on: false }).overrides).toEqual({});
  });

  it('adds, rewrites and removes thread parts, up to the most a post takes', () => {
    let state = run(fresh(), { type: 'addPart' }, { type: 'addPart' }, { type: 'addPart' }, { type: 'part', index: 0, value: 'one' }, { type: 'part', index: 2, value: 'three' });
    expect(state.thread).toEqual(['one', '', 'three']);
    state = run(state, { type: 'removePart', index: 1 });
    expect(state.thread).toEqual(['one', 'three']);
    const full = run(fresh(), ...Array.from({ length: MAX_THREAD_PARTS + 3 }, () => ({ type: 'addPart' }) as const));
    expect(full.thread).toHaveLength(MAX_THREAD_PARTS);
  });

  it('follows each upload, and removes an image', () => {
    let state = run(fresh(), { type: 'addMedia', item: uploaded('a', { step: 'hashing', progress: 0 }) }, { type: 'addMedia', item: uploaded('b') });
    state = run(state, { type: 'media', key: 'a', change: { step: 'uploading', progress: 0.5 } });
    expect(state.media.map((item) => [item.key, item.step, item.progress])).toEqual([
      ['a', 'uploading', 0.5],
      ['b', 'done', 1],
    ]);
    expect(run(state, { type: 'removeMedia', key: 'a' }).media.map((item) => item.key)).toEqual(['b']);
    // An update for an image already removed changes nothing.
    expect(run(state, { type: 'removeMedia', key: 'a' }, { type: 'media', key: 'a', change: { step: 'done' } }).media).toHaveLength(1);
  });

  it('adds a tag just made to those chosen', () => {
    expect(run(fresh(), { type: 'set', change: { tagIds: ['t1'] } }, { type: 'tagAdded', id: 't2' }).tagIds).toEqual(['t1', 't2']);
  });

  it('empties a new post’s form once saved, keeping the chosen way to publish; an edited one keeps its images, no longer its uploads', () => {
    const filled = run(
      fresh(),
      { type: 'channel', id: 'sky', chosen: true },
      { type: 'set', change: { content: 'Hi', firstComment: 'c', evergreen: true, action: 'PUBLISH_NOW', tagIds: ['t'] } },
      { type: 'addPart' },
      { type: 'addMedia', item: uploaded('a') },
    );
    expect(run(filled, { type: 'saved', editing: false })).toEqual({ ...fresh(), action: 'PUBLISH_NOW' });
    const kept = run(filled, { type: 'saved', editing: true });
    expect(kept.media).toHaveLength(1);
    expect(kept.media[0]).not.toHaveProperty('uploadId');
    expect(kept.media[0]!.mediaId).toBe('media-a');
    expect(kept.content).toBe('Hi');
  });
});

describe('a post read back into the form', () => {
  it('holds its channels, its own texts, its thread in order, its comment, its images and its time in the workspace’s zone', () => {
    const state = initialState(written(), ZONE);
    expect(state).toMatchObject({
      selected: ['sky', 'inn'],
      content: 'Hello',
      overrides: { inn: 'Hello, LinkedIn' },
      thread: ['Part two', 'Part three'],
      firstComment: 'First!',
      tagIds: ['t1'],
      evergreen: false,
      action: 'KEEP',
      date: '2027-01-15',
      time: '10:30',
    });
    expect(state.media).toEqual([
      {
        key: 'attached-a1',
        name: 'harbour.png',
        mimeType: 'image/png',
        size: 1234,
        src: 'https://store.example/m1/square.png',
        step: 'done',
        progress: 1,
        mediaId: 'm1',
        variantsStatus: 'ready',
        publishedBytes: 900,
        publishedPixels: 800_000,
        altText: 'A harbour',
      },
    ]);
  });
});

describe('what blocks a submit', () => {
  const chosen = [sky, inn];
  const now = Date.parse('2027-01-10T00:00:00.000Z');

  it('says what is missing: a channel, the text, a channel’s own text, uploads, the time', () => {
    expect(missing(fresh(), [], { editing: false, timeZone: ZONE, now })).toEqual(['Choose at least one channel.', 'Write the post’s text.']);
    const state = run(
      fresh(),
      { type: 'set', change: { content: 'Hi', action: 'SCHEDULED_TIME' } },
      { type: 'ownText', id: 'inn', on: true },
      { type: 'override', id: 'inn', value: ' ' },
      { type: 'addMedia', item: uploaded('a', { step: 'uploading' }) },
      { type: 'addMedia', item: uploaded('b', { step: 'failed' }) },
    );
    expect(missing(state, chosen, { editing: false, timeZone: ZONE, now })).toEqual([
      'A channel’s own text is empty: write it, or use the post’s text.',
      'Wait for the images to finish uploading.',
      'Remove the images that could not be uploaded.',
      'Choose the date and time (Europe/Paris).',
    ]);
    const past = run(fresh(), { type: 'set', change: { content: 'Hi', action: 'SCHEDULED_TIME', date: '2027-01-09', time: '10:30' } });
    expect(missing(past, [sky], { editing: false, timeZone: ZONE, now })).toEqual(['The chosen time is in the past.']);
    expect(missing({ ...past, date: '2027-01-11' }, [sky], { editing: false, timeZone: ZONE, now })).toEqual([]);
    // An empty thread part is left out of a new post, but cannot be sent when editing.
    const parts = run(past, { type: 'set', change: { date: '2027-01-11' } }, { type: 'addPart' });
    expect(missing(parts, [sky], { editing: false, timeZone: ZONE, now })).toEqual([]);
    expect(missing(parts, [sky], { editing: true, timeZone: ZONE, now })).toEqual(['A thread part is empty: write it (a part is removed by deleting its schedule in the calendar).']);
  });

  it('words the platforms’ refusals for people, in the API’s order (thread, text, thread parts, comment, media), each on its field', () => {
    const state = run(
      fresh(),
      { type: 'set', change: { content: 'x'.repeat(301), firstComment: 'c'.repeat(1251) } },
      { type: 'ownText', id: 'inn', on: true },
      { type: 'override', id: 'inn', value: 'ok' },
      { type: 'addPart' },
      // Over LinkedIn's 3,000 UTF-16 units too, but LinkedIn has no thread to count it in.
      { type: 'part', index: 0, value: '🙂'.repeat(1501) },
      ...['a', 'b', 'c', 'd', 'e'].map((key) => ({ type: 'addMedia', item: uploaded(key) }) as const),
    );
    expect(problems(state, chosen, undefined)).toEqual([
      { where: 'content', sentence: 'Too long for Bluesky (Sky): 301 of 300 characters' },
      { where: 'part:0', sentence: 'Too long for Bluesky (Sky): 1501 of 300 characters' },
      { where: 'firstComment', sentence: 'Too long for Bluesky (Sky): 1251 of 300 characters' },
      { where: 'media', sentence: 'Too many images for Bluesky (Sky): 5, and it takes at most 4' },
      { where: 'thread', sentence: 'LinkedIn (In) has no threads: publish each part as a post of its own, or leave In out' },
      { where: 'firstComment', sentence: 'Too long for LinkedIn (In): 1251 of 1250 characters' },
    ]);
    // The list above the button names the field where the sentence does not.
    expect(problems(state, chosen, undefined).map(summaryOf).slice(1, 3)).toEqual([
      'Thread part 2: too long for Bluesky (Sky): 1501 of 300 characters',
      'First comment: too long for Bluesky (Sky): 1251 of 300 characters',
    ]);
    // Nothing a person reads names a request's field, a platform's code or a unit of a program.
    for (const { sentence } of problems(state, chosen, undefined)) expect(sentence).not.toMatch(/rows\[|body\.|BLUESKY|LINKEDIN|graphemes|UTF/);
    // A channel's own text is said under that channel's field.
    const own = run(fresh(), { type: 'set', change: { content: 'ok' } }, { type: 'ownText', id: 'inn', on: true }, { type: 'override', id: 'inn', value: 'y'.repeat(3001) });
    expect(problems(own, chosen, undefined)).toEqual([{ where: 'channel:inn', sentence: 'Too long for LinkedIn (In): 3001 of 3000 characters' }]);
    expect(problems(own, [sky], undefined)).toEqual([]);
  });

  it('places the API’s refusal on the field its path names, as the request numbered them', () => {
    // An empty part is left out of the request: its second part written is the form's third.
    const state = run(fresh(), { type: 'set', change: { content: 'ok' } }, { type: 'ownText', id: 'inn', on: true }, { type: 'addPart' }, { type: 'addPart' }, { type: 'part', index: 1, value: 'x' });
    expect(['rows[0].content', 'rows[0].overrides[0].content', 'rows[0].thread[0].content', 'rows[0].thread', 'rows[0].firstComment', 'rows[0].media[1].altText', 'shared.selectedIntegrations[0]'].map((path) => whereOf(path, state, chosen, undefined))).toEqual([
      'content',
      'channel:inn',
      'part:1',
      'thread',
      'firstComment',
      'media',
      '',
    ]);
    const post = written();
    const part = run(initialState(post, ZONE), { type: 'part', index: 1, value: 'Rewritten' });
    expect(['body.schedules[0].content', 'body.content', 'body.media'].map((path) => whereOf(path, part, [], post))).toEqual(['part:1', 'content', 'media']);
  });

  it('checks an edit where PATCH /posts/{id} checks it, leaving out what is publishing', () => {
    const post = written();
    const long = 'z'.repeat(301);
    expect(problems(run(initialState(post, ZONE), { type: 'set', change: { content: long } }), [], post)).toEqual([{ where: 'content', sentence: 'Too long for Bluesky (Sky): 301 of 300 characters' }]);
    const part = run(initialState(post, ZONE), { type: 'part', index: 1, value: long });
    expect(problems(part, [], post)).toEqual([{ where: 'part:1', sentence: 'Too long for Bluesky (Sky): 301 of 300 characters' }]);
    const publishing = written({ sky: { status: 'PUBLISHING' } });
    expect(problems(run(initialState(publishing, ZONE), { type: 'set', change: { content: long, firstComment: 'c'.repeat(1251) } }), [], publishing)).toEqual([
      { where: 'firstComment', sentence: 'Too long for LinkedIn (In): 1251 of 1250 characters' },
    ]);
  });
});

describe('the request a submit sends', () => {
  it('builds POST /posts: one row, with only what was given', () => {
    const minimal = run(fresh(), { type: 'channel', id: 'sky', chosen: true }, { type: 'set', change: { content: 'Hi' } });
    const body: CreateRequest = createBody(minimal, [sky], ZONE);
    expect(body).toEqual({ rows: [{ content: 'Hi' }], shared: { selectedIntegrations: ['sky'] }, postAction: 'NEXT_WINDOW' });

    const full = run(
      minimal,
      { type: 'channel', id: 'inn', chosen: true },
      { type: 'ownText', id: 'inn', on: true },
      { type: 'override', id: 'inn', value: 'Hi, LinkedIn' },
      { type: 'addPart' },
      { type: 'addPart' },
      { type: 'part', index: 1, value: 'Two' },
      { type: 'set', change: { firstComment: 'First', tagIds: ['t1'], evergreen: true, action: 'SCHEDULED_TIME', date: '2027-01-15', time: '10:30' } },
      { type: 'addMedia', item: uploaded('a', { altText: '  A harbour ' }) },
      { type: 'addMedia', item: uploaded('b', { altText: '   ' }) },
    );
    expect(createBody(full, [sky, inn], ZONE)).toEqual({
      rows: [
        {
          content: 'Hi',
          scheduledAt: '2027-01-15T09:30:00.000Z',
          tagIds: ['t1'],
          isEvergreen: true,
          firstComment: 'First',
          thread: [{ content: 'Two' }],
          overrides: [{ integrationId: 'inn', content: 'Hi, LinkedIn' }],
          media: [{ id: 'media-a', altText: 'A harbour' }, { id: 'media-b' }],
        },
      ],
      shared: { selectedIntegrations: ['sky', 'inn'] },
      postAction: 'SCHEDULED_TIME',
    });
    // A channel let go is not sent, nor its own text.
    expect(createBody(full, [sky], ZONE).rows[0]).not.toHaveProperty('overrides');
  });

  it('builds PATCH /posts/{id} with only what changed', () => {
    const post = written();
    const unchanged: PatchRequest = patchBody(initialState(post, ZONE), post, ZONE);
    expect(unchanged).toEqual({});

    const edited = run(
      initialState(post, ZONE),
      { type: 'set', change: { content: 'Hello!', tagIds: ['t1', 't2'], evergreen: true, firstComment: '' } },
      { type: 'override', id: 'inn', value: 'Hello, LinkedIn!' },
      { type: 'part', index: 1, value: 'Part three, rewritten' },
      { type: 'media', key: 'attached-a1', change: { altText: 'The harbour' } },
    );
    expect(patchBody(edited, post, ZONE)).toEqual({
      content: 'Hello!',
      tagIds: ['t1', 't2'],
      isEvergreen: true,
      firstComment: null,
      media: [{ id: 'm1', altText: 'The harbour' }],
      // Sky follows `content` without being named; In's own text and the rewritten part are.
      schedules: [
        { id: 's-part2', content: 'Part three, rewritten' },
        { id: 's-inn', content: 'Hello, LinkedIn!' },
      ],
    });
  });

  it('names no schedule that is publishing, gives a channel back the post’s text, and makes drafts live only when asked', () => {
    const publishing = written({ inn: { status: 'PUBLISHING' } });
    expect(patchBody(run(initialState(publishing, ZONE), { type: 'override', id: 'inn', value: 'Changed' }), publishing, ZONE)).toEqual({});

    const post = written();
    expect(patchBody(run(initialState(post, ZONE), { type: 'ownText', id: 'inn', on: false }), post, ZONE)).toEqual({ schedules: [{ id: 's-inn', content: 'Hello' }] });

    const scheduled = run(initialState(post, ZONE), { type: 'set', change: { action: 'SCHEDULED_TIME', date: '2027-02-01', time: '08:00' } });
    expect(patchBody(scheduled, post, ZONE)).toEqual({ postAction: 'SCHEDULED_TIME', scheduledAt: '2027-02-01T07:00:00.000Z' });
    const live = written({ sky: { status: 'SCHEDULED' }, inn: { status: 'SCHEDULED' } });
    expect(patchBody(run(initialState(live, ZONE), { type: 'set', change: { action: 'PUBLISH_NOW' } }), live, ZONE)).toEqual({});
  });
});

describe('a counter, by the platform’s own rule', () => {
  it('counts, warns from 90 % and says the API’s numbers over the limit, in words', () => {
    expect(counterState({ channel: sky, text: 'x'.repeat(10), as: 'post' })).toMatchObject({ key: 'sky-post', name: 'Sky', tone: 'ok', text: 'Sky (Bluesky): 10 / 300 characters', announce: 'Sky (Bluesky): 290 characters left.' });
    expect(counterState({ channel: sky, text: 'x'.repeat(270), as: 'post' })).toMatchObject({ tone: 'warn', announce: 'Sky (Bluesky): near the limit.' });
    expect(counterState({ channel: sky, text: 'x'.repeat(301), as: 'post' })).toMatchObject({
      tone: 'over',
      text: 'Sky (Bluesky): 301 / 300 characters, 1 over the limit',
      announce: 'Sky (Bluesky): over the limit.',
    });
    // Text of many multi-byte characters is nearer Bluesky's 3,000 bytes than its 300 graphemes.
    expect(counterState({ channel: sky, text: '👨‍👩‍👧‍👦'.repeat(100), as: 'post' })).toMatchObject({ tone: 'ok', text: 'Sky (Bluesky): 2,500 / 3,000 bytes' });
    expect(counterState({ channel: inn, text: 'c'.repeat(1251), as: 'comment' })).toMatchObject({ key: 'inn-comment', tone: 'over' });
  });

  it('counts a Mastodon channel by its instance\'s limits (the Integration\'s), Mastodon\'s own counting, the defaults when none', () => {
    const toot: Channel = { id: 'toot', name: 'Toot', platform: 'MASTODON', limits: null };
    const big: Channel = { ...toot, id: 'big', name: 'Big', limits: { ...MASTODON_DEFAULT_LIMITS, maxCharacters: 11_000 } };
    const text = `${'x'.repeat(480)} https://example.com/${'a'.repeat(100)}`;
    // The link counts 23, as the instance counts it.
    expect(counterState({ channel: toot, text, as: 'post' })).toMatchObject({ tone: 'over', text: 'Toot (Mastodon): 504 / 500 characters, 4 over the limit' });
    expect(counterState({ channel: toot, text: text.slice(10), as: 'post' })).toMatchObject({ tone: 'warn', text: 'Toot (Mastodon): 494 / 500 characters' });
    expect(counterState({ channel: big, text: 'x'.repeat(600), as: 'post' })).toMatchObject({ tone: 'ok', text: 'Big (Mastodon): 600 / 11,000 characters' });
    expect(counterState({ channel: toot, text: 'x'.repeat(600), as: 'post' })).toMatchObject({ tone: 'over', text: 'Toot (Mastodon): 600 / 500 characters, 100 over the limit' });
    // The check before submit says what the API would.
    const state = { ...fresh(), selected: ['toot', 'big'], content: 'x'.repeat(600) };
    expect(problems(state, [toot, big], undefined)).toEqual([{ where: 'content', sentence: 'Too long for Mastodon (Toot): 600 of 500 characters' }]);
  });

  it('counts a Threads channel as Meta does: a character each, but an emoji its UTF-8 bytes', () => {
    const thread: Channel = { id: 'th', name: 'Th', platform: 'THREADS', limits: null };
    expect(counterState({ channel: thread, text: 'é'.repeat(500), as: 'post' })).toMatchObject({ tone: 'warn', text: 'Th (Threads): 500 / 500 characters' });
    // 🙂 is 4 bytes of UTF-8, 👨‍👩‍👧‍👦 25: 490 + 4 + 25 = 519.
    expect(counterState({ channel: thread, text: `${'x'.repeat(490)}🙂👨‍👩‍👧‍👦`, as: 'post' })).toMatchObject({ tone: 'over', text: 'Th (Threads): 519 / 500 characters, 19 over the limit' });
    const state = { ...fresh(), selected: ['th'], content: `${'x'.repeat(490)}🙂👨‍👩‍👧‍👦` };
    expect(problems(state, [thread], undefined)).toEqual([{ where: 'content', sentence: 'Too long for Threads (Th): 519 of 500 characters' }]);
  });
});

describe('a Mastodon channel’s options (visibility, content warning, sensitive images)', () => {
  it('show in a preview as Mastodon shows them, from the composer or a stored schedule alike (the approvals page)', () => {
    expect(previewShown({ spoilerText: 'Spoilers', sensitive: true, visibility: 'private', langs: ['en'] })).toEqual({ warning: 'Spoilers', sensitive: true, audience: 'Followers only' });
    expect(previewShown({ visibility: 'unlisted' })).toEqual({ audience: 'Unlisted (quiet public)' });
    // Nothing to show: no settings, a blank warning, values Mastodon would not take (stored before they were checked).
    expect(previewShown(null)).toEqual({});
    expect(previewShown({ spoilerText: '  ', sensitive: 'yes', visibility: 'everyone' })).toEqual({});
  });

  const toot: Channel = { id: 'toot', name: 'Toot', platform: 'MASTODON', limits: null };
  const big: Channel = { id: 'big', name: 'Big', platform: 'MASTODON', limits: { ...MASTODON_DEFAULT_LIMITS, maxCharacters: 11_000 } };
  /** A post on Toot (with a thread part and other settings of its own) and on Sky, drafts with one image. */
  const tooted = (settings: Record<string, unknown>, change: Partial<Schedule> = {}) =>
    ({
      ...written(),
      id: 'post-toot',
      schedules: [
        schedule('s-toot', toot, { settings, scheduledAt: '2027-01-15T09:30:00.000Z', ...change }),
        schedule('s-toot-part', toot, { threadRootScheduleId: 's-toot', threadOrder: 1, scheduledContent: 'Part two', settings: {} }),
        schedule('s-sky', sky, { settings: { visibility: 'private', spoilerText: 'not Bluesky’s' }, scheduledAt: '2027-01-15T09:30:00.000Z' }),
      ],
    }) as Post;

  it('are set one by one, and say only what is set, as the settings the publishing adapter reads', () => {
    const state = run(fresh(), { type: 'mastodon', id: 'toot', change: { visibility: 'private' } }, { type: 'mastodon', id: 'toot', change: { spoilerText: ' Birds ' } });
    expect(state.mastodon).toEqual({ toot: { visibility: 'private', spoilerText: ' Birds ', sensitive: false } });
    // The warning as Mastodon keeps it (trimmed); `sensitive` only with images, which it marks.
    expect(mastodonSettings(state.mastodon.toot!, false)).toEqual({ visibility: 'private', spoilerText: 'Birds' });
    expect(mastodonSettings({ visibility: null, spoilerText: '  ', sensitive: true }, false)).toEqual({});
    expect(mastodonSettings({ visibility: null, spoilerText: '', sensitive: true }, true)).toEqual({ sensitive: true });
    // A new post's form is emptied of them once saved.
    expect(run(state, { type: 'saved', editing: false }).mastodon).toEqual({});
  });

  it('are sent as the channel’s override settings, beside or without a text of its own, and only on Mastodon', () => {
    const state = run(
      fresh(),
      { type: 'set', change: { content: 'Hi' } },
      { type: 'ownText', id: 'big', on: true },
      { type: 'override', id: 'big', value: 'Hi, Big' },
      { type: 'mastodon', id: 'toot', change: { visibility: 'private', spoilerText: 'Birds', sensitive: true } },
      { type: 'mastodon', id: 'big', change: { visibility: 'unlisted' } },
      // Options set for a channel of another platform (none are offered there) are not sent.
      { type: 'mastodon', id: 'sky', change: { visibility: 'direct' } },
    );
    const body: CreateRequest = createBody(state, [sky, toot, big], ZONE);
    expect(body.rows[0]!.overrides).toEqual([
      { integrationId: 'toot', settings: { visibility: 'private', spoilerText: 'Birds' } },
      { integrationId: 'big', content: 'Hi, Big', settings: { visibility: 'unlisted' } },
    ]);
    const withImage = run(state, { type: 'addMedia', item: uploaded('a') });
    expect(createBody(withImage, [toot], ZONE).rows[0]!.overrides).toEqual([{ integrationId: 'toot', settings: { visibility: 'private', spoilerText: 'Birds', sensitive: true } }]);
    // Options left at the account's defaults send no override at all.
    const none = run(fresh(), { type: 'set', change: { content: 'Hi' } }, { type: 'mastodon', id: 'toot', change: { spoilerText: '  ' } });
    expect(createBody(none, [toot], ZONE).rows[0]).toEqual({ content: 'Hi' });
  });

  it('count the content warning with the text, against the instance’s limit, where the API counts it', () => {
    const state = run(fresh(), { type: 'set', change: { content: 'x'.repeat(490) } }, { type: 'mastodon', id: 'toot', change: { spoilerText: 'Spoilers ahead' } }, { type: 'mastodon', id: 'big', change: { spoilerText: 'Spoilers ahead' } });
    const context = { spoilerText: 'Spoilers ahead' };
    expect(counterState({ channel: toot, text: state.content, as: 'post', context })).toMatchObject({ tone: 'over', text: 'Toot (Mastodon): 504 / 500 characters, 4 over the limit' });
    expect(counterState({ channel: big, text: state.content, as: 'post', context })).toMatchObject({ tone: 'ok', text: 'Big (Mastodon): 504 / 11,000 characters', announce: 'Big (Mastodon): 10,496 characters left.' });
    // Without the warning it fits.
    expect(counterState({ channel: toot, text: state.content, as: 'post' })).toMatchObject({ tone: 'warn', text: 'Toot (Mastodon): 490 / 500 characters' });
    expect(problems(state, [toot, big], undefined)).toEqual([{ where: 'content', sentence: 'Too long for Mastodon (Toot): 504 of 500 characters' }]);
    // A channel with its own text: the refusal names its override, numbered among those the request holds.
    const own = run(state, { type: 'set', change: { content: 'ok' } }, { type: 'ownText', id: 'big', on: true }, { type: 'override', id: 'big', value: 'y'.repeat(10_990) });
    expect(problems(own, [toot, big], undefined)).toEqual([{ where: 'channel:big', sentence: 'Too long for Mastodon (Big): 11004 of 11000 characters' }]);
    expect(createBody(own, [toot, big], ZONE).rows[0]!.overrides!.map((override) => override.integrationId)).toEqual(['toot', 'big']);
    expect(['rows[0].overrides[1].content', 'rows[0].overrides[0].content', 'rows[0].overrides[0].settings.visibility'].map((path) => whereOf(path, own, [toot, big], undefined))).toEqual([
      'channel:big',
      'content',
      'options:toot',
    ]);
  });

  it('are read back from a schedule’s settings, and an edit sends only options that changed, keeping its other settings', () => {
    const post = tooted({ visibility: 'unlisted', spoilerText: 'Birds', sensitive: true, langs: ['en'] });
    const state = initialState(post, ZONE);
    // Only Mastodon's schedules are read (Sky's settings hold no options of the composer).
    expect(state.mastodon).toEqual({ toot: { visibility: 'unlisted', spoilerText: 'Birds', sensitive: true } });
    expect(patchBody(state, post, ZONE)).toEqual({});
    // Something else than an option (or not one Mastodon knows) is no option.
    expect(initialState(tooted({ visibility: 'everyone', spoilerText: 7, sensitive: 'yes' }), ZONE).mastodon).toEqual({ toot: { visibility: null, spoilerText: '', sensitive: false } });

    const changed = run(state, { type: 'mastodon', id: 'toot', change: { visibility: 'direct', spoilerText: '' } });
    const body: PatchRequest = patchBody(changed, post, ZONE);
    // The API replaces a schedule's settings whole: the others (langs) are sent with them. Never to a thread part.
    expect(body).toEqual({ schedules: [{ id: 's-toot', settings: { langs: ['en'], visibility: 'direct', sensitive: true } }] });
    // With a text of its own as well: one entry, both.
    const both = run(changed, { type: 'ownText', id: 'toot', on: true }, { type: 'override', id: 'toot', value: 'Hello, Mastodon' });
    expect(patchBody(both, post, ZONE).schedules).toEqual([{ id: 's-toot', content: 'Hello, Mastodon', settings: { langs: ['en'], visibility: 'direct', sensitive: true } }]);
    // Without images, `sensitive` says nothing: dropping it alone is no change.
    const bare = { ...tooted({ sensitive: true }), attachments: [] } as Post;
    expect(patchBody(run(initialState(bare, ZONE), { type: 'mastodon', id: 'toot', change: { sensitive: false } }), bare, ZONE)).toEqual({});
    // A schedule publishing already is not named.
    const publishing = tooted({ visibility: 'unlisted' }, { status: 'PUBLISHING' });
    expect(patchBody(run(initialState(publishing, ZONE), { type: 'mastodon', id: 'toot', change: { visibility: 'public' } }), publishing, ZONE)).toEqual({});
  });

  it('checks an edited content warning where PATCH /posts/{id} checks it, and places its refusal on the options', () => {
    const post = tooted({}, { scheduledContent: 'Hello' });
    const warned = run(initialState(post, ZONE), { type: 'mastodon', id: 'toot', change: { spoilerText: 'w'.repeat(496) } });
    // The warning alone changed: counted with the text the schedule keeps, refused at its settings.
    expect(patchBody(warned, post, ZONE)).toEqual({ schedules: [{ id: 's-toot', settings: { spoilerText: 'w'.repeat(496) } }] });
    expect(problems(warned, [toot, sky], post)).toEqual([{ where: 'options:toot', sentence: 'Too long for Mastodon (Toot): 501 of 500 characters' }]);
    expect(whereOf('body.schedules[0].settings', warned, [toot, sky], post)).toBe('options:toot');
    // With the post's text changed too, it is counted with the new text, and refused at the text.
    const longer = run(warned, { type: 'set', change: { content: 'Hello!' } });
    expect(problems(longer, [toot, sky], post)).toEqual([{ where: 'content', sentence: 'Too long for Mastodon (Toot): 502 of 500 characters' }]);
    // On an instance that takes 11,000, it fits.
    expect(problems(longer, [{ ...big, id: 'toot' }, sky], post)).toEqual([]);
  });
});

describe('the GIF picker (compose/gif-search.ts)', () => {
  const gif = (providerId: string, change: Partial<GifResult> = {}): GifResult => ({
    provider: 'GIPHY',
    providerId,
    title: `${providerId} GIF`,
    previewUrl: `https://media.giphy.example/${providerId}/100w.gif`,
    previewWidth: 100,
    previewHeight: 56,
    width: 480,
    height: 270,
    pageUrl: `https://giphy.example/gifs/${providerId}`,
    attribution: { name: 'GIPHY', url: `https://giphy.example/gifs/${providerId}` },
    ...change,
  });
  const searched = (state: GifSearchState, ...events: GifSearchEvent[]) => events.reduce(gifSearch, state);
  const page = (ids: string[], total: number, nextOffset: number | null) => ({ items: ids.map((id) => gif(id)), total, nextOffset });

  it('searches what is typed, trimmed and at most 50 characters, never the same twice by typing; Enter asks again after a failure', () => {
    expect(searchToSend(NO_GIF_SEARCH)).toBeUndefined();
    expect(searchToSend(searched(NO_GIF_SEARCH, { type: 'typed', typed: '   ' }))).toBeUndefined();
    const typed = searched(NO_GIF_SEARCH, { type: 'typed', typed: '  cat ' });
    expect(searchToSend(typed)).toBe('cat');
    expect(searchToSend(searched(NO_GIF_SEARCH, { type: 'typed', typed: 'x'.repeat(60) }))).toBe('x'.repeat(50));
    const sent = searched(typed, { type: 'sent', request: 1, query: 'cat', more: false });
    expect(searchToSend(sent)).toBeUndefined();
    expect(searchToSend(searched(sent, { type: 'typed', typed: 'cat ' }))).toBeUndefined();
    expect(searchToSend(searched(sent, { type: 'typed', typed: 'cats' }))).toBe('cats');
    const failed = searched(sent, { type: 'failed', request: 1, error: { code: 'PLATFORM_ERROR', message: 'GIPHY did not answer', status: 502 } });
    expect(searchToSend(failed)).toBeUndefined();
    expect(searchToSend(failed, { again: true })).toBe('cat');
    // Answered: Enter on the same words asks nothing more.
    expect(searchToSend(searched(sent, { type: 'answered', request: 1, page: page(['a'], 1, null) }), { again: true })).toBeUndefined();
  });

  it('shows a search’s pages one after the other, each GIF once, and drops the answer to a search since replaced', () => {
    let state = searched(NO_GIF_SEARCH, { type: 'typed', typed: 'cat' }, { type: 'sent', request: 1, query: 'cat', more: false });
    expect(state).toMatchObject({ status: 'searching', asked: 'cat', items: [] });
    expect(gifSearchSummary(state)).toBe('Searching GIPHY for “cat”…');
    state = searched(state, { type: 'answered', request: 1, page: page(['a', 'b'], 5, 2) });
    expect(state).toMatchObject({ status: 'done', total: 5, nextOffset: 2 });
    expect(hasMore(state)).toBe(true);
    expect(gifSearchSummary(state)).toBe('2 of 5 GIFs for “cat”.');
    state = searched(state, { type: 'sent', request: 2, query: 'cat', more: true });
    expect(state.status).toBe('more');
    expect(state.items).toHaveLength(2);
    expect(hasMore(state)).toBe(false);
    expect(gifSearchSummary(state)).toBe('Loading more GIFs for “cat”…');
    // The provider's order shifted: b comes again, and is shown once.
    state = searched(state, { type: 'answered', request: 2, page: page(['b', 'c', 'd'], 5, null) });
    expect(state.items.map((item) => item.providerId)).toEqual(['a', 'b', 'c', 'd']);
    expect(hasMore(state)).toBe(false);
    expect(gifSearchSummary(state)).toBe('4 of 5 GIFs for “cat”.');

    // A new search replaces the results; the old one's late answer is dropped.
    const replaced = searched(state, { type: 'sent', request: 3, query: 'dog', more: false }, { type: 'sent', request: 4, query: 'dogs', more: false });
    expect(searched(replaced, { type: 'answered', request: 3, page: page(['x'], 1, null) })).toBe(replaced);
    expect(searched(replaced, { type: 'failed', request: 3, error: { code: 'NETWORK', message: 'gone', status: 0 } })).toBe(replaced);
    const dogs = searched(replaced, { type: 'answered', request: 4, page: page(['y'], 1, null) });
    expect(dogs.items.map((item) => item.providerId)).toEqual(['y']);
    expect(gifSearchSummary(dogs)).toBe('1 GIF for “dogs”.');
  });

  it('says in words that nothing was found, that a search failed (the results kept when only “More” did), and what to do', () => {
    expect(gifSearchSummary(NO_GIF_SEARCH)).toBe('Type what to look for: the GIFs GIPHY finds show here.');
    const asked = searched(NO_GIF_SEARCH, { type: 'typed', typed: 'zzzq' }, { type: 'sent', request: 1, query: 'zzzq', more: false });
    expect(gifSearchSummary(searched(asked, { type: 'answered', request: 1, page: page([], 0, null) }))).toBe('No GIFs found for “zzzq”. Try other words.');
    const error = { code: 'PLATFORM_ERROR', message: 'GIPHY asks to slow down (this server\'s key is rate limited): try again later', status: 502 };
    const failed = searched(asked, { type: 'failed', request: 1, error });
    expect(failed).toMatchObject({ status: 'failed', error });
    expect(gifSearchSummary(failed)).toBe('The search for “zzzq” failed.');
    // Sent again: the error goes.
    expect(searched(failed, { type: 'sent', request: 2, query: 'zzzq', more: false })).not.toHaveProperty('error');

    const shown = searched(asked, { type: 'answered', request: 1, page: page(['a', 'b'], 10, 2) }, { type: 'sent', request: 2, query: 'zzzq', more: true });
    const moreFailed = searched(shown, { type: 'failed', request: 2, error });
    expect(moreFailed.items).toHaveLength(2);
    expect(gifSearchSummary(moreFailed)).toBe('2 of 10 GIFs for “zzzq”. More could not be loaded.');
    // "More GIFs" asks again.
    expect(hasMore(moreFailed)).toBe(true);
  });

  it('moves through the grid with the arrow keys, Home and End, across rows and within the columns', () => {
    // 10 GIFs in 4 columns: rows 0–3, 4–7, 8–9.
    expect(gridMove(0, 'ArrowRight', 10, 4)).toBe(1);
    expect(gridMove(3, 'ArrowRight', 10, 4)).toBe(4);
    expect(gridMove(9, 'ArrowRight', 10, 4)).toBe(9);
    expect(gridMove(4, 'ArrowLeft', 10, 4)).toBe(3);
    expect(gridMove(0, 'ArrowLeft', 10, 4)).toBe(0);
    expect(gridMove(1, 'ArrowDown', 10, 4)).toBe(5);
    expect(gridMove(5, 'ArrowDown', 10, 4)).toBe(9);
    // No GIF under it on the last row: it stays.
    expect(gridMove(6, 'ArrowDown', 10, 4)).toBe(6);
    expect(gridMove(9, 'ArrowUp', 10, 4)).toBe(5);
    expect(gridMove(2, 'ArrowUp', 10, 4)).toBe(2);
    expect(gridMove(6, 'Home', 10, 4)).toBe(0);
    expect(gridMove(2, 'End', 10, 4)).toBe(9);
    expect(gridMove(2, 'Enter', 10, 4)).toBeUndefined();
    expect(gridMove(0, 'ArrowDown', 3, 0)).toBe(1);
    expect(gridMove(0, 'ArrowDown', 0, 4)).toBeUndefined();
  });

  it('attaches a picked GIF as media, its title the alt text, once copied into the store; until then the submit waits', () => {
    const item = pickedGif(gif('catNap2', { title: 'Sleepy Cat GIF', attribution: { name: 'The Cat Channel', url: 'https://giphy.example/catchannel' } }), 'gif-1');
    expect(item).toEqual({
      key: 'gif-1',
      name: 'Sleepy Cat GIF',
      mimeType: 'image/gif',
      size: 0,
      src: 'https://media.giphy.example/catNap2/100w.gif',
      step: 'importing',
      progress: 0,
      provider: 'GIPHY',
      credit: 'The Cat Channel',
      altText: 'Sleepy Cat GIF',
    });
    // Credited to GIPHY itself: no one to name; no title: no alt text to offer ("GIF" says nothing of it).
    expect(pickedGif(gif('x', { title: 'GIF' }), 'gif-2')).toMatchObject({ name: 'GIF', altText: '' });
    expect(pickedGif(gif('x'), 'gif-3')).not.toHaveProperty('credit');

    let state = run(fresh(), { type: 'channel', id: 'sky', chosen: true }, { type: 'set', change: { content: 'Nap time' } }, { type: 'addMedia', item });
    expect(missing(state, [sky], { editing: false, timeZone: ZONE })).toEqual(['Wait for the images to finish uploading.']);
    state = run(
      state,
      { type: 'media', key: 'gif-1', change: importedGif({ uploadId: 'u1', mediaId: 'm1', publicUrl: 'https://store.example/u1/giphy-catNap2.gif', provider: 'GIPHY' }) },
      // Its alt text is edited as any other.
      { type: 'media', key: 'gif-1', change: { altText: 'A cat asleep on a keyboard' } },
    );
    expect(state.media[0]).toMatchObject({ step: 'done', mediaId: 'm1', uploadId: 'u1', src: 'https://store.example/u1/giphy-catNap2.gif' });
    expect(missing(state, [sky], { editing: false, timeZone: ZONE })).toEqual([]);
    expect(problems(state, [sky], undefined)).toEqual([]);
    expect(createBody(state, [sky], ZONE).rows[0]!.media).toEqual([{ id: 'm1', altText: 'A cat asleep on a keyboard' }]);
    // A platform that takes no GIF (Threads) says so before anything is sent, in the API's words, under the images.
    expect(problems(state, [{ id: 'th', name: 'Th', platform: 'THREADS' }], undefined)).toEqual([{ where: 'media', sentence: 'Image 1 is a GIF; Threads (Th) takes JPEG and PNG images' }]);
  });

  it('reads a saved GIF back with its provider', () => {
    const post = written();
    post.attachments = [{ ...post.attachments[0]!, media: { ...post.attachments[0]!.media!, url: 'https://store.example/m1/giphy-catnap2.gif', provider: 'GIPHY' } }];
    expect(initialState(post, ZONE).media[0]).toMatchObject({ name: 'giphy-catnap2.gif', mimeType: 'image/gif', provider: 'GIPHY' });
    expect(initialState(written(), ZONE).media[0]).not.toHaveProperty('provider');
  });
});

describe('the platforms as the dashboard names them, from their rules', () => {
  it('labels platforms and channels, and lists the platforms with a feature', () => {
    expect(PLATFORMS.map(platformLabel)).toEqual(['Bluesky', 'LinkedIn', 'Mastodon', 'Threads']);
    expect(platformLabel('MYSPACE')).toBe('MYSPACE');
    expect(channelLabel(sky)).toBe('Sky (Bluesky)');
    expect(platformsWhere((platform) => platform.threads)).toEqual(['Bluesky', 'Mastodon', 'Threads']);
    expect(platformsWhere((platform) => platform.languages)).toEqual(['Bluesky', 'Mastodon']);
    expect([listed([]), listed(['A']), listed(['A', 'B']), listed(['A', 'B', 'C'])]).toEqual(['', 'A', 'A and B', 'A, B and C']);
  });

  it('say how each platform connects and whether it revokes, as its adapter does', () => {
    for (const platform of PLATFORMS) {
      const publisher = platforms[platform].publisher;
      if (!publisher) continue;
      // A form of this service's (the adapter checks the password), else the platform's consent pages.
      expect(rules[platform].connect.method, platform).toBe(publisher.connect ? 'app-password' : 'oauth');
      expect(rules[platform].revokes, platform).toBe(!!publisher.revoke);
    }
  });
});
