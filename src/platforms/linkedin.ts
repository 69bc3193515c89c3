import type { PlatformRules } from './index.js';

const MAX_CHARACTERS = 3000;
// The Posts API's multi-image content takes 2 to 20 images; the Images API takes JPEG, PNG and GIF.
const MAX_IMAGES = 20;
const IMAGE_TYPES = ['image/jpeg', 'image/png', 'image/gif'];
const MAX_ALT_TEXT = 4086;

export const linkedin: PlatformRules = {
  label: 'LinkedIn',
  checkText(text) {
    // Counted in UTF-16 code units, the strictest reading of LinkedIn's "3000 characters" (an emoji counts 2),
    // so text accepted here is never refused by LinkedIn for its length.
    return text.length > MAX_CHARACTERS ? { limit: MAX_CHARACTERS, length: text.length, unit: 'characters' } : null;
  },
  checkMedia(images) {
    if (images.length > MAX_IMAGES) return `LinkedIn allows at most ${MAX_IMAGES} images per post; ${images.length} given`;
    const index = images.findIndex((image) => !IMAGE_TYPES.includes(image.mimeType));
    if (index >= 0) return `media[${index}] is ${images[index]!.mimeType}; LinkedIn takes JPEG, PNG and GIF images`;
    const long = images.findIndex((image) => (image.altText?.length ?? 0) > MAX_ALT_TEXT);
    if (long >= 0) return `media[${long}].altText has ${images[long]!.altText!.length} characters; LinkedIn allows at most ${MAX_ALT_TEXT}`;
    return null;
  },
};
