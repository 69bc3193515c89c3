import { describe, expect, it } from 'vitest';
import {
  contentTooLong,
  countCodePoints,
  countMastodon,
  countedWith,
  mastodonRules,
  MASTODON_DEFAULT_LIMITS,
  mediaRule,
  refusalMessage,
  rules,
  rulesFor,
  threadRefused,
  withoutDetails,
  type AttachedImage,
  type InstanceLimits,
} from '../src/platforms/rules.js';

/**
 * Mastodon's rules, pure (src/platforms/rules.ts): the length counter that follows Mastodon's StatusLengthValidator
 * (graphemes; a link counts the instance's reserved length; `@user@domain` counts as `@user`; the content warning
 * counts too), the strict count for servers that are not Mastodon, and the rules made from an instance's limits, whose
 * refusals name the instance's numbers.
 */

/** An instance with other limits, as some servers have. */
const big: InstanceLimits = { ...MASTODON_DEFAULT_LIMITS, maxCharacters: 11_000, maxMediaAttachments: 6, descriptionLimit: 3000 };
const image = (change: Partial<AttachedImage> = {}): AttachedImage => ({ mimeType: 'image/jpeg', altText: null, variantsStatus: 'ready', publishedBytes: 200_000, ...change });

describe('the Mastodon counter', () => {
  it('counts every link with a scheme as the instance reserves for it, whatever its length', () => {
    // 11 characters: as short as a link gets (a one-letter name under a two-letter top-level domain).
    const short = 'http://x.io';
    const long = `https://example.com/${'a'.repeat(60)}`;
    expect([short.length, long.length]).toEqual([11, 80]);
    expect(countMastodon(short)).toBe(23);
    expect(countMastodon(long)).toBe(23);
    expect(countMastodon(`see ${long} and ${short}.`)).toBe(4 + 23 + 5 + 23 + 1);
    // The instance's own number; and a link without a scheme is text, counted in full.
    expect(countMastodon(long, '', 25)).toBe(25);
    expect(countMastodon('example.com/page')).toBe(16);
  });

  it('ends a link where Mastodon does: not on punctuation after it, nor inside a word', () => {
    expect(countMastodon('(https://example.com/path).')).toBe(1 + 23 + 2);
    expect(countMastodon('https://example.com/a?q=1&x=2, then')).toBe(23 + 6);
    expect(countMastodon('"https://example.com/wiki/Foo_(bar)"')).toBe(1 + 23 + 1);
    expect(countMastodon('https://example.com/a!?')).toBe(23 + 2);
    expect(countMastodon('https://example.com:8080/x')).toBe(23);
    // Glued to a word, or with a host that has no top-level domain: not a link.
    expect(countMastodon('xhttps://example.com')).toBe(20);
    expect(countMastodon('https://localhost/abc')).toBe(21);
  });

  it('counts a mention of another server without its domain', () => {
    expect(countMastodon('@a@b.example')).toBe(countMastodon('@a'));
    expect(countMastodon('@a@b.example')).toBe(2);
    expect(countMastodon('hi @alice@hachyderm.io and @bob')).toBe('hi @alice and @bob'.length);
    expect(countMastodon('Üx @Ann_1@mastodon.social!')).toBe('Üx @Ann_1!'.length);
    // An email address is not a mention; nor is a mention inside a link.
    expect(countMastodon('mail ann@b.example')).toBe(18);
    expect(countMastodon('https://mastodon.social/@ann@b.example')).toBe(23);
  });

  it('counts the content warning with the text', () => {
    expect(countMastodon('hello', 'CW: spoilers')).toBe(5 + 12);
    // A link in the content warning is not shortened: Mastodon counts the warning as written.
    expect(countMastodon('x', 'https://example.com/long/path')).toBe(1 + 29);
    const rule = mastodonRules(MASTODON_DEFAULT_LIMITS);
    expect(rule.checkText('a'.repeat(490))).toBeNull();
    expect(rule.checkText('a'.repeat(490), 'post', { spoilerText: 'a long warning' })).toEqual({ limit: 500, length: 504, unit: 'mastodon' });
    expect(countedWith({ spoilerText: 'cw', visibility: 'public' })).toEqual({ spoilerText: 'cw' });
    expect([countedWith(undefined), countedWith({ spoilerText: 5 }), countedWith({ spoilerText: '' })]).toEqual([{}, {}, {}]);
  });

  it('counts what a reader sees as one character: an emoji ZWJ sequence, a flag, an accent each count 1', () => {
    expect(countMastodon('👩‍👩‍👧')).toBe(1);
    expect(countMastodon('👍🏽🇫🇷é')).toBe(3);
    expect(countMastodon('👩‍👩‍👧'.repeat(500))).toBe(500);
    expect(mastodonRules(MASTODON_DEFAULT_LIMITS).checkText('👩‍👩‍👧'.repeat(501))).toEqual({ limit: 500, length: 501, unit: 'mastodon' });
  });

  it('counts strictly for a server that is not Mastodon: code points of the text and the warning, links and mentions in full', () => {
    const strict = mastodonRules({ ...MASTODON_DEFAULT_LIMITS, counting: 'strict' });
    const link = `https://example.com/${'a'.repeat(60)}`;
    expect(countCodePoints(link)).toBe(80);
    expect(countCodePoints('👩‍👩‍👧')).toBe(5);
    expect(countCodePoints('@a@b.example', 'cw')).toBe(14);
    expect(strict.measureText(link, { spoilerText: 'cw' })).toEqual({ codePoints: 82 });
    expect(strict.checkText(`${'a'.repeat(439)} ${link}`)).toEqual({ limit: 500, length: 520, unit: 'codePoints' });
    expect(mastodonRules(MASTODON_DEFAULT_LIMITS).checkText(`${'a'.repeat(439)} ${link}`)).toBeNull();
  });

  it('counts plain text as it stands, and text that only looks like a mention in full', () => {
    const text = 'plain words and nothing else '.repeat(300);
    expect(countMastodon(text, '')).toBe(text.length);
    expect(countMastodon('@a@b.example@c')).toBe(14);
    expect(countMastodon('@a@b.example://')).toBe(15);
  });
});

describe('mastodonRules and rulesFor', () => {
  it('says the platform: threads, languages, connected by OAuth on the person\'s own server, tokens revoked', () => {
    const rule = mastodonRules(MASTODON_DEFAULT_LIMITS);
    expect(rule).toMatchObject({ label: 'Mastodon', threads: true, languages: true, revokes: true });
    expect(rule.connect).toEqual({
      method: 'oauth',
      explained: 'You name your server (mastodon.social, hachyderm.io…); it asks you to sign in there and to allow Postwise to post.',
      asksServer: true,
    });
    expect(rules.MASTODON.limits).toEqual({
      text: [{ limit: 500, unit: 'mastodon', label: 'characters' }],
      comment: [{ limit: 500, unit: 'mastodon', label: 'characters' }],
      images: 4,
      imageTypes: ['image/jpeg', 'image/png', 'image/webp', 'image/gif'],
      imageBytes: 16 * 1024 * 1024,
      altText: { limit: 1500, unit: 'characters' },
    });
    expect(MASTODON_DEFAULT_LIMITS).toEqual({
      maxCharacters: 500,
      charactersReservedPerUrl: 23,
      maxMediaAttachments: 4,
      imageTypes: ['image/jpeg', 'image/png', 'image/webp', 'image/gif'],
      imageSizeLimit: 16_777_216,
      imageMatrixLimit: 33_177_600,
      descriptionLimit: 1500,
      counting: 'mastodon',
    });
  });

  it('gives a channel its instance\'s rules, the defaults when none are known, and the constants elsewhere', () => {
    expect(rulesFor({ platform: 'MASTODON' }).limits.text[0]!.limit).toBe(500);
    expect(rulesFor({ platform: 'MASTODON', limits: null }).limits.text[0]!.limit).toBe(500);
    expect(rulesFor({ platform: 'MASTODON', limits: big }).limits.text[0]!.limit).toBe(11_000);
    // Limits stored before a field existed take Mastodon's default for it.
    const partial = { maxCharacters: 1000 } as InstanceLimits;
    expect(rulesFor({ platform: 'MASTODON', limits: partial }).limits).toMatchObject({ text: [{ limit: 1000 }], images: 4, altText: { limit: 1500 } });
    expect(rulesFor({ platform: 'BLUESKY', limits: big })).toBe(rules.BLUESKY);
    expect(rulesFor({ platform: 'LINKEDIN' })).toBe(rules.LINKEDIN);
  });

  it('refuses a text past the instance\'s number, naming it', () => {
    const toot = { name: 'Toot', platform: 'MASTODON' as const };
    const refusal = contentTooLong('rows[0].content', toot, 'a'.repeat(512))!;
    expect(refusal).toEqual({ field: 'rows[0].content', sentence: 'Too long for Mastodon (Toot): 512 of 500 characters', detail: 'as Mastodon counts them' });
    expect(refusalMessage(refusal)).toBe('rows[0].content: Too long for Mastodon (Toot): 512 of 500 characters (as Mastodon counts them)');
    expect(withoutDetails(refusalMessage(refusal))).toBe('rows[0].content: Too long for Mastodon (Toot): 512 of 500 characters');
    expect(contentTooLong('rows[0].content', { ...toot, limits: big }, 'a'.repeat(512))).toBeUndefined();
    expect(contentTooLong('rows[0].content', { ...toot, limits: big }, 'a'.repeat(11_001))!.sentence).toBe('Too long for Mastodon (Toot): 11001 of 11000 characters');
    // The first comment is a status of its own, under the same limit; the warning counts where it is given.
    expect(contentTooLong('rows[0].firstComment', toot, 'a'.repeat(501), 'comment')!.sentence).toBe('Too long for Mastodon (Toot): 501 of 500 characters');
    expect(contentTooLong('rows[0].content', toot, 'a'.repeat(495), 'post', { spoilerText: 'spoilers' })!.sentence).toBe('Too long for Mastodon (Toot): 503 of 500 characters');
    const strict = contentTooLong('rows[0].content', { ...toot, limits: { ...MASTODON_DEFAULT_LIMITS, counting: 'strict' } }, 'a'.repeat(501))!;
    expect(refusalMessage(strict)).toBe('rows[0].content: Too long for Mastodon (Toot): 501 of 500 characters (code points, links in full)');
    expect(withoutDetails(refusalMessage(strict))).toBe('rows[0].content: Too long for Mastodon (Toot): 501 of 500 characters');
    expect(threadRefused('rows[0].thread', toot)).toBeUndefined();
  });

  it('checks images by the instance\'s numbers, each refusal naming them', () => {
    const toot = { name: 'Toot', platform: 'MASTODON' as const };
    const six = { ...toot, limits: big };
    expect(mediaRule('rows[0].media', toot, Array.from({ length: 4 }, () => image()))).toBeUndefined();
    expect(mediaRule('rows[0].media', toot, Array.from({ length: 5 }, () => image()))).toEqual({
      field: 'rows[0].media',
      sentence: 'Too many images for Mastodon (Toot): 5, and it takes at most 4',
    });
    expect(mediaRule('rows[0].media', six, Array.from({ length: 6 }, () => image()))).toBeUndefined();
    expect(mediaRule('rows[0].media', six, Array.from({ length: 7 }, () => image()))!.sentence).toBe('Too many images for Mastodon (Toot): 7, and it takes at most 6');
    // Types, alt text, size and pixels, from the instance's numbers.
    const noWebp = { ...toot, limits: { ...MASTODON_DEFAULT_LIMITS, imageTypes: ['image/jpeg', 'image/png', 'image/gif'] } };
    expect(mediaRule('rows[0].media', noWebp, [image(), image({ mimeType: 'image/webp' })])).toEqual({
      field: 'rows[0].media[1]',
      sentence: 'Image 2 is a WebP image; Mastodon (Toot) takes JPEG, PNG and GIF images',
      detail: 'image/webp',
    });
    expect(mediaRule('rows[0].media', toot, [image({ altText: 'a'.repeat(1501) })])).toEqual({
      field: 'rows[0].media[0].altText',
      sentence: 'The alt text of image 1 is too long for Mastodon (Toot): 1501 of 1500 characters',
      detail: 'UTF-16 code units',
    });
    expect(mediaRule('rows[0].media', six, [image({ altText: 'a'.repeat(1501) })])).toBeUndefined();
    const small = { ...toot, limits: { ...MASTODON_DEFAULT_LIMITS, imageSizeLimit: 100_000, imageMatrixLimit: 1_000_000 } };
    expect(mediaRule('rows[0].media', small, [image()])!.sentence).toBe('Image 1 is too big for Mastodon (Toot): 200000 of 100000 bytes');
    expect(mediaRule('rows[0].media', small, [image({ publishedBytes: 50_000, publishedPixels: 2000 * 1000 })])!.sentence).toBe(
      'Image 1 has too many pixels for Mastodon (Toot): 2000000 of 1000000',
    );
    expect(mediaRule('rows[0].media', toot, [image({ variantsStatus: 'failed', publishedBytes: null })])).toEqual({
      field: 'rows[0].media[0]',
      sentence: 'Image 1 could not be prepared for Mastodon (Toot): upload it again',
      detail: 'its variants failed',
    });
  });
});
