import type { Sql } from '../../src/db/index.js';
import { platforms, type AttachedImage, type Platform } from '../../src/platforms/index.js';
import { spendQuota } from './quota.js';

/** "1 post", "2 posts" */
export function count(n: number, noun: string): string {
  return `${n} ${noun}${n === 1 ? '' : 's'}`;
}

/** Why a channel's platform refuses `text` (CONTENT_TOO_LONG): the field, the channel, the length found and the limit. */
export function contentTooLong(field: string, channel: { name: string; platform: Platform }, text: string, as: 'post' | 'comment' = 'post'): string | undefined {
  const found = platforms[channel.platform].checkText(text, as);
  if (!found) return undefined;
  return `${field} for "${channel.name}" (${channel.platform}): ${found.length} ${found.unit}; ${platforms[channel.platform].label} allows at most ${found.limit}`;
}

/** Why a channel's platform refuses the images of a post (MEDIA_RULE_VIOLATED): the field, the channel, the platform's rule. */
export function mediaRuleViolated(field: string, channel: { name: string; platform: Platform }, images: AttachedImage[]): string | undefined {
  if (images.length === 0) return undefined;
  const broken = platforms[channel.platform].checkMedia(images);
  return broken ? `${field} for "${channel.name}" (${channel.platform}): ${broken}` : undefined;
}

/**
 * Why a channel's platform refuses thread parts (VALIDATION_ERROR: the contract has no closer code), or undefined: the
 * field, the channel and the rule, as contentTooLong names them.
 */
export function threadRefused(field: string, channel: { name: string; platform: Platform }): string | undefined {
  const { label, threads } = platforms[channel.platform];
  if (threads) return undefined;
  return `${field} for "${channel.name}" (${channel.platform}): ${label} has no threads; publish each part as a post of its own, or leave this channel out`;
}

/**
 * Spends the monthly quota for `posts` per platform, platforms in name order (the lock order every caller keeps,
 * after its channels' rows), or says why not (POST_QUOTA_EXCEEDED): the platform, the limit, the plan, the reset.
 */
export async function spendQuotas(tx: Sql, workspace: { id: string; plan: string }, posts: Partial<Record<Platform, number>>): Promise<string | undefined> {
  for (const platform of (Object.keys(posts) as Platform[]).sort()) {
    const needed = posts[platform]!;
    const spent = await spendQuota(tx, workspace, platform, needed);
    if (!spent.ok) {
      return (
        `The ${workspace.plan} plan allows ${count(spent.limit, `${platform} post`)} a month; ${spent.used} used this month, and ` +
        `this request needs ${needed}. The quota resets at ${spent.resetsAt.toISOString()}`
      );
    }
  }
  return undefined;
}
