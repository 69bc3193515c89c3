import type { PlatformRules } from './index.js';

const MAX_CHARACTERS = 3000;

export const linkedin: PlatformRules = {
  label: 'LinkedIn',
  checkText(text) {
    // Counted in UTF-16 code units, the strictest reading of LinkedIn's "3000 characters" (an emoji counts 2),
    // so text accepted here is never refused by LinkedIn for its length.
    return text.length > MAX_CHARACTERS ? { limit: MAX_CHARACTERS, length: text.length, unit: 'characters' } : null;
  },
};
