import { PLATFORMS, rules, type ContentRules, type Platform } from '../platforms/rules.js';

/**
 * The platforms as the dashboard shows them: their names, limits and features all read from src/platforms/rules.ts,
 * the module the API's checks read. No page names a platform of its own, so a new platform is its rules, its adapter
 * and its line in src/platforms/index.ts; the dashboard draws it with nothing added (compose/preview.tsx, the one place
 * where platforms look different, gives it its own text highlighting if it has some).
 */
export { PLATFORMS, rules, type Platform };

/** A platform as people name it ("Bluesky"); one the rules do not know, as the API wrote it. */
export const platformLabel = (platform: string): string => rules[platform as Platform]?.label ?? platform;

/** A channel and its platform: "Sky (Bluesky)". */
export const channelLabel = (channel: { name: string; platform: string }) => `${channel.name} (${platformLabel(channel.platform)})`;

/** The names of the platforms whose rules say `has`, in the rules' order. */
export const platformsWhere = (has: (platform: ContentRules) => boolean): string[] =>
  PLATFORMS.filter((platform) => has(rules[platform])).map((platform) => rules[platform].label);

/** Names written as a list: "Bluesky", "Bluesky and LinkedIn", "A, B and C". */
export const listed = (names: string[]): string => (names.length > 1 ? `${names.slice(0, -1).join(', ')} and ${names.at(-1)}` : (names[0] ?? ''));
