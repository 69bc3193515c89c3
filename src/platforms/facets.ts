/**
 * Where a text's links, mentions and hashtags are, as each platform will publish them: pure, shared by the server's
 * adapters and the dashboard composer's preview (esbuild bundles it).
 *
 * Bluesky: the very function the server's publishing runs. `RichText.detectFacets` (src/platforms/bluesky.ts) calls
 * @atproto/api's `detectFacets` and then resolves each mention's handle to a DID; here the same `detectFacets` is
 * called on its own (its module needs only `tlds` and its regular expressions, not the rest of @atproto/api), so the
 * preview highlights exactly the ranges the published record's facets will cover. A mention whose handle does not
 * resolve is published as plain text (the server drops it), which the preview cannot know beforehand.
 *
 * LinkedIn: `#word` becomes a hashtag (the little text's hashtag template, `toLittleText` in linkedin.ts, built from
 * LINKEDIN_HASHTAG of ./rules.ts, as this is); LinkedIn links URLs itself when it shows the post.
 */
import { detectFacets } from '@atproto/api/dist/rich-text/detection.js';
import { LINKEDIN_HASHTAG } from './rules.js';

export type FacetKind = 'link' | 'mention' | 'tag';

/** A highlighted range of the text, in UTF-16 indices (JavaScript string positions). */
export interface TextFacet {
  start: number;
  end: number;
  kind: FacetKind;
  /** The link's URI, the mentioned handle, the tag without its `#`. */
  value: string;
}

/** Bluesky's facets of `text`, as ranges: @atproto/api's detection, given UTF-16 indices instead of UTF-8 ones. */
export function blueskyFacets(text: string): TextFacet[] {
  const shim = { utf16: text, utf16IndexToUtf8Index: (index: number) => index };
  const found = detectFacets(shim as unknown as Parameters<typeof detectFacets>[0]) ?? [];
  const facets: TextFacet[] = [];
  for (const facet of found) {
    const feature = facet.features[0] as { $type: string; did?: string; uri?: string; tag?: string } | undefined;
    if (!feature) continue;
    const { byteStart: start, byteEnd: end } = facet.index;
    if (feature.$type === 'app.bsky.richtext.facet#link') facets.push({ start, end, kind: 'link', value: feature.uri ?? '' });
    else if (feature.$type === 'app.bsky.richtext.facet#mention') facets.push({ start, end, kind: 'mention', value: feature.did ?? '' });
    else if (feature.$type === 'app.bsky.richtext.facet#tag') facets.push({ start, end, kind: 'tag', value: feature.tag ?? '' });
  }
  return sortedApart(facets);
}

const LINKEDIN_URL = /\bhttps?:\/\/[^\s<>"]+[^\s<>".,;:!?)\]]/gu;

/** LinkedIn's: its hashtags, and the URLs it shows as links. */
export function linkedinFacets(text: string): TextFacet[] {
  const facets: TextFacet[] = [];
  for (const match of text.matchAll(LINKEDIN_URL)) facets.push({ start: match.index, end: match.index + match[0].length, kind: 'link', value: match[0] });
  for (const match of text.matchAll(new RegExp(LINKEDIN_HASHTAG, 'gu'))) {
    facets.push({ start: match.index, end: match.index + match[0].length, kind: 'tag', value: match[1]! });
  }
  return sortedApart(facets);
}

/** In order, overlapping ranges dropped (the first found wins, as a published record keeps facets apart). */
function sortedApart(facets: TextFacet[]): TextFacet[] {
  const kept: TextFacet[] = [];
  for (const facet of [...facets].sort((a, b) => a.start - b.start)) {
    if (kept.some((other) => facet.start < other.end && other.start < facet.end)) continue;
    kept.push(facet);
  }
  return kept;
}

/** The text cut into plain runs and facets, for showing it. */
export function segments(text: string, facets: TextFacet[]): { text: string; facet?: TextFacet }[] {
  const parts: { text: string; facet?: TextFacet }[] = [];
  let at = 0;
  for (const facet of facets) {
    if (facet.start > at) parts.push({ text: text.slice(at, facet.start) });
    parts.push({ text: text.slice(facet.start, facet.end), facet });
    at = facet.end;
  }
  if (at < text.length) parts.push({ text: text.slice(at) });
  return parts;
}
