import type { PlatformRules } from './index.js';

const MAX_GRAPHEMES = 300;
// The AT Protocol lexicon of app.bsky.feed.post also caps the text at 3000 bytes of UTF-8.
const MAX_BYTES = 3000;

const graphemes = new Intl.Segmenter('en', { granularity: 'grapheme' });

/** Bluesky counts what a reader sees as one character: an emoji with its modifiers, a letter with its accents. */
export function countGraphemes(text: string): number {
  let count = 0;
  for (const _ of graphemes.segment(text)) count++;
  return count;
}

export const bluesky: PlatformRules = {
  label: 'Bluesky',
  checkText(text) {
    const length = countGraphemes(text);
    if (length > MAX_GRAPHEMES) return { limit: MAX_GRAPHEMES, length, unit: 'graphemes' };
    const bytes = Buffer.byteLength(text, 'utf8');
    if (bytes > MAX_BYTES) return { limit: MAX_BYTES, length: bytes, unit: 'bytes of UTF-8' };
    return null;
  },
};
