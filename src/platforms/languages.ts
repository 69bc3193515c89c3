import { isValidLanguage } from '@atproto/syntax';
import tags from 'language-tags';
import { z } from 'zod';
import type { OutgoingPost } from './publishing.js';

/** The bound of app.bsky.feed.post's `langs`. */
const MAX_LANGUAGES = 3;

/**
 * Language tags as a post carries them: well-formed BCP-47 (the check Bluesky's PDS applies to `langs`) and made of
 * subtags of the IANA Language Subtag Registry (the registry as npm's language-subtag-registry ships it, read by
 * language-tags), so that `klingon` is refused where `tlh` is taken; at most 3, each once.
 */
export const languageTags = z
  .array(
    z
      .string()
      .refine(isValidLanguage, { message: 'must be a well-formed BCP-47 language tag, such as en, pt-BR or zh-Hant', abort: true })
      .refine((tag) => tags(tag).valid(), 'is not a registered language: use a tag such as en, pt-BR or zh-Hant'),
  )
  .max(MAX_LANGUAGES, `at most ${MAX_LANGUAGES} language tags (Bluesky's limit)`)
  .superRefine((tags, ctx) => {
    tags.forEach((tag, index) => {
      const first = tags.findIndex((other) => other.toLowerCase() === tag.toLowerCase());
      if (first < index) ctx.addIssue({ code: 'custom', path: [index], message: `${tag} repeats item ${first}: list each language once` });
    });
  });

/** A schedule's `settings.langs` checked where settings are written (the rest of the settings stay free-form). */
export function checkSettingsLangs(settings: Record<string, unknown>, ctx: z.RefinementCtx): void {
  if (settings.langs === undefined) return;
  const parsed = languageTags.safeParse(settings.langs);
  // Passed on as they are (their code too), so that the pipeline words them as it words any other.
  for (const issue of parsed.error?.issues ?? []) ctx.addIssue({ ...issue, path: ['langs', ...issue.path] });
}

/**
 * `settings.langs` as given, or undefined when the settings name none. An empty list is a choice (no tags, nothing
 * detected). Settings written before they were checked may hold other values: only well-formed tags are kept, as the
 * PDS would refuse the whole record for one that is not.
 */
function settingsLangs(settings: Record<string, unknown> | null | undefined): string[] | undefined {
  const langs = settings?.langs;
  if (!Array.isArray(langs)) return undefined;
  return langs.filter((lang): lang is string => typeof lang === 'string' && isValidLanguage(lang)).slice(0, MAX_LANGUAGES);
}

/**
 * The language tags of a post, the first of: its schedule's `settings.langs`; for a thread's reply, the thread's first
 * post's; the workspace's default languages; the language detected from the thread's text when the detection is
 * confident (detectLanguage). A first comment is given its post's settings and sources, so it carries the same tags.
 * Undefined when none: the post is left untagged.
 */
export async function postLanguages(post: Pick<OutgoingPost, 'text' | 'settings' | 'languageSources'>): Promise<string[] | undefined> {
  const sources = post.languageSources ?? { threadSettings: null, workspaceLanguages: [], threadText: post.text };
  const chosen =
    settingsLangs(post.settings) ?? settingsLangs(sources.threadSettings) ?? (sources.workspaceLanguages.length ? sources.workspaceLanguages : undefined);
  if (chosen) return chosen.length ? chosen : undefined;
  const detected = sources.detected !== undefined ? sources.detected : await detectLanguage(sources.threadText);
  return detected ? [detected] : undefined;
}

/*
 * Detection follows the rule of Bluesky's own app, whose composer suggests a post's language with `lande` (its web
 * build; SuggestedLanguage.tsx in bluesky-social/social-app): a text under 40 characters is not read at all, and a
 * language is taken only when it scores 0.97 or more and no other language scores 0.0002 or more. Links and mentions
 * are left out first: they are no language's words, and a long link alone would pass the length bar.
 */
const MIN_DETECTED_LENGTH = 40;
const MIN_CONFIDENCE = 0.97;
const NOISE_FLOOR = 0.0002;
const NOT_WORDS = /\bhttps?:\/\/\S+|(?<![\w@])@[\w.-]+/gu;

/** lande's ISO 639-3 codes as the shortest BCP-47 tag; CLDR would give Tagalog as `fil`, Bluesky's list has `tl`. */
const tagOf = (code: string) => (code === 'tgl' ? 'tl' : (Intl.getCanonicalLocales(code)[0] ?? code));

/** lande weighs 0.8 MB: loaded on first use, so the processes that never detect (the admin command) do not. */
let lande: Promise<typeof import('lande').default> | undefined;

/** Results by text: a thread's parts, published one after the other, read the same thread text. */
const detected = new Map<string, string | undefined>();
const MAX_REMEMBERED = 200;

/** The BCP-47 tag of the language `text` is written in, when detection is confident (see the rule above); else undefined. */
export async function detectLanguage(text: string): Promise<string | undefined> {
  const words = text.replace(NOT_WORDS, ' ').replace(/\s+/gu, ' ').trim();
  if (words.length < MIN_DETECTED_LENGTH) return undefined;
  if (detected.has(words)) return detected.get(words);
  lande ??= import('lande').then((module) => module.default);
  const candidates = (await lande)(words).filter(([, score]) => score >= NOISE_FLOOR);
  const [only] = candidates;
  const tag = candidates.length === 1 && only![1] >= MIN_CONFIDENCE ? tagOf(only![0]) : undefined;
  if (detected.size >= MAX_REMEMBERED) detected.delete(detected.keys().next().value!);
  detected.set(words, tag);
  return tag;
}
