/**
 * The platforms' rules for text and media, pure: no Node module, no I/O. The server's platform adapters
 * (src/platforms/bluesky.ts, linkedin.ts, joined in index.ts) and so the API's CONTENT_TOO_LONG and MEDIA_RULE_VIOLATED
 * answers come from here, and so do the dashboard composer's live counters (esbuild bundles this file into the
 * dashboard): one rule, counted the same way on both sides. See docs/limits.md#platform-rules. The dashboard reads
 * every platform's name, limits and features here too (src/dashboard/platforms.ts): none of its pages names one.
 *
 * Most platforms' rules are constants (`rules`). Mastodon's are its instance's: `rulesFor(channel)` gives a channel's
 * rules from the limits its instance reports (`InstanceLimits`, read with the channel), Mastodon's defaults when none.
 */

/** The platforms a workspace can have channels on (in this order: the posts list's facets give each its bit). */
export const PLATFORMS = ['BLUESKY', 'LINKEDIN', 'MASTODON', 'THREADS'] as const;
export type Platform = (typeof PLATFORMS)[number];

/**
 * What a platform counts a text in: what a reader sees as one character, bytes of UTF-8, UTF-16 code units, graphemes
 * as Mastodon counts a status (`mastodon`: each link its instance's reserved length, a mention without its domain, the
 * content warning included), or Unicode code points with links in full (`codePoints`: the strict reading of a
 * Mastodon-compatible server that is not Mastodon, such as GoToSocial).
 */
export type TextUnit = 'graphemes' | 'bytes' | 'characters' | 'mastodon' | 'codePoints' | 'threads' | 'links';

/**
 * What a platform counts with a text besides the text itself: a Mastodon status's content warning (`spoilerText` of
 * the schedule's settings: Mastodon counts it against the same limit). Ignored by platforms that have none.
 */
export interface TextContext {
  spoilerText?: string;
}

/** The text a schedule's `settings` add to its text's count ({} when none): Mastodon's content warning. */
export function countedWith(settings: Record<string, unknown> | null | undefined): TextContext {
  const spoilerText = settings?.spoilerText;
  return typeof spoilerText === 'string' && spoilerText ? { spoilerText } : {};
}

/**
 * A Mastodon instance's limits as it reports them (`GET /api/v2/instance`'s `configuration`, kept per instance in
 * `mastodon_instances.limits`), which a channel on it is checked against.
 */
export interface InstanceLimits {
  /** Characters a status may have (`statuses.max_characters`), content warning included. */
  maxCharacters: number;
  /** What each link counts, whatever its length (`statuses.characters_reserved_per_url`). */
  charactersReservedPerUrl: number;
  /** Media a status may carry (`statuses.max_media_attachments`). */
  maxMediaAttachments: number;
  /** The image types it takes (`media_attachments.supported_mime_types`, its images). */
  imageTypes: string[];
  /** The most bytes an image may have (`media_attachments.image_size_limit`); null when it says none. */
  imageSizeLimit: number | null;
  /** The most pixels (width × height) an image may have (`media_attachments.image_matrix_limit`); null when it says none. */
  imageMatrixLimit: number | null;
  /** Characters of an image's description, its alt text (`media_attachments.description_limit`). */
  descriptionLimit: number;
  /**
   * How its texts are counted: `mastodon`, as Mastodon's StatusLengthValidator does (graphemes, each link
   * `charactersReservedPerUrl`, `@user@domain` as `@user`, the content warning included); `strict`, for a server that
   * is not Mastodon (GoToSocial, Pleroma, Akkoma, unknown): code points of the text and the content warning, links and
   * mentions in full, which no such server counts as more.
   */
  counting: 'mastodon' | 'strict';
}

/** Text that breaks a platform's rule: what the limit counts, the limit, and the length found in that unit. */
export interface TooLong {
  limit: number;
  length: number;
  unit: TextUnit;
}

/**
 * The rule a post's images break: `at`, where in the list (`[1]`, `[1].altText`, or '' for the list), and what is
 * wrong, as a sentence naming the channel `who` ("Bluesky (Sky)"), with a `detail` for programs if any.
 */
export interface MediaBreak {
  at: string;
  sentence: string;
  detail?: string;
}

/** An image attached to a post, as the platform rules see it. */
export interface AttachedImage {
  /** The type read from the bytes: image/jpeg, image/png, image/webp or image/gif. */
  mimeType: string;
  altText: string | null;
  variantsStatus: 'pending' | 'ready' | 'failed';
  /** The size of the variant the adapter publishes ('source'), once the variants are made. */
  publishedBytes: number | null;
  /** Its pixels (width × height), once the variants are made; absent where not known. */
  publishedPixels?: number | null;
}

/** What a text measures in every unit a platform counts. */
export interface TextMeasure {
  graphemes: number;
  bytes: number;
  /** UTF-16 code units (what JavaScript's `length` counts). */
  characters: number;
}

/** A platform's rules, as pure functions: the adapters add their publisher (src/platforms/index.ts, PlatformRules). */
export interface ContentRules {
  /** How the platform is named to people. */
  label: string;
  /**
   * The first rule `text` breaks as a post, or as a first comment (`comment`), or null when the platform accepts it;
   * `context`, what the platform counts with it (Mastodon's content warning).
   */
  checkText(text: string, as?: 'post' | 'comment', context?: TextContext): TooLong | null;
  /** `text` measured in each unit of the platform's limits (`limits.text`, `limits.comment`), as `checkText` counts it. */
  measureText(text: string, context?: TextContext): Partial<Record<TextUnit, number>>;
  /** Whether posts can have replies published under them as a thread (`thread` parts); LinkedIn has no threads. */
  threads: boolean;
  /** Whether a post carries language tags: the workspace's default `languages`, or those detected (Bluesky's `langs`). */
  languages: boolean;
  /**
   * How an account is connected (src/channels/connect.ts): `app-password`, a handle and an app password given to this
   * service (its connect page, and the dashboard's own form); `oauth`, the platform's consent pages, which `explained`
   * tells a person about before they go there.
   */
  connect: { method: 'app-password' } | { method: 'oauth'; explained: string; /** The member names their server first (Mastodon). */ asksServer?: boolean };
  /** Whether disconnecting a channel revokes its tokens at the platform (its adapter's `revoke`). */
  revokes: boolean;
  /** The first rule the images of one post break, for the channel people know as `who` ("Bluesky (Sky)"), or null. */
  checkMedia(images: AttachedImage[], who: string): MediaBreak | null;
  /** Why a schedule's `settings` cannot be published as they are (a value the platform does not take), or null. */
  checkSettings?(settings: Record<string, unknown>): string | null;
  /** The limits as numbers, for counters and for saying the rules before anything is submitted. */
  limits: {
    /** The limits a text counts against (each in its unit); a counter shows the first one, nearest its limit. */
    text: { limit: number; unit: TextUnit; label: string }[];
    comment: { limit: number; unit: TextUnit; label: string }[];
    images: number;
    /** The image types it takes. */
    imageTypes: readonly string[];
    /** The most bytes a published image may have (null: no limit of its own; the variants are made to fit). */
    imageBytes: number | null;
    altText: { limit: number; unit: 'graphemes' | 'characters' };
  };
}

const ASCII = /^[^\u0080-\uffff]*$/;
let segmenter: Intl.Segmenter | undefined;

/** Bluesky counts what a reader sees as one character: an emoji with its modifiers, a letter with its accents. */
export function countGraphemes(text: string): number {
  // ASCII needs no segmenter (the slow part of a create): each character is a grapheme, but CR LF is one.
  if (ASCII.test(text)) return text.length - (text.match(/\r\n/g)?.length ?? 0);
  segmenter ??= new Intl.Segmenter('en', { granularity: 'grapheme' });
  let count = 0;
  for (const _ of segmenter.segment(text)) count++;
  return count;
}

/** The bytes of `text` in UTF-8, without encoding it (lone surrogates count 3, as TextEncoder's U+FFFD does). */
export function utf8Length(text: string): number {
  let bytes = 0;
  for (let index = 0; index < text.length; index++) {
    const code = text.charCodeAt(index);
    if (code < 0x80) bytes += 1;
    else if (code < 0x800) bytes += 2;
    else if (code >= 0xd800 && code <= 0xdbff && index + 1 < text.length && (text.charCodeAt(index + 1) & 0xfc00) === 0xdc00) {
      bytes += 4;
      index++;
    } else bytes += 3;
  }
  return bytes;
}

export function measure(text: string): TextMeasure {
  return { graphemes: countGraphemes(text), bytes: utf8Length(text), characters: text.length };
}

/**
 * What each unit is called for people, and the detail a program is told in brackets after it: Bluesky counts what a
 * reader sees as one character (graphemes) and bytes of UTF-8, LinkedIn UTF-16 code units (an emoji counts 2).
 */
const UNITS: Record<TextUnit, { words: string; detail: string }> = {
  graphemes: { words: 'characters', detail: 'graphemes' },
  bytes: { words: 'bytes', detail: 'UTF-8' },
  characters: { words: 'characters', detail: 'UTF-16 code units' },
  mastodon: { words: 'characters', detail: 'as Mastodon counts them' },
  codePoints: { words: 'characters', detail: 'code points, links in full' },
  threads: { words: 'characters', detail: 'an emoji counting its UTF-8 bytes' },
  links: { words: 'links', detail: 'distinct links' },
};
const VARIANTS_FAILED = 'its variants failed';
const IMAGE_TYPE_NAMES: Record<string, string> = { 'image/jpeg': 'a JPEG', 'image/png': 'a PNG', 'image/webp': 'a WebP image', 'image/gif': 'a GIF' };

const tooManyImages = (who: string, given: number, most: number): MediaBreak => ({ at: '', sentence: `Too many images for ${who}: ${given}, and it takes at most ${most}` });
const altTextTooLong = (who: string, index: number, length: number, limit: number, unit: TextUnit): MediaBreak => ({
  at: `[${index}].altText`,
  sentence: `The alt text of image ${index + 1} is too long for ${who}: ${length} of ${limit} ${UNITS[unit].words}`,
  detail: UNITS[unit].detail,
});

// Bluesky. app.bsky.feed.post caps the text at 300 graphemes and 3000 bytes of UTF-8; app.bsky.embed.images takes at
// most 4 images, each blob at most 1,000,000 bytes; the app caps alt text at 2000 graphemes.
export const BLUESKY_MAX_GRAPHEMES = 300;
export const BLUESKY_MAX_BYTES = 3000;
export const BLUESKY_MAX_IMAGES = 4;
export const BLUESKY_MAX_IMAGE_BYTES = 1_000_000;
export const BLUESKY_MAX_ALT_GRAPHEMES = 2000;

export const blueskyRules: ContentRules = {
  label: 'Bluesky',
  threads: true,
  languages: true,
  connect: { method: 'app-password' },
  revokes: false,
  checkText(text) {
    const length = countGraphemes(text);
    if (length > BLUESKY_MAX_GRAPHEMES) return { limit: BLUESKY_MAX_GRAPHEMES, length, unit: 'graphemes' };
    const bytes = utf8Length(text);
    if (bytes > BLUESKY_MAX_BYTES) return { limit: BLUESKY_MAX_BYTES, length: bytes, unit: 'bytes' };
    return null;
  },
  measureText: (text) => ({ graphemes: countGraphemes(text), bytes: utf8Length(text) }),
  checkMedia(images, who) {
    if (images.length > BLUESKY_MAX_IMAGES) return tooManyImages(who, images.length, BLUESKY_MAX_IMAGES);
    for (const [index, image] of images.entries()) {
      const alt = countGraphemes(image.altText ?? '');
      if (alt > BLUESKY_MAX_ALT_GRAPHEMES) return altTextTooLong(who, index, alt, BLUESKY_MAX_ALT_GRAPHEMES, 'graphemes');
      if (image.variantsStatus === 'failed') {
        return { at: `[${index}]`, sentence: `Image ${index + 1} could not be prepared for ${who}: upload it again`, detail: VARIANTS_FAILED };
      }
      if (image.publishedBytes !== null && image.publishedBytes > BLUESKY_MAX_IMAGE_BYTES) {
        return { at: `[${index}]`, sentence: `Image ${index + 1} is too big for ${who}: ${image.publishedBytes} of ${BLUESKY_MAX_IMAGE_BYTES} bytes` };
      }
    }
    return null;
  },
  limits: {
    text: [
      { limit: BLUESKY_MAX_GRAPHEMES, unit: 'graphemes', label: 'characters' },
      { limit: BLUESKY_MAX_BYTES, unit: 'bytes', label: 'bytes' },
    ],
    comment: [
      { limit: BLUESKY_MAX_GRAPHEMES, unit: 'graphemes', label: 'characters' },
      { limit: BLUESKY_MAX_BYTES, unit: 'bytes', label: 'bytes' },
    ],
    images: BLUESKY_MAX_IMAGES,
    imageTypes: ['image/jpeg', 'image/png', 'image/webp', 'image/gif'],
    imageBytes: BLUESKY_MAX_IMAGE_BYTES,
    altText: { limit: BLUESKY_MAX_ALT_GRAPHEMES, unit: 'graphemes' },
  },
};

// LinkedIn. 3000 characters; a comment 1250 (LinkedIn's comment box). The Posts API's multi-image content takes 2 to 20
// images; the Images API takes JPEG, PNG and GIF; alt text up to 4086 characters.
export const LINKEDIN_MAX_CHARACTERS = 3000;
export const LINKEDIN_MAX_COMMENT_CHARACTERS = 1250;
export const LINKEDIN_MAX_IMAGES = 20;
export const LINKEDIN_IMAGE_TYPES: readonly string[] = ['image/jpeg', 'image/png', 'image/gif'];
export const LINKEDIN_MAX_ALT_TEXT = 4086;
/**
 * A hashtag in LinkedIn's little text: `#` and letters or digits, not inside a word (nor an HTML entity, `&#…`). The
 * server publishes these through the hashtag template (toLittleText, linkedin.ts); the composer's preview highlights them.
 */
export const LINKEDIN_HASHTAG = String.raw`(?<![\p{L}\p{N}_&])#([\p{L}\p{N}]+)`;

export const linkedinRules: ContentRules = {
  label: 'LinkedIn',
  // A post's replies are comments, which cannot carry a post of their own: a thread is refused when it is written.
  threads: false,
  languages: false,
  connect: {
    method: 'oauth',
    explained: 'LinkedIn asks you to sign in and to allow Postwise to post; if you manage LinkedIn pages, you then choose whom the channel posts as.',
  },
  revokes: true,
  checkText(text, as = 'post') {
    // Counted in UTF-16 code units, the strictest reading of LinkedIn's "3000 characters" (an emoji counts 2),
    // so text accepted here is never refused by LinkedIn for its length.
    if (as === 'comment') {
      return text.length > LINKEDIN_MAX_COMMENT_CHARACTERS ? { limit: LINKEDIN_MAX_COMMENT_CHARACTERS, length: text.length, unit: 'characters' } : null;
    }
    return text.length > LINKEDIN_MAX_CHARACTERS ? { limit: LINKEDIN_MAX_CHARACTERS, length: text.length, unit: 'characters' } : null;
  },
  measureText: (text) => ({ characters: text.length }),
  checkMedia(images, who) {
    if (images.length > LINKEDIN_MAX_IMAGES) return tooManyImages(who, images.length, LINKEDIN_MAX_IMAGES);
    const index = images.findIndex((image) => !LINKEDIN_IMAGE_TYPES.includes(image.mimeType));
    if (index >= 0) {
      const type = images[index]!.mimeType;
      return { at: `[${index}]`, sentence: `Image ${index + 1} is ${IMAGE_TYPE_NAMES[type] ?? type}; ${who} takes JPEG, PNG and GIF images`, detail: type };
    }
    const long = images.findIndex((image) => (image.altText?.length ?? 0) > LINKEDIN_MAX_ALT_TEXT);
    if (long >= 0) return altTextTooLong(who, long, images[long]!.altText!.length, LINKEDIN_MAX_ALT_TEXT, 'characters');
    return null;
  },
  limits: {
    text: [{ limit: LINKEDIN_MAX_CHARACTERS, unit: 'characters', label: 'characters' }],
    comment: [{ limit: LINKEDIN_MAX_COMMENT_CHARACTERS, unit: 'characters', label: 'characters' }],
    images: LINKEDIN_MAX_IMAGES,
    imageTypes: LINKEDIN_IMAGE_TYPES,
    imageBytes: null,
    altText: { limit: LINKEDIN_MAX_ALT_TEXT, unit: 'characters' },
  },
};

// Mastodon: any instance, each with its own limits (GET /api/v2/instance). These are Mastodon's own defaults, which a
// channel is checked against until its instance's are known: 500 characters (a link counts 23), 4 attachments, images
// of the four types uploads take up to 16 MiB and 33,177,600 pixels, descriptions of 1,500 characters.
export const MASTODON_DEFAULT_LIMITS: Readonly<InstanceLimits> = Object.freeze({
  maxCharacters: 500,
  charactersReservedPerUrl: 23,
  maxMediaAttachments: 4,
  imageTypes: Object.freeze(['image/jpeg', 'image/png', 'image/webp', 'image/gif']) as string[],
  imageSizeLimit: 16 * 1024 * 1024,
  imageMatrixLimit: 33_177_600,
  descriptionLimit: 1500,
  counting: 'mastodon',
});

/**
 * Links as Mastodon finds them in a status (twitter-text's `valid_url` with Mastodon's path rules,
 * config/initializers/twitter_regex.rb; only those with a scheme count, `extract_url_without_protocol: false`): `http://`
 * or `https://` not right after a letter, digit, `@`, `$` or `#`; a host of labels whose last is a top-level domain
 * (letters, at least two, or punycode: twitter-text checks it against its list of TLDs); a port; a path of anything but
 * spaces, `<>`, and unbalanced `()` or `?`, ending on neither punctuation nor a quote; a query ending on a letter,
 * digit or `_&=#/-`.
 */
const URL_SCHEME = /(?<![A-Za-z0-9@\uFF20$#\uFF03])https?:\/\//giu;
const URL_HOST = /(?:[\p{L}\p{N}\p{M}](?:[\p{L}\p{N}\p{M}_-]*[\p{L}\p{N}\p{M}])?\.)+(?:\p{L}[\p{L}\p{M}]+|xn--[a-z0-9-]+)(?![\p{L}\p{N}\p{M}_@-])(?::\d{1,5}(?!\d))?/iuy;
const URL_PATH = /\/(?:[^\s<>()?]|\([^\s<>()?]*\))*/uy;
const URL_PATH_BAD_END = /[!*"'\u300C\u300D;:=,.$%[\]~&|@]+$/u;
const URL_QUERY = /\?[a-z0-9!?*'();:&=+$/%#[\]\-_.,~|@^\u00A0-\uD7FF\uF900-\uFDCF\uFDF0-\uFFEF\u{10000}-\u{10FFFD}]*/iuy;
const URL_QUERY_END = /[a-z0-9_&=#/\-\u00A0-\uD7FF\uF900-\uFDCF\uFDF0-\uFFEF\u{10000}-\u{10FFFD}]/iu;
/**
 * A mention as Mastodon finds one (Account::MENTION_RE, `[[:word:]]` being letters, marks, digits and `_`), which does
 * not count when `@` or `://` follows it (twitter-text's end_mention_match).
 */
const MENTION = /(?<![=/\p{L}\p{M}\p{Nd}\p{Pc}])@([a-z0-9_]+(?:[.-]+[a-z0-9_]+)*)(?:@[\p{L}\p{M}\p{Nd}\p{Pc}]+(?:[.-]+[\p{L}\p{M}\p{Nd}\p{Pc}]+)*)?/giu;
const MENTION_END = /^(?:[@\uFF20]|:\/\/)/u;

/** Where the links of `text` are, as [start, end) in UTF-16 indices. */
function linksIn(text: string): [number, number][] {
  const found: [number, number][] = [];
  for (const scheme of text.matchAll(URL_SCHEME)) {
    let at = scheme.index + scheme[0].length;
    URL_HOST.lastIndex = at;
    const host = URL_HOST.exec(text);
    if (!host) continue;
    at += host[0].length;
    URL_PATH.lastIndex = at;
    const path = URL_PATH.exec(text);
    let trimmed = false;
    if (path) {
      const kept = path[0].replace(URL_PATH_BAD_END, '');
      trimmed = kept.length < path[0].length;
      at += kept.length;
    }
    if (!trimmed) {
      URL_QUERY.lastIndex = at;
      const query = URL_QUERY.exec(text)?.[0] ?? '';
      let end = query.length;
      while (end > 1 && !URL_QUERY_END.test(query[end - 1]!)) end--;
      if (end > 1) at += end;
    }
    found.push([scheme.index, at]);
  }
  return found;
}

/**
 * `text` as Mastodon's StatusLengthValidator counts it (app/validators/status_length_validator.rb): each link replaced
 * by `reservedPerUrl` characters and each `@user@domain` by `@user` (the links and mentions found apart, the earlier of
 * two that overlap kept), then the content warning before it, in graphemes.
 */
export function countMastodon(text: string, spoilerText = '', reservedPerUrl: number = MASTODON_DEFAULT_LIMITS.charactersReservedPerUrl): number {
  // Text with no scheme and no mention is counted as it stands: no expression runs.
  if (!text.includes('://') && !text.includes('@')) return countGraphemes(spoilerText + text);
  const entities: { start: number; end: number; as: string }[] = linksIn(text).map(([start, end]) => ({ start, end, as: 'x'.repeat(reservedPerUrl) }));
  for (const mention of text.matchAll(MENTION)) {
    const end = mention.index + mention[0].length;
    if (!MENTION_END.test(text.slice(end, end + 3))) entities.push({ start: mention.index, end, as: `@${mention[1]}` });
  }
  entities.sort((a, b) => a.start - b.start);
  let countable = '';
  let at = 0;
  for (const entity of entities) {
    if (entity.start < at) continue;
    countable += text.slice(at, entity.start) + entity.as;
    at = entity.end;
  }
  return countGraphemes(spoilerText + countable + text.slice(at));
}

/**
 * `text` as a Mastodon-compatible server that is not Mastodon may count it (`counting: 'strict'`): Unicode code points
 * of the content warning and the text, links and mentions in full (GoToSocial's count; no server counts more).
 */
export function countCodePoints(text: string, spoilerText = ''): number {
  let count = 0;
  for (const part of [spoilerText, text]) {
    count += part.length;
    for (let index = 0; index < part.length; index++) {
      const code = part.charCodeAt(index);
      if (code >= 0xd800 && code <= 0xdbff && index + 1 < part.length && (part.charCodeAt(index + 1) & 0xfc00) === 0xdc00) {
        count--;
        index++;
      }
    }
  }
  return count;
}

/** The names of image types, as a list in words: "JPEG, PNG and GIF". */
const typeNames = (types: readonly string[]) => {
  const names = types.map((type) => type.replace(/^image\//, '').toUpperCase().replace('WEBP', 'WebP'));
  return names.length > 1 ? `${names.slice(0, -1).join(', ')} and ${names.at(-1)}` : (names[0] ?? 'no');
};

/**
 * The rules of a channel on a Mastodon instance with `limits`: its texts counted as the instance counts them (the
 * content warning with the post's text), the first comment and thread parts being statuses of their own under the same
 * limit; its images by its numbers, each refusal naming them.
 */
/** The visibilities a Mastodon status may have (its schedule's `visibility`; the account's default when absent). */
export const MASTODON_VISIBILITIES = ['public', 'unlisted', 'private', 'direct'] as const;
export type MastodonVisibility = (typeof MASTODON_VISIBILITIES)[number];

/** An image's focal point on Mastodon: x from left (-1) to right (1), y from bottom (-1) to top (1). */
const focalPoint = (point: unknown) =>
  point === null ||
  (typeof point === 'object' && [(point as { x?: unknown }).x, (point as { y?: unknown }).y].every((value) => typeof value === 'number' && value >= -1 && value <= 1));

/** Mastodon's settings (the adapter reads them: src/platforms/mastodon.ts): each of the type it must be, when given. */
function checkMastodonSettings({ visibility, spoilerText, sensitive, focalPoints }: Record<string, unknown>): string | null {
  if (visibility !== undefined && !MASTODON_VISIBILITIES.includes(visibility as MastodonVisibility)) {
    return `visibility is public, unlisted, private (followers only) or direct (mentioned people only), not ${JSON.stringify(visibility)}`;
  }
  if (spoilerText !== undefined && typeof spoilerText !== 'string') return 'spoilerText, the content warning, is text';
  if (sensitive !== undefined && typeof sensitive !== 'boolean') return 'sensitive is true or false';
  if (focalPoints !== undefined && !(Array.isArray(focalPoints) && focalPoints.every(focalPoint))) {
    return 'focalPoints is a list with each image\'s focal point in order, { "x": from -1 (left) to 1 (right), "y": from -1 (bottom) to 1 (top) }, or null for none';
  }
  return null;
}

export function mastodonRules(limits: InstanceLimits): ContentRules {
  const unit: TextUnit = limits.counting === 'strict' ? 'codePoints' : 'mastodon';
  const count = (text: string, context?: TextContext) =>
    limits.counting === 'strict' ? countCodePoints(text, context?.spoilerText) : countMastodon(text, context?.spoilerText, limits.charactersReservedPerUrl);
  const textLimits = [{ limit: limits.maxCharacters, unit, label: 'characters' }];
  return {
    label: 'Mastodon',
    threads: true,
    languages: true,
    connect: {
      method: 'oauth',
      explained: 'You name your server (mastodon.social, hachyderm.io…); it asks you to sign in there and to allow Postwise to post.',
      asksServer: true,
    },
    revokes: true,
    checkSettings: checkMastodonSettings,
    checkText(text, _as, context) {
      const length = count(text, context);
      return length > limits.maxCharacters ? { limit: limits.maxCharacters, length, unit } : null;
    },
    measureText: (text, context) => ({ [unit]: count(text, context) }),
    checkMedia(images, who) {
      if (images.length > limits.maxMediaAttachments) return tooManyImages(who, images.length, limits.maxMediaAttachments);
      for (const [index, image] of images.entries()) {
        if (!limits.imageTypes.includes(image.mimeType)) {
          const type = image.mimeType;
          return { at: `[${index}]`, sentence: `Image ${index + 1} is ${IMAGE_TYPE_NAMES[type] ?? type}; ${who} takes ${typeNames(limits.imageTypes)} images`, detail: type };
        }
        const alt = image.altText?.length ?? 0;
        if (alt > limits.descriptionLimit) return altTextTooLong(who, index, alt, limits.descriptionLimit, 'characters');
        if (image.variantsStatus === 'failed') {
          return { at: `[${index}]`, sentence: `Image ${index + 1} could not be prepared for ${who}: upload it again`, detail: VARIANTS_FAILED };
        }
        if (limits.imageSizeLimit !== null && image.publishedBytes !== null && image.publishedBytes > limits.imageSizeLimit) {
          return { at: `[${index}]`, sentence: `Image ${index + 1} is too big for ${who}: ${image.publishedBytes} of ${limits.imageSizeLimit} bytes` };
        }
        if (limits.imageMatrixLimit !== null && image.publishedPixels != null && image.publishedPixels > limits.imageMatrixLimit) {
          return { at: `[${index}]`, sentence: `Image ${index + 1} has too many pixels for ${who}: ${image.publishedPixels} of ${limits.imageMatrixLimit}` };
        }
      }
      return null;
    },
    limits: {
      text: textLimits,
      comment: textLimits,
      images: limits.maxMediaAttachments,
      imageTypes: limits.imageTypes,
      imageBytes: limits.imageSizeLimit,
      altText: { limit: limits.descriptionLimit, unit: 'characters' },
    },
  };
}

export const mastodonDefaultRules = mastodonRules(MASTODON_DEFAULT_LIMITS);

/**
 * The platforms' rules as constants: Mastodon's with its defaults (label, features, and the limits of a channel whose
 * instance is not known). A channel's own rules are `rulesFor(channel)`.
 */
// Threads (Meta's Threads API, developers.facebook.com/docs/threads/posts): 500 characters, an emoji counting as its
// UTF-8 bytes; at most 5 distinct links (THREADS_API__LINK_LIMIT_EXCEEDED); a carousel of 2 to 20 items; images JPEG or
// PNG of at most 8 MB, fetched by Meta from the store's public URL; alt text up to 1,000 characters.
export const THREADS_MAX_CHARACTERS = 500;
export const THREADS_MAX_LINKS = 5;
export const THREADS_MAX_IMAGES = 20;
export const THREADS_IMAGE_TYPES: readonly string[] = ['image/jpeg', 'image/png'];
export const THREADS_MAX_IMAGE_BYTES = 8 * 1024 * 1024;
export const THREADS_MAX_ALT_TEXT = 1000;
const EMOJI = /\p{Extended_Pictographic}|\p{Regional_Indicator}/u;

/** `text` as Threads counts it: what a reader sees as one character counts one, but an emoji the bytes of its UTF-8. */
export function countThreads(text: string): number {
  if (ASCII.test(text)) return countGraphemes(text);
  segmenter ??= new Intl.Segmenter('en', { granularity: 'grapheme' });
  let count = 0;
  for (const { segment } of segmenter.segment(text)) count += EMOJI.test(segment) ? utf8Length(segment) : 1;
  return count;
}

/** The distinct links of `text` as Threads counts them (every URL with a scheme, once each). */
const threadsLinks = (text: string) => new Set(linksIn(text).map(([start, end]) => text.slice(start, end))).size;

export const threadsRules: ContentRules = {
  label: 'Threads',
  threads: true,
  languages: false,
  connect: { method: 'oauth', explained: 'Threads asks you to sign in with your Threads account and to allow Postwise to post and reply.' },
  // Meta offers no revocation of a user token: disconnecting forgets it (the member removes the app in Threads' settings).
  revokes: false,
  checkText(text) {
    const length = countThreads(text);
    if (length > THREADS_MAX_CHARACTERS) return { limit: THREADS_MAX_CHARACTERS, length, unit: 'threads' };
    const links = text.includes('://') ? threadsLinks(text) : 0;
    return links > THREADS_MAX_LINKS ? { limit: THREADS_MAX_LINKS, length: links, unit: 'links' } : null;
  },
  measureText: (text) => ({ threads: countThreads(text) }),
  checkSettings: ({ replyControl }) =>
    replyControl === undefined || THREADS_REPLY_CONTROLS.includes(replyControl as (typeof THREADS_REPLY_CONTROLS)[number])
      ? null
      : `replyControl is ${THREADS_REPLY_CONTROLS.join(', ')}, not ${JSON.stringify(replyControl)}`,
  checkMedia(images, who) {
    if (images.length > THREADS_MAX_IMAGES) return tooManyImages(who, images.length, THREADS_MAX_IMAGES);
    for (const [index, image] of images.entries()) {
      if (!THREADS_IMAGE_TYPES.includes(image.mimeType)) {
        return { at: `[${index}]`, sentence: `Image ${index + 1} is ${IMAGE_TYPE_NAMES[image.mimeType] ?? image.mimeType}; ${who} takes JPEG and PNG images`, detail: image.mimeType };
      }
      const alt = image.altText?.length ?? 0;
      if (alt > THREADS_MAX_ALT_TEXT) return altTextTooLong(who, index, alt, THREADS_MAX_ALT_TEXT, 'characters');
    }
    return null;
  },
  limits: {
    text: [{ limit: THREADS_MAX_CHARACTERS, unit: 'threads', label: 'characters' }],
    comment: [{ limit: THREADS_MAX_CHARACTERS, unit: 'threads', label: 'characters' }],
    images: THREADS_MAX_IMAGES,
    imageTypes: THREADS_IMAGE_TYPES,
    imageBytes: THREADS_MAX_IMAGE_BYTES,
    altText: { limit: THREADS_MAX_ALT_TEXT, unit: 'characters' },
  },
};

/** Who may reply to a Threads post (its schedule's `replyControl`; everyone when absent). */
export const THREADS_REPLY_CONTROLS = ['everyone', 'accounts_you_follow', 'mentioned_only', 'parent_post_author_only', 'followers_only'] as const;

export const rules: Record<Platform, ContentRules> = { BLUESKY: blueskyRules, LINKEDIN: linkedinRules, MASTODON: mastodonDefaultRules, THREADS: threadsRules };

/**
 * A channel's limits: on Mastodon its instance's as stored (`mastodon_instances.limits`), each one they lack Mastodon's
 * default, or the defaults when its instance is not known; null on other platforms, whose limits are constants.
 */
export function channelLimits(platform: Platform, stored: Partial<InstanceLimits> | null | undefined): InstanceLimits | null {
  if (platform !== 'MASTODON') return null;
  return stored ? { ...MASTODON_DEFAULT_LIMITS, ...stored } : MASTODON_DEFAULT_LIMITS;
}

/** The rules a channel's texts and media are checked by: its platform's, with its instance's limits on Mastodon. */
export function rulesFor(channel: { platform: Platform; limits?: InstanceLimits | null }): ContentRules {
  if (channel.platform !== 'MASTODON' || !channel.limits) return rules[channel.platform];
  return mastodonRules(channelLimits('MASTODON', channel.limits)!);
}

/**
 * Why a platform refuses something a request holds, made here once for the API and the dashboard: `field`, where it is
 * in the request (`rows[0].content`: for a program, and for the dashboard to put the sentence under that field);
 * `sentence`, what is wrong as people read it (the platform by its label, the channel by its name, the numbers); and
 * `detail`, what a program may need besides (the unit counted), which the API writes in brackets after the sentence.
 */
export interface Refusal {
  field: string;
  sentence: string;
  detail?: string;
}

/**
 * The API's message of a refusal, the field first and the detail last (operations/posts/refusals.ts):
 * `rows[0].content: Too long for Bluesky (Sky): 301 of 300 characters (graphemes)`.
 */
export function refusalMessage({ field, sentence, detail }: Refusal): string {
  const said = detail ? `${sentence} (${detail})` : sentence;
  return field ? `${field}: ${said}` : said;
}

/** The details for programs an API message may hold, each in brackets after its sentence. */
const escaped = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
const DETAILS = new RegExp(` \\((?:${[...Object.values(UNITS).map((unit) => unit.detail), VARIANTS_FAILED, ...Object.keys(IMAGE_TYPE_NAMES)].map(escaped).join('|')})\\)`, 'g');

/**
 * An API message as people read it: without the details for programs ("… 301 of 300 characters", not "… characters
 * (graphemes)"). The field path is the dashboard's to take off (src/dashboard/api.ts), as it places the sentence by it.
 */
export const withoutDetails = (message: string): string => message.replace(DETAILS, '');

/**
 * A channel as the refusals need it: its name, its platform, and on Mastodon its instance's limits (absent or null:
 * Mastodon's defaults).
 */
export interface RuledChannel {
  name: string;
  platform: Platform;
  limits?: InstanceLimits | null;
}

/** A channel as a refusal names it: its platform's label and its name, "Bluesky (Sky)". */
const named = (channel: RuledChannel) => `${rules[channel.platform].label} (${channel.name})`;

/**
 * Why a channel's platform refuses `text` (the API's CONTENT_TOO_LONG, the composer's own check): "Too long for
 * Bluesky (Sky): 301 of 300 characters", the unit (graphemes) as the detail; on Mastodon, the instance's number ("512
 * of 500", or "of 11000"), with `context`'s content warning counted.
 */
export function contentTooLong(field: string, channel: RuledChannel, text: string, as: 'post' | 'comment' = 'post', context?: TextContext): Refusal | undefined {
  const found = rulesFor(channel).checkText(text, as, context);
  if (!found) return undefined;
  const unit = UNITS[found.unit];
  if (found.unit === 'links') return { field, sentence: `Too many links for ${named(channel)}: ${found.length}, and it takes at most ${found.limit}`, detail: unit.detail };
  return { field, sentence: `Too long for ${named(channel)}: ${found.length} of ${found.limit} ${unit.words}`, detail: unit.detail };
}

/** Why a channel's platform refuses a post's images (MEDIA_RULE_VIOLATED): the field names the image when it is one. */
export function mediaRule(field: string, channel: RuledChannel, images: AttachedImage[]): Refusal | undefined {
  if (images.length === 0) return undefined;
  const broken = rulesFor(channel).checkMedia(images, named(channel));
  return broken ? { field: `${field}${broken.at}`, sentence: broken.sentence, ...(broken.detail && { detail: broken.detail }) } : undefined;
}

/** Why a channel's platform cannot publish a schedule with `settings` (VALIDATION_ERROR), or undefined. */
export function settingsRefused(field: string, channel: RuledChannel, settings: Record<string, unknown> | undefined): Refusal | undefined {
  const why = settings && rulesFor(channel).checkSettings?.(settings);
  return why ? { field, sentence: `On ${named(channel)}, ${why}` } : undefined;
}

/**
 * Why a channel's platform refuses thread parts (VALIDATION_ERROR: the contract has no closer code); `part`, a thread
 * part's `threadOrder` when one part is meant: "LinkedIn (In) has no threads: publish each part as a post of its own,
 * or leave In out".
 */
export function threadRefused(field: string, channel: RuledChannel, part?: number): Refusal | undefined {
  if (rulesFor(channel).threads) return undefined;
  const which = part ? `, so thread part ${part + 1} cannot be published` : '';
  return { field, sentence: `${named(channel)} has no threads${which}: publish each part as a post of its own, or leave ${channel.name} out` };
}

// Uploads (operations/uploads): the types and size POST /uploads/initiate takes.
export const UPLOAD_IMAGE_TYPES = ['image/jpeg', 'image/png', 'image/webp', 'image/gif'] as const;
/** 20 MiB: well above what any platform takes (the variants are made to fit), small enough to hash in memory. */
export const MAX_UPLOAD_BYTES = 20 * 1024 * 1024;
