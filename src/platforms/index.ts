import { bluesky } from './bluesky.js';
import { linkedin } from './linkedin.js';
import type { Publisher } from './publishing.js';

export * from './publishing.js';

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

/**
 * One platform: its content rules, and once it can be published to, its publisher. Everything a platform
 * imposes is in its one file; a new platform is that file and a line in `platforms` below.
 */
export interface PlatformRules {
  /** How the platform is named to people. */
  label: string;
  /** The first rule `text` breaks as a post, or as a first comment (`comment`), or null when the platform accepts it. */
  checkText(text: string, as?: 'post' | 'comment'): TooLong | null;
  /** Whether posts can have replies published under them as a thread (`thread` parts); LinkedIn has no threads. */
  threads: boolean;
  /** The first rule the images of one post break, as a sentence naming the platform and the rule, or null. */
  checkMedia(images: AttachedImage[]): string | null;
  /** Absent while the platform cannot be connected yet. */
  publisher?: Publisher;
}

export const platforms: Record<Platform, PlatformRules> = { BLUESKY: bluesky, LINKEDIN: linkedin };
