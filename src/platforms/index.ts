import { bluesky } from './bluesky.js';
import { linkedin } from './linkedin.js';
import type { Publisher } from './publishing.js';

export * from './publishing.js';

export { PLATFORMS, type AttachedImage, type Platform, type TooLong } from './rules.js';
import type { ContentRules, Platform } from './rules.js';

/**
 * One platform: its content rules (pure, in ./rules.ts, which the dashboard's composer imports too), and once it can be
 * published to, its publisher (its file). A new platform is its rules, its file and a line in `platforms` below.
 */
export interface PlatformRules extends ContentRules {
  /** Absent while the platform cannot be connected yet. */
  publisher?: Publisher;
}

export const platforms: Record<Platform, PlatformRules> = { BLUESKY: bluesky, LINKEDIN: linkedin };
