import type { Schema } from '../api.js';
import { formatNumber } from '../format.js';
import { channelLabel } from '../platforms.js';
import { isoToZoned, zonedToIso } from '../zoned-time.js';
import {
  contentTooLong,
  countedWith,
  MASTODON_VISIBILITIES,
  mediaRule,
  rulesFor,
  threadRefused,
  type AttachedImage,
  type MastodonVisibility,
  type Refusal,
  type TextContext,
} from '../../platforms/rules.js';

/**
 * The composer's state apart from its view, pure (no DOM, no request): what the form holds, its transitions (a
 * reducer), what blocks a submit (the platforms' rules, src/platforms/rules.ts, checked as the API checks them), the
 * bodies of POST /posts and PATCH /posts/{id}, and a post read back into the form. Tested in test/compose-state.test.ts.
 */

export type Integration = Schema<'Integration'>;
export type Post = Schema<'Post'>;
type Schedule = Schema<'Schedule'>;
export type Action = 'DRAFT' | 'NEXT_WINDOW' | 'SCHEDULED_TIME' | 'PUBLISH_NOW' | 'KEEP';
/** A channel as the checks and counters need it: on Mastodon, with its instance's limits (the Integration's `limits`). */
export type Channel = Pick<Integration, 'id' | 'name' | 'platform'> & Partial<Pick<Integration, 'limits'>>;

/** A file being uploaded, or media already attached (editing a post). */
export interface MediaItem {
  key: string;
  name: string;
  mimeType: string;
  size: number;
  /** What the preview shows: the file read as a data: URL (the CSP allows data: images), or a GIF's preview on its provider; then the stored image. */
  src: string;
  /** An upload's steps (compose/upload.ts), or `importing`: a GIF picked from a provider, being copied into the store. */
  step: 'hashing' | 'uploading' | 'completing' | 'importing' | 'done' | 'failed';
  progress: number;
  error?: string;
  mediaId?: string;
  /** An upload made on this page (not one the post already had): deleted again if the image is removed before saving. */
  uploadId?: string;
  variantsStatus?: AttachedImage['variantsStatus'];
  publishedBytes?: number | null;
  /** The published variant's width × height, once made (an instance may limit it). */
  publishedPixels?: number | null;
  altText: string;
  /** Where it came from when not uploaded: a GIF provider (`GIPHY`; the media's `provider`). */
  provider?: string;
  /** Whom the provider credits for it (its uploader), when it names someone. */
  credit?: string;
}

/** The visibilities a Mastodon status may have (its schedule's `settings.visibility`, as the API checks it). */
export const VISIBILITIES = MASTODON_VISIBILITIES;
export type Visibility = MastodonVisibility;

/** The visibilities in people's words, as Mastodon's own composer names them. */
export const VISIBILITY_LABELS: Record<Visibility, string> = {
  public: 'Public',
  unlisted: 'Unlisted (quiet public)',
  private: 'Followers only',
  direct: 'Mentioned people only',
};

/**
 * How a schedule's settings show in its preview (compose/preview.tsx's `shown`): a Mastodon post's content warning,
 * sensitive images and visibility in words. The composer's settings as they will be sent, or a stored schedule's.
 */
export function previewShown(settings: Record<string, unknown> | null | undefined): { warning?: string; sensitive?: boolean; audience?: string } {
  const { spoilerText, sensitive, visibility } = settings ?? {};
  return {
    ...(typeof spoilerText === 'string' && spoilerText.trim() !== '' && { warning: spoilerText }),
    ...(sensitive === true && { sensitive: true }),
    ...(VISIBILITIES.includes(visibility as Visibility) && { audience: VISIBILITY_LABELS[visibility as Visibility] }),
  };
}

/**
 * A Mastodon channel's options, as the form holds them: what its schedule's `settings` say to the publishing adapter
 * (src/platforms/mastodon.ts). Sent only when set (`mastodonSettings`).
 */
export interface MastodonOptions {
  /** `settings.visibility`; null: the account's default. */
  visibility: Visibility | null;
  /** `settings.spoilerText`, the content warning, as typed ('' for none); counted with the text, as Mastodon counts it. */
  spoilerText: string;
  /** `settings.sensitive`: the images shown only on a click (sent only when the post has images). */
  sensitive: boolean;
}

export const NO_MASTODON_OPTIONS: Readonly<MastodonOptions> = Object.freeze({ visibility: null, spoilerText: '', sensitive: false });

/** What the form holds. */
export interface ComposeState {
  /** The chosen channels' ids (an edited post keeps its own: PATCH cannot add or remove one). */
  selected: string[];
  /** The post's text, published on every chosen channel that has no text of its own. */
  content: string;
  /** The channels' own texts, by channel id (the row's `overrides`; when editing, a schedule's own content). */
  overrides: Record<string, string>;
  /** The Mastodon channels' options, by channel id (an override's `settings`; when editing, the schedule's); none set: absent. */
  mastodon: Record<string, MastodonOptions>;
  /** The thread's parts after the post, in order, as typed (empty ones too). */
  thread: string[];
  firstComment: string;
  tagIds: string[];
  evergreen: boolean;
  media: MediaItem[];
  action: Action;
  /** The day and time chosen for SCHEDULED_TIME, in the workspace's zone (`YYYY-MM-DD`, `HH:MM`). */
  date: string;
  time: string;
}

/** The fields a form control sets as they are. */
type PlainField = 'content' | 'firstComment' | 'tagIds' | 'evergreen' | 'action' | 'date' | 'time';

export type ComposeEvent =
  | { type: 'set'; change: Partial<Pick<ComposeState, PlainField>> }
  | { type: 'channel'; id: string; chosen: boolean }
  /** "Different text for …": on, the channel's own text starts as the post's; off, it is dropped. */
  | { type: 'ownText'; id: string; on: boolean }
  | { type: 'override'; id: string; value: string }
  /** A Mastodon channel's options changed (visibility, content warning, sensitive images). */
  | { type: 'mastodon'; id: string; change: Partial<MastodonOptions> }
  | { type: 'addPart' }
  | { type: 'removePart'; index: number }
  | { type: 'part'; index: number; value: string }
  | { type: 'tagAdded'; id: string }
  | { type: 'addMedia'; item: MediaItem }
  | { type: 'media'; key: string; change: Partial<MediaItem> }
  | { type: 'removeMedia'; key: string }
  /** Saved: the images belong to the post now (removing one must not delete its upload); a new post's form is emptied. */
  | { type: 'saved'; editing: boolean };

export type Dispatch = (event: ComposeEvent) => void;

/** The most thread parts a post takes after its first. */
export const MAX_THREAD_PARTS = 25;

export function compose(state: ComposeState, event: ComposeEvent): ComposeState {
  switch (event.type) {
    case 'set':
      return { ...state, ...event.change };
    case 'channel':
      return { ...state, selected: event.chosen ? [...state.selected, event.id] : state.selected.filter((id) => id !== event.id) };
    case 'ownText': {
      const overrides = { ...state.overrides };
      if (event.on) overrides[event.id] = state.content;
      else delete overrides[event.id];
      return { ...state, overrides };
    }
    case 'override':
      return { ...state, overrides: { ...state.overrides, [event.id]: event.value } };
    case 'mastodon':
      return { ...state, mastodon: { ...state.mastodon, [event.id]: { ...mastodonOptionsOf(state, event.id), ...event.change } } };
    case 'addPart':
      return state.thread.length < MAX_THREAD_PARTS ? { ...state, thread: [...state.thread, ''] } : state;
    case 'removePart':
      return { ...state, thread: state.thread.filter((_, at) => at !== event.index) };
    case 'part':
      return { ...state, thread: state.thread.map((part, at) => (at === event.index ? event.value : part)) };
    case 'tagAdded':
      return { ...state, tagIds: [...state.tagIds, event.id] };
    case 'addMedia':
      return { ...state, media: [...state.media, event.item] };
    case 'media':
      return { ...state, media: state.media.map((item) => (item.key === event.key ? { ...item, ...event.change } : item)) };
    case 'removeMedia':
      return { ...state, media: state.media.filter((item) => item.key !== event.key) };
    case 'saved':
      if (!event.editing) return { ...initialState(undefined, ''), action: state.action };
      return { ...state, media: state.media.map(({ uploadId: _saved, ...item }) => item) };
  }
}

/** The form for a new post (`post` undefined), or for `post` as it was written, its times read in `timeZone`. */
export function initialState(post: Post | undefined, timeZone: string): ComposeState {
  const roots = rootsOf(post);
  const draftAt = roots.find((root) => root.scheduledAt)?.scheduledAt;
  return {
    selected: roots.map((root) => root.integrationId),
    content: post?.content ?? '',
    overrides: Object.fromEntries(roots.filter((root) => root.scheduledContent !== post!.content).map((root) => [root.integrationId, root.scheduledContent])),
    mastodon: Object.fromEntries(roots.filter((root) => root.integration.platform === 'MASTODON').map((root) => [root.integrationId, readMastodonOptions(root.settings)])),
    thread: post ? threadOf(post) : [],
    firstComment: roots[0]?.firstComment ?? '',
    tagIds: post?.tagIds ?? [],
    evergreen: post?.isEvergreen ?? false,
    media: post ? post.attachments.map(attachedItem) : [],
    action: post ? 'KEEP' : 'NEXT_WINDOW',
    ...(draftAt ? isoToZoned(draftAt, timeZone) : { date: '', time: '' }),
  };
}

/** A post's first schedule on each channel (its thread parts are the others). */
export const rootsOf = (post: Post | undefined): Schedule[] => post?.schedules.filter((schedule) => schedule.threadOrder === 0) ?? [];

/** Whether some of the post's channels are drafts, which an edit may make live. */
export const hasDrafts = (post: Post) => rootsOf(post).some((root) => root.status === 'DRAFT');

/** The chosen channels, in the workspace's order. */
export const chosenOf = <T extends Channel>(state: ComposeState, channels: T[]): T[] => channels.filter((channel) => state.selected.includes(channel.id));

export const hasOwnText = (state: ComposeState, channelId: string) => state.overrides[channelId] !== undefined;

/** The text `channelId` publishes: its own, or the post's. */
export const textFor = (state: ComposeState, channelId: string) => state.overrides[channelId] ?? state.content;

/** A Mastodon channel's options as the form holds them (none set: the account's defaults). */
export const mastodonOptionsOf = (state: Pick<ComposeState, 'mastodon'>, channelId: string): MastodonOptions => state.mastodon[channelId] ?? NO_MASTODON_OPTIONS;

/** A schedule's settings read into the options (what is not one of them, or not valid, is left out). */
export function readMastodonOptions(settings: Record<string, unknown> | null | undefined): MastodonOptions {
  const visibility = settings?.visibility;
  const spoilerText = settings?.spoilerText;
  return {
    visibility: VISIBILITIES.includes(visibility as Visibility) ? (visibility as Visibility) : null,
    spoilerText: typeof spoilerText === 'string' ? spoilerText : '',
    sensitive: settings?.sensitive === true,
  };
}

/**
 * The settings the options set, only those set: the visibility chosen, the content warning written (trimmed, as
 * Mastodon keeps it), and `sensitive` when asked for and the post has images (it marks images, and nothing else).
 */
export function mastodonSettings({ visibility, spoilerText, sensitive }: MastodonOptions, withImages: boolean): Record<string, unknown> {
  const warning = spoilerText.trim();
  return { ...(visibility && { visibility }), ...(warning && { spoilerText: warning }), ...(sensitive && withImages && { sensitive: true }) };
}

const isMastodon = (channel: Pick<Channel, 'platform'>) => channel.platform === 'MASTODON';

/** The settings a new post's schedule on `channel` gets ({} on other platforms than Mastodon, or with no option set). */
export const settingsFor = (state: ComposeState, channel: Pick<Channel, 'id' | 'platform'>): Record<string, unknown> =>
  isMastodon(channel) ? mastodonSettings(mastodonOptionsOf(state, channel.id), state.media.length > 0) : {};

/** What the channel counts with its post's text (Mastodon's content warning), as the API counts it from the settings. */
export const countedFor = (state: ComposeState, channel: Pick<Channel, 'id' | 'platform'>): TextContext => countedWith(settingsFor(state, channel));

/**
 * The chosen channels that get an entry in the row's `overrides`, in order (the API numbers them so in its refusals):
 * those with a text of their own, or with settings (a Mastodon channel's options).
 */
export const overridden = <T extends Channel>(state: ComposeState, chosen: T[]): T[] =>
  chosen.filter((channel) => hasOwnText(state, channel.id) || Object.keys(settingsFor(state, channel)).length > 0);

/** The thread parts that are written (an empty one is not sent). */
export const writtenParts = (state: ComposeState) => state.thread.filter((part) => part.trim() !== '');

/** Whether PATCH /posts/{id} may change the schedule (not while it is publishing or published). */
export const isEditable = (schedule: Schedule) => schedule.status === 'DRAFT' || schedule.status === 'FAILED' || schedule.status === 'SCHEDULED';

/** The post's thread parts at `order` (1 is the second part), one per channel that has a thread. */
export const partsAt = (post: Post, order: number) => post.schedules.filter((schedule) => schedule.threadOrder === order);

/** Whether the schedule publishes the post's own text, so that a change of `content` reaches it (as the API decides). */
const follows = (post: Post, root: Schedule) => root.scheduledContent === post.content;

const sameList = (a: unknown[], b: unknown[]) => JSON.stringify(a) === JSON.stringify(b);

/**
 * Where a problem is on the form, for showing it under that field: the post's text, a channel's own text
 * (`channel:<integrationId>`), a thread part (`part:<index>`, 0 for the second part), the thread, the first comment,
 * the images, a Mastodon channel's options (`options:<integrationId>`: its content warning); '' for the form as a whole.
 */
export type Where = '' | 'content' | 'thread' | 'firstComment' | 'media' | `channel:${string}` | `part:${number}` | `options:${string}`;

/** Something to change before the post can be sent: where on the form, and a sentence for people. */
export interface Problem {
  where: Where;
  sentence: string;
}

/**
 * What the API would refuse, made by the functions of src/platforms/rules.ts it refuses with, for the fields the
 * request would name (`rows[0].thread[1].content`), in the order it checks them; each then placed on its field.
 */
export function problems(state: ComposeState, chosen: Channel[], post: Post | undefined): Problem[] {
  const found: Refusal[] = [];
  const add = (refusal: Refusal | undefined) => void (refusal && found.push(refusal));
  const images = attachedImages(state.media);
  const { firstComment } = state;
  if (post) {
    // Editing: what the PATCH changes, checked where the API checks it; a publishing or published schedule takes nothing.
    const roots = rootsOf(post);
    const edits = scheduleEdits(post, state);
    const contentChanged = state.content !== post.content;
    const live = roots.filter(isEditable);
    // A schedule's channel with its limits (the channels listed; a schedule's own summary has none), and what its
    // settings count with its text (a post's content warning, on Mastodon): the new settings when the edit sends some.
    const ruled = (integration: Channel) => chosen.find((channel) => channel.id === integration.id) ?? integration;
    const context = (id: string) => {
      const schedule = post.schedules.find((candidate) => candidate.id === id);
      return schedule?.threadOrder === 0 ? countedWith(edits.find((edit) => edit.id === id)?.settings ?? schedule.settings) : {};
    };
    edits.forEach((edit, index) => edit.content !== undefined && add(contentTooLong(`body.schedules[${index}].content`, ruled(edit.integration), edit.content, 'post', context(edit.id))));
    const following = contentChanged ? live.filter((root) => follows(post, root) && !edits.some((edit) => edit.id === root.id && edit.content !== undefined)) : [];
    for (const root of following) add(contentTooLong('body.content', ruled(root.integration), state.content, 'post', context(root.id)));
    // New settings alone (a content warning written) count with the text the schedule keeps.
    edits.forEach((edit, index) => {
      const root = roots.find((candidate) => candidate.id === edit.id);
      if (root && edit.content === undefined && edit.settings && !following.includes(root)) {
        add(contentTooLong(`body.schedules[${index}].settings`, ruled(root.integration), root.scheduledContent, 'post', countedWith(edit.settings)));
      }
    });
    if (firstComment.trim() && firstComment !== (roots[0]?.firstComment ?? '')) for (const root of live) add(contentTooLong('body.firstComment', ruled(root.integration), firstComment, 'comment'));
    for (const root of live) add(mediaRule('body.media', ruled(root.integration), images));
  } else {
    const parts = writtenParts(state);
    const listed = overridden(state, chosen).map((channel) => channel.id);
    for (const channel of chosen) {
      if (parts.length) add(threadRefused('rows[0].thread', channel));
      const field = hasOwnText(state, channel.id) ? `rows[0].overrides[${listed.indexOf(channel.id)}].content` : 'rows[0].content';
      add(contentTooLong(field, channel, textFor(state, channel.id), 'post', countedFor(state, channel)));
      if (rulesFor(channel).threads) parts.forEach((part, index) => add(contentTooLong(`rows[0].thread[${index}].content`, channel, part)));
      if (firstComment.trim()) add(contentTooLong('rows[0].firstComment', channel, firstComment, 'comment'));
      add(mediaRule('rows[0].media', channel, images));
    }
  }
  return found.map((refusal) => ({ where: whereOf(refusal.field, state, chosen, post), sentence: refusal.sentence }));
}

/**
 * The field of the form a request's path names, for a refusal of the composer's own check or of the API:
 * `rows[0].overrides[1].content` is the second chosen channel with an override (a text of its own, or settings),
 * `body.schedules[0].content` the schedule the PATCH named first (a thread part, a channel's own text, or the text),
 * `…settings` a Mastodon channel's options, `rows[0].thread[0].content` the first part written; '' when it names none.
 */
export function whereOf(path: string, state: ComposeState, chosen: Channel[], post: Post | undefined): Where {
  const field = path.replace(/^(?:body\.|rows\[\d+\]\.)/, '');
  const index = (name: string) => {
    const found = new RegExp(`^${name}\\[(\\d+)\\]`).exec(field);
    return found ? Number(found[1]) : undefined;
  };
  if (field === 'content') return 'content';
  if (field.startsWith('firstComment')) return 'firstComment';
  if (field.startsWith('media')) return 'media';
  const part = index('thread');
  if (part !== undefined) {
    // The request holds the parts written; the form, empty ones too.
    const written = state.thread.flatMap((text, at) => (text.trim() === '' ? [] : [at]));
    return written[part] === undefined ? 'thread' : `part:${written[part]}`;
  }
  if (field === 'thread') return 'thread';
  const settings = /^\w+\[\d+\]\.settings/.test(field);
  const override = index('overrides');
  if (override !== undefined) {
    const channel = overridden(state, chosen)[override];
    if (channel && settings) return `options:${channel.id}`;
    return channel && hasOwnText(state, channel.id) ? `channel:${channel.id}` : 'content';
  }
  const named = index('schedules');
  const schedule = post && named !== undefined ? post.schedules.find((one) => one.id === scheduleEdits(post, state)[named]?.id) : undefined;
  if (schedule && settings) return `options:${schedule.integrationId}`;
  if (schedule) return schedule.threadOrder > 0 ? `part:${schedule.threadOrder - 1}` : hasOwnText(state, schedule.integrationId) ? `channel:${schedule.integrationId}` : 'content';
  return '';
}

/** The sentences about one field, joined, for showing under it (undefined when there is none). */
export const problemAt = (shown: Problem[], where: Where) => shown.filter((problem) => problem.where === where).map((problem) => problem.sentence).join(' ') || undefined;

/**
 * A problem as the list above the submit button says it: the field named where its sentence does not say which
 * ("First comment: too long for LinkedIn (In): 1251 of 1250 characters").
 */
export function summaryOf({ where, sentence }: Problem): string {
  const field = where === 'firstComment' ? 'First comment' : where.startsWith('part:') ? `Thread part ${Number(where.slice(5)) + 2}` : undefined;
  return field ? `${field}: ${sentence.replace(/^Too /, 'too ')}` : sentence;
}

/** What must be done before anything is sent (not a platform's rule): no channel, no text, uploads under way, no time. */
export function missing(state: ComposeState, chosen: Channel[], { editing, timeZone, now = Date.now() }: { editing: boolean; timeZone: string; now?: number }): string[] {
  const { content, overrides, thread, media, action } = state;
  const at = action === 'SCHEDULED_TIME' ? zonedToIso(state.date, state.time, timeZone) : null;
  return [
    chosen.length === 0 ? 'Choose at least one channel.' : '',
    content.trim() === '' ? 'Write the post’s text.' : '',
    chosen.some((channel) => overrides[channel.id] !== undefined && overrides[channel.id]!.trim() === '') ? 'A channel’s own text is empty: write it, or use the post’s text.' : '',
    editing && thread.some((part) => part.trim() === '') ? 'A thread part is empty: write it (a part is removed by deleting its schedule in the calendar).' : '',
    media.some((item) => item.step !== 'done' && item.step !== 'failed') ? 'Wait for the images to finish uploading.' : '',
    media.some((item) => item.step === 'failed') ? 'Remove the images that could not be uploaded.' : '',
    action === 'SCHEDULED_TIME' && !at ? `Choose the date and time (${timeZone}).` : '',
    at && Date.parse(at) <= now ? 'The chosen time is in the past.' : '',
  ].filter(Boolean);
}

/** The media as POST and PATCH take them: their ids, and their alt text when there is some. */
const mediaRefs = (media: MediaItem[]) => media.map((item) => ({ id: item.mediaId!, ...(item.altText.trim() && { altText: item.altText.trim() }) }));

const scheduledAtOf = (state: ComposeState, timeZone: string) => (state.action === 'SCHEDULED_TIME' ? zonedToIso(state.date, state.time, timeZone)! : undefined);

/** The body of POST /posts: one row for the chosen channels, with only what was given. */
export function createBody(state: ComposeState, chosen: Channel[], timeZone: string) {
  const { content, tagIds, evergreen, firstComment, overrides } = state;
  const scheduledAt = scheduledAtOf(state, timeZone);
  const parts = writtenParts(state);
  const media = mediaRefs(state.media);
  const overrideList = overridden(state, chosen).map((channel) => {
    const settings = settingsFor(state, channel);
    return { integrationId: channel.id, ...(overrides[channel.id] !== undefined && { content: overrides[channel.id]! }), ...(Object.keys(settings).length && { settings }) };
  });
  return {
    rows: [
      {
        content,
        ...(scheduledAt && { scheduledAt }),
        ...(tagIds.length && { tagIds }),
        ...(evergreen && { isEvergreen: true }),
        ...(firstComment.trim() && { firstComment }),
        ...(parts.length && { thread: parts.map((part) => ({ content: part })) }),
        ...(overrideList.length && { overrides: overrideList }),
        ...(media.length && { media }),
      },
    ],
    shared: { selectedIntegrations: chosen.map((channel) => channel.id) },
    postAction: state.action as Exclude<Action, 'KEEP'>,
  };
}

/**
 * The body of PATCH /posts/{id}: only what changed. A schedule that turned PUBLISHING since the page loaded refuses any
 * change named to it, and replacing the media or tags with the same list would still rewrite them.
 */
export function patchBody(state: ComposeState, post: Post, timeZone: string) {
  const { tagIds, evergreen, action } = state;
  const edits = scheduleEdits(post, state);
  const comment = state.firstComment.trim() ? state.firstComment : null;
  const media = mediaRefs(state.media);
  const scheduledAt = scheduledAtOf(state, timeZone);
  return {
    ...(state.content !== post.content && { content: state.content }),
    ...(!sameList(tagIds, post.tagIds) && { tagIds }),
    ...(evergreen !== post.isEvergreen && { isEvergreen: evergreen }),
    ...(comment !== (rootsOf(post)[0]?.firstComment ?? null) && { firstComment: comment }),
    ...(!sameList(media, post.attachments.map((a) => ({ id: a.mediaId, ...(a.altText && { altText: a.altText }) }))) && { media }),
    ...(edits.length && { schedules: edits.map(({ id, content, settings }) => ({ id, ...(content !== undefined && { content }), ...(settings && { settings }) })) }),
    ...(action !== 'KEEP' && action !== 'DRAFT' && hasDrafts(post) && { postAction: action, ...(scheduledAt && { scheduledAt }) }),
  };
}

/**
 * The texts an edit changes, as PATCH /posts/{id} takes them: `content` when the post's text changed, and in
 * `schedules` only the changeable schedules whose text is their own and changed (an override added, changed or removed;
 * a thread part rewritten), so that one which started publishing meanwhile is not named, and nothing unchanged is sent.
 */
export function textEdits(post: Post, { content, overrides, thread }: Pick<ComposeState, 'content' | 'overrides' | 'thread'>) {
  const written = threadOf(post);
  const textOf = (schedule: Schedule) =>
    schedule.threadOrder === 0
      ? (overrides[schedule.integrationId] ?? content)
      : thread[schedule.threadOrder - 1] !== written[schedule.threadOrder - 1]
        ? thread[schedule.threadOrder - 1]!
        : schedule.scheduledContent;
  return {
    content: content === post.content ? undefined : content,
    schedules: post.schedules
      .filter((schedule) => isEditable(schedule) && textOf(schedule) !== schedule.scheduledContent)
      // A first schedule publishing the post's text follows `content` without being named.
      .filter((schedule) => !(schedule.threadOrder === 0 && follows(post, schedule) && textOf(schedule) === content))
      .map((schedule) => ({ id: schedule.id, content: textOf(schedule), integration: schedule.integration })),
  };
}

/**
 * What an edit names in PATCH /posts/{id}'s `schedules`, in the post's order: each changeable schedule whose text
 * changed (`textEdits`) or, on Mastodon, whose options changed (`settings`: the schedule's settings with the options
 * as the form now holds them, its other settings kept, since the API replaces them whole).
 */
export function scheduleEdits(post: Post, state: ComposeState): { id: string; content?: string; settings?: Record<string, unknown>; integration: Schedule['integration'] }[] {
  const texts = textEdits(post, state).schedules;
  const withImages = state.media.length > 0;
  return post.schedules.filter(isEditable).flatMap((schedule) => {
    const text = texts.find((edit) => edit.id === schedule.id);
    const settings = schedule.threadOrder === 0 && isMastodon(schedule.integration) ? changedSettings(schedule.settings, mastodonOptionsOf(state, schedule.integrationId), withImages) : undefined;
    if (!text && !settings) return [];
    return [{ id: schedule.id, ...(text && { content: text.content }), ...(settings && { settings }), integration: schedule.integration }];
  });
}

/** A schedule's settings with the options as now held, or undefined when those say what its settings say. */
function changedSettings(stored: Record<string, unknown> | null | undefined, options: MastodonOptions, withImages: boolean): Record<string, unknown> | undefined {
  const now = mastodonSettings(options, withImages);
  if (JSON.stringify(now) === JSON.stringify(mastodonSettings(readMastodonOptions(stored), withImages))) return undefined;
  const { visibility: _visibility, spoilerText: _spoilerText, sensitive: _sensitive, ...others } = stored ?? {};
  return { ...others, ...now };
}

/** The post's thread parts after its first schedule, in order. */
export function threadOf(post: Post): string[] {
  const first = post.schedules.find((schedule) => schedule.threadOrder === 0);
  return post.schedules
    .filter((schedule) => schedule.threadOrder > 0 && schedule.threadRootScheduleId === first?.id)
    .sort((a, b) => a.threadOrder - b.threadOrder)
    .map((schedule) => schedule.scheduledContent);
}

/** A variant's width × height, or null when it is not made. */
export const pixelsOf = (variant: { width: number; height: number } | undefined): number | null => (variant ? variant.width * variant.height : null);

function attachedItem(attachment: Post['attachments'][number]): MediaItem {
  const media = attachment.media;
  return {
    key: `attached-${attachment.id}`,
    name: media?.url.split('/').pop() ?? 'image',
    mimeType: mimeOf(media?.url ?? ''),
    size: media?.size ?? 0,
    src: media?.variants['1:1']?.url ?? media?.url ?? '',
    step: 'done',
    progress: 1,
    mediaId: attachment.mediaId,
    variantsStatus: media?.variantsStatus,
    publishedBytes: media?.variants.source?.sizeBytes ?? null,
    publishedPixels: pixelsOf(media?.variants.source),
    altText: attachment.altText ?? '',
    ...(media?.provider && { provider: media.provider }),
  };
}

function mimeOf(url: string): string {
  const extension = /\.(\w+)$/.exec(url)?.[1]?.toLowerCase();
  return extension === 'png' ? 'image/png' : extension === 'gif' ? 'image/gif' : extension === 'webp' ? 'image/webp' : 'image/jpeg';
}

/** The media as the platform rules see them (src/platforms/rules.ts): what the API checks at submit. */
function attachedImages(media: MediaItem[]): AttachedImage[] {
  return media.map((item) => ({
    mimeType: item.mimeType,
    altText: item.altText.trim() || null,
    variantsStatus: item.variantsStatus ?? 'pending',
    publishedBytes: item.publishedBytes ?? null,
    publishedPixels: item.publishedPixels ?? null,
  }));
}

/** A counter under a text: the channel that publishes it, and as what. */
export interface CounterSpec {
  channel: Channel;
  text: string;
  as: 'post' | 'comment';
  /** What the channel counts with the text (a Mastodon post's content warning: `countedFor`). */
  context?: TextContext;
}

export interface Counter {
  key: string;
  name: string;
  tone: 'ok' | 'warn' | 'over';
  /** What the counter reads. */
  text: string;
  /** What the live region says when the counter is not `ok`. */
  announce: string;
}

/**
 * A text counted by the channel's rules (its platform's, its instance's limits on Mastodon, with the content warning
 * on a Mastodon post): the limit nearest to being passed (a platform may count in two units, as Bluesky counts
 * graphemes and bytes), a warning from 90 % of it, and over it the API's own numbers, in words.
 */
export function counterState({ channel, text, as, context }: CounterSpec): Counter {
  const platform = rulesFor(channel);
  const measured = platform.measureText(text, context);
  const limits = platform.limits[as === 'comment' ? 'comment' : 'text'];
  const nearest = limits.map((limit) => ({ ...limit, used: measured[limit.unit] ?? 0 })).sort((a, b) => b.used / b.limit - a.used / a.limit)[0]!;
  // Over is the API's own judgement (the shared rule), and when over, its numbers are the ones shown.
  const found = platform.checkText(text, as, context);
  const tone = found ? 'over' : nearest.used >= nearest.limit * 0.9 ? 'warn' : 'ok';
  const who = channelLabel(channel);
  const shown = found ? { used: found.length, limit: found.limit, label: limits.find((limit) => limit.unit === found.unit)?.label ?? found.unit } : nearest;
  const counted = `${formatNumber(shown.used)} / ${formatNumber(shown.limit)} ${shown.label}`;
  const reads = found ? `${who}: ${counted}, ${formatNumber(found.length - found.limit)} over the limit` : `${who}: ${counted}`;
  const announce = tone === 'over' ? `${who}: over the limit.` : `${who}: ${formatNumber(nearest.limit - nearest.used)} ${nearest.label} left.`;
  return { key: `${channel.id}-${as}`, name: channel.name, tone, text: reads, announce: tone === 'warn' ? announce.replace(/\d[\d,]* (\w+) left/, 'near the limit') : announce };
}
