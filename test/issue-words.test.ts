import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { errorFor, inWords } from '../src/dashboard/api.js';
import { issueInWords } from '../src/registry/issue-words.js';

/** What the pipeline says of the first issue of `value` against `schema` (src/registry/pipeline.ts puts the field first). */
const said = (schema: z.ZodType, value: unknown) => {
  const parsed = schema.safeParse(value);
  if (parsed.success) throw new Error('expected a refusal');
  return issueInWords(parsed.error.issues[0]!);
};

describe('zod’s own messages, in words', () => {
  it('says each rule as the rest of a sentence about its field', () => {
    expect(said(z.string().min(12), 'short')).toBe('must be at least 12 characters');
    expect(said(z.string().min(1), '')).toBe('must not be empty');
    expect(said(z.string().max(5), 'too long')).toBe('must be at most 5 characters');
    expect(said(z.email(), 'grace@example')).toBe('must be an email address');
    expect(said(z.url(), 'nope')).toBe('must be a web address (https://…)');
    expect(said(z.number().int().max(100), 500)).toBe('must be at most 100');
    expect(said(z.number().int(), 1.5)).toBe('must be a whole number');
    expect(said(z.number(), 'x')).toBe('must be a number, not text');
    expect(said(z.array(z.string()).min(1), [])).toBe('must have at least one item');
    expect(said(z.object({ a: z.string() }), {})).toBe('is required');
    expect(said(z.enum(['BLUESKY', 'LINKEDIN']), 'X')).toBe('must be one of "BLUESKY", "LINKEDIN"');
    // A schema's own message is kept as it was written.
    expect(said(z.string().refine(() => false, 'must be in the future'), 'x')).toBe('must be in the future');
  });

  it('reads, on a page, as a sentence under its field with no path, and enum values as people name them', () => {
    const error = { code: 'VALIDATION_ERROR', message: 'body.password: must be at least 12 characters; query.platform: must be one of "BLUESKY", "LINKEDIN"', status: 400 };
    expect(errorFor(error, 'password')).toBe('Must be at least 12 characters');
    expect(errorFor(error, 'platform')).toBe('Must be one of "Bluesky", "LinkedIn"');
    expect(inWords(error.message)).toBe('Password: must be at least 12 characters. Platform: must be one of "Bluesky", "LinkedIn".');
  });
});
