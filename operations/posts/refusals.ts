import type { Sql } from '../../src/db/index.js';
import type { Platform } from '../../src/platforms/index.js';
import {
  contentTooLong as tooLong,
  mediaRule,
  refusalMessage,
  settingsRefused as badSettings,
  threadRefused as noThreads,
  type AttachedImage,
  type Refusal,
  type RuledChannel,
  type TextContext,
} from '../../src/platforms/rules.js';
import { spendQuota } from './quota.js';

/** "1 post", "2 posts" */
export function count(n: number, noun: string): string {
  return `${n} ${noun}${n === 1 ? '' : 's'}`;
}

/**
 * Why a channel's platform refuses `text` (CONTENT_TOO_LONG), its images (MEDIA_RULE_VIOLATED) or thread parts
 * (VALIDATION_ERROR: the contract has no closer code), or undefined: the field, then the refusal in words with the
 * channel, the platform and the numbers (`rows[0].content: Too long for Bluesky (Sky): 301 of 300 characters
 * (graphemes)`). Made in src/platforms/rules.ts, which the dashboard's composer shares, so that it says the same
 * before anything is sent, and a page shows the sentence under the field without the path. A channel on Mastodon
 * carries its instance's limits (read with it: `LEFT JOIN mastodon_instances mi ON mi.host = i.instance_host`,
 * `mi.limits`), and a text its content warning (`context`, from the schedule's settings: countedWith).
 */
const message = (refusal: Refusal | undefined) => refusal && refusalMessage(refusal);
export const contentTooLong = (field: string, channel: RuledChannel, text: string, as: 'post' | 'comment' = 'post', context?: TextContext) =>
  message(tooLong(field, channel, text, as, context));
export const mediaRuleViolated = (field: string, channel: RuledChannel, images: AttachedImage[]) => message(mediaRule(field, channel, images));
export const threadRefused = (field: string, channel: RuledChannel, part?: number) => message(noThreads(field, channel, part));
export const settingsRefused = (field: string, channel: RuledChannel, settings: Record<string, unknown> | undefined) => message(badSettings(field, channel, settings));

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
