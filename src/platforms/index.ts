import { bluesky } from './bluesky.js';
import { linkedin } from './linkedin.js';

/** The platforms a workspace can connect. */
export const PLATFORMS = ['BLUESKY', 'LINKEDIN'] as const;
export type Platform = (typeof PLATFORMS)[number];

/** Text that breaks a platform's rule: what the limit counts, the limit, and the length found in that unit. */
export interface TooLong {
  limit: number;
  length: number;
  unit: string;
}

/**
 * One platform: its content rules now; the publishing adapter (connect, publish, reconcile) joins it here, so
 * everything a platform imposes is in its one file.
 */
export interface PlatformRules {
  /** How the platform is named to people. */
  label: string;
  /** The first rule `text` breaks, or null when the platform accepts it. */
  checkText(text: string): TooLong | null;
}

export const platforms: Record<Platform, PlatformRules> = { BLUESKY: bluesky, LINKEDIN: linkedin };
