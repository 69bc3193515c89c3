/**
 * The platforms' rules for text and media, pure: no Node module, no I/O. The server's platform adapters
 * (src/platforms/bluesky.ts, linkedin.ts, joined in index.ts) and so the API's CONTENT_TOO_LONG and MEDIA_RULE_VIOLATED
 * answers come from here, and so do the dashboard composer's live counters (esbuild bundles this file into the
 * dashboard): one rule, counted the same way on both sides. See docs/limits.md#platform-rules. The dashboard reads
 * every platform's name, limits and features here too (src/dashboard/platforms.ts): none of its pages names one.
 */

/** The platforms a workspace can have channels on. */
export const PLATFORMS = ['BLUESKY', 'LINKEDIN'] as const;
export type Platform = (typeof PLATFORMS)[number];

/** What a platform counts a text in: what a reader sees as one character, bytes of UTF-8, or UTF-16 code units. */
export type TextUnit = 'graphemes' | 'bytes' | 'characters';

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
  /** The first rule `text` breaks as a post, or as a first comment (`comment`), or null when the platform accepts it. */
  checkText(text: string, as?: 'post' | 'comment'): TooLong | null;
  /** Whether posts can have replies published under them as a thread (`thread` parts); LinkedIn has no threads. */
  threads: boolean;
  /** Whether a post carries language tags: the workspace's default `languages`, or those detected (Bluesky's `langs`). */
  languages: boolean;
  /**
   * How an account is connected (src/channels/connect.ts): `app-password`, a handle and an app password given to this
   * service (its connect page, and the dashboard's own form); `oauth`, the platform's consent pages, which `explained`
   * tells a person about before they go there.
   */
  connect: { method: 'app-password' } | { method: 'oauth'; explained: string };
  /** Whether disconnecting a channel revokes its tokens at the platform (its adapter's `revoke`). */
  revokes: boolean;
  /** The first rule the images of one post break, for the channel people know as `who` ("Bluesky (Sky)"), or null. */
  checkMedia(images: AttachedImage[], who: string): MediaBreak | null;
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

export const rules: Record<Platform, ContentRules> = { BLUESKY: blueskyRules, LINKEDIN: linkedinRules };

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
const DETAILS = new RegExp(` \\((?:${[...Object.values(UNITS).map((unit) => unit.detail), VARIANTS_FAILED, ...Object.keys(IMAGE_TYPE_NAMES)].join('|')})\\)`, 'g');

/**
 * An API message as people read it: without the details for programs ("… 301 of 300 characters", not "… characters
 * (graphemes)"). The field path is the dashboard's to take off (src/dashboard/api.ts), as it places the sentence by it.
 */
export const withoutDetails = (message: string): string => message.replace(DETAILS, '');

/** A channel as a refusal names it: its platform's label and its name, "Bluesky (Sky)". */
const named = (channel: { name: string; platform: Platform }) => `${rules[channel.platform].label} (${channel.name})`;

/**
 * Why a channel's platform refuses `text` (the API's CONTENT_TOO_LONG, the composer's own check):
 * "Too long for Bluesky (Sky): 301 of 300 characters", the unit (graphemes) as the detail.
 */
export function contentTooLong(field: string, channel: { name: string; platform: Platform }, text: string, as: 'post' | 'comment' = 'post'): Refusal | undefined {
  const found = rules[channel.platform].checkText(text, as);
  if (!found) return undefined;
  const unit = UNITS[found.unit];
  return { field, sentence: `Too long for ${named(channel)}: ${found.length} of ${found.limit} ${unit.words}`, detail: unit.detail };
}

/** Why a channel's platform refuses a post's images (MEDIA_RULE_VIOLATED): the field names the image when it is one. */
export function mediaRule(field: string, channel: { name: string; platform: Platform }, images: AttachedImage[]): Refusal | undefined {
  if (images.length === 0) return undefined;
  const broken = rules[channel.platform].checkMedia(images, named(channel));
  return broken ? { field: `${field}${broken.at}`, sentence: broken.sentence, ...(broken.detail && { detail: broken.detail }) } : undefined;
}

/**
 * Why a channel's platform refuses thread parts (VALIDATION_ERROR: the contract has no closer code); `part`, a thread
 * part's `threadOrder` when one part is meant: "LinkedIn (In) has no threads: publish each part as a post of its own,
 * or leave In out".
 */
export function threadRefused(field: string, channel: { name: string; platform: Platform }, part?: number): Refusal | undefined {
  if (rules[channel.platform].threads) return undefined;
  const which = part ? `, so thread part ${part + 1} cannot be published` : '';
  return { field, sentence: `${named(channel)} has no threads${which}: publish each part as a post of its own, or leave ${channel.name} out` };
}

// Uploads (operations/uploads): the types and size POST /uploads/initiate takes.
export const UPLOAD_IMAGE_TYPES = ['image/jpeg', 'image/png', 'image/webp', 'image/gif'] as const;
/** 20 MiB: well above what any platform takes (the variants are made to fit), small enough to hash in memory. */
export const MAX_UPLOAD_BYTES = 20 * 1024 * 1024;
