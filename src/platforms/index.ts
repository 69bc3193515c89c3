import { bluesky } from './bluesky.js';
import { linkedin } from './linkedin.js';
import { mastodon } from './mastodon.js';
import { threads } from './threads.js';
import type { PlatformRules } from './publishing.js';

export * from './publishing.js';

export { PLATFORMS, type AttachedImage, type Platform, type TooLong } from './rules.js';
import type { Platform } from './rules.js';

/** Every platform by name: a new platform is its rules (./rules.ts), its file and a line here. */
export const platforms: Record<Platform, PlatformRules> = { BLUESKY: bluesky, LINKEDIN: linkedin, MASTODON: mastodon, THREADS: threads };
