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

/** Text that breaks a platform's rule: what the limit counts, the limit, and the length found in that unit. */
export interface TooLong {
  limit: number;
  length: number;
  unit: string;
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
  /** The first rule the images of one post break, as a sentence naming the platform and the rule, or null. */
  checkMedia(images: AttachedImage[]): string | null;
  /** The limits as numbers, for counters and for saying the rules before anything is submitted. */
  limits: {
    /** The limits a text counts against (each in its unit); a counter shows the first one, nearest its limit. */
    text: { limit: number; unit: 'graphemes' | 'bytes' | 'characters'; label: string }[];
    comment: { limit: number; unit: 'graphemes' | 'bytes' | 'characters'; label: string }[];
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
    if (bytes > BLUESKY_MAX_BYTES) return { limit: BLUESKY_MAX_BYTES, length: bytes, unit: 'bytes of UTF-8' };
    return null;
  },
  checkMedia(images) {
    if (images.length > BLUESKY_MAX_IMAGES) return `Bluesky allows at most ${BLUESKY_MAX_IMAGES} images per post; ${images.length} given`;
    for (const [index, image] of images.entries()) {
      const alt = countGraphemes(image.altText ?? '');
      if (alt > BLUESKY_MAX_ALT_GRAPHEMES) return `media[${index}].altText has ${alt} graphemes; Bluesky allows at most ${BLUESKY_MAX_ALT_GRAPHEMES}`;
      if (image.variantsStatus === 'failed') return `media[${index}] has no publishable version for Bluesky (its variants failed); upload it again`;
      if (image.publishedBytes !== null && image.publishedBytes > BLUESKY_MAX_IMAGE_BYTES) {
        return `media[${index}] is ${image.publishedBytes} bytes; Bluesky allows at most ${BLUESKY_MAX_IMAGE_BYTES} per image`;
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
      return text.length > LINKEDIN_MAX_COMMENT_CHARACTERS ? { limit: LINKEDIN_MAX_COMMENT_CHARACTERS, length: text.length, unit: 'characters in a comment' } : null;
    }
    return text.length > LINKEDIN_MAX_CHARACTERS ? { limit: LINKEDIN_MAX_CHARACTERS, length: text.length, unit: 'characters' } : null;
  },
  checkMedia(images) {
    if (images.length > LINKEDIN_MAX_IMAGES) return `LinkedIn allows at most ${LINKEDIN_MAX_IMAGES} images per post; ${images.length} given`;
    const index = images.findIndex((image) => !LINKEDIN_IMAGE_TYPES.includes(image.mimeType));
    if (index >= 0) return `media[${index}] is ${images[index]!.mimeType}; LinkedIn takes JPEG, PNG and GIF images`;
    const long = images.findIndex((image) => (image.altText?.length ?? 0) > LINKEDIN_MAX_ALT_TEXT);
    if (long >= 0) return `media[${long}].altText has ${images[long]!.altText!.length} characters; LinkedIn allows at most ${LINKEDIN_MAX_ALT_TEXT}`;
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
 * Why a channel's platform refuses `text`, worded exactly as the API's CONTENT_TOO_LONG message (operations/posts/
 * refusals.ts uses this): `rows[0].content for "Sky" (BLUESKY): 301 graphemes; Bluesky allows at most 300`.
 */
export function contentTooLongMessage(field: string, channel: { name: string; platform: Platform }, text: string, as: 'post' | 'comment' = 'post'): string | undefined {
  const found = rules[channel.platform].checkText(text, as);
  if (!found) return undefined;
  return `${field} for "${channel.name}" (${channel.platform}): ${found.length} ${found.unit}; ${rules[channel.platform].label} allows at most ${found.limit}`;
}

/** Why a channel's platform refuses a post's images, worded as the API's MEDIA_RULE_VIOLATED message. */
export function mediaRuleMessage(field: string, channel: { name: string; platform: Platform }, images: AttachedImage[]): string | undefined {
  if (images.length === 0) return undefined;
  const broken = rules[channel.platform].checkMedia(images);
  return broken ? `${field} for "${channel.name}" (${channel.platform}): ${broken}` : undefined;
}

/** Why a channel's platform refuses thread parts, worded as the API's VALIDATION_ERROR message. */
export function threadRefusedMessage(field: string, channel: { name: string; platform: Platform }): string | undefined {
  const { label, threads } = rules[channel.platform];
  if (threads) return undefined;
  return `${field} for "${channel.name}" (${channel.platform}): ${label} has no threads; publish each part as a post of its own, or leave this channel out`;
}

// Uploads (operations/uploads): the types and size POST /uploads/initiate takes.
export const UPLOAD_IMAGE_TYPES = ['image/jpeg', 'image/png', 'image/webp', 'image/gif'] as const;
/** 20 MiB: well above what any platform takes (the variants are made to fit), small enough to hash in memory. */
export const MAX_UPLOAD_BYTES = 20 * 1024 * 1024;
