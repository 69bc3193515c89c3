import type { ApiError, Schema } from '../api.js';
import { formatNumber } from '../format.js';
import type { MediaItem } from './state.js';

/**
 * The composer's GIF picker apart from its view, pure (no DOM, no request): whether the server offers GIF search, the
 * search as typed and answered page by page (`gifSearch`, a reducer that drops answers to searches since replaced),
 * what the picker says in words, the arrow keys' moves through the grid of results, and a picked GIF as the composer's
 * media. The view is compose/gif-picker.tsx; tested in test/compose-state.test.ts.
 */

export type GifResult = Schema<'ProviderResult'>;
export type GifPage = Schema<'ProviderResults'>;

/** The most characters a search takes (GIPHY's, and searchMedia's `query`). */
export const MAX_GIF_QUERY = 50;
/** GIFs asked for at a time: searchMedia's default page. */
export const GIF_PAGE_SIZE = 24;
/** How long typing must pause before a search is sent (Enter sends it at once): every search is a call to GIPHY. */
export const GIF_SEARCH_DELAY_MS = 500;

export interface GifSearchState {
  /** The search field as typed. */
  typed: string;
  /** The search (trimmed) whose results are shown or awaited; '' before the first. */
  asked: string;
  items: GifResult[];
  total: number;
  nextOffset: number | null;
  /** `searching`: a first page awaited; `more`: the next page awaited, the others still shown. */
  status: 'idle' | 'searching' | 'more' | 'done' | 'failed';
  /** The server's refusal, in its words; with `more`'s failure the results already shown stay. */
  error?: ApiError;
  /** Which request's answer is awaited: an answer to another (a search since replaced) is dropped. */
  request: number;
}

export const NO_GIF_SEARCH: GifSearchState = Object.freeze({ typed: '', asked: '', items: [], total: 0, nextOffset: null, status: 'idle', request: 0 }) as GifSearchState;

export type GifSearchEvent =
  | { type: 'typed'; typed: string }
  /** A request sent: the first page of `query`, or (`more`) the next page of the one shown. */
  | { type: 'sent'; request: number; query: string; more: boolean }
  | { type: 'answered'; request: number; page: GifPage }
  | { type: 'failed'; request: number; error: ApiError };

export function gifSearch(state: GifSearchState, event: GifSearchEvent): GifSearchState {
  switch (event.type) {
    case 'typed':
      return { ...state, typed: event.typed };
    case 'sent': {
      const { error: _error, ...rest } = state;
      if (event.more) return { ...rest, status: 'more', request: event.request };
      return { ...rest, asked: event.query, items: [], total: 0, nextOffset: null, status: 'searching', request: event.request };
    }
    case 'answered': {
      if (event.request !== state.request) return state;
      const { items, total, nextOffset } = event.page;
      // A page may repeat a GIF of the one before (the provider's order can shift between two calls): shown once.
      const shown = state.status === 'more' ? [...state.items, ...items.filter((item) => !state.items.some((had) => had.providerId === item.providerId))] : items;
      return { ...state, items: shown, total, nextOffset, status: 'done' };
    }
    case 'failed':
      if (event.request !== state.request) return state;
      return { ...state, status: 'failed', error: event.error };
  }
}

/** The search to send for what is typed now, or undefined: nothing typed, or what is shown (or awaited) already. */
export function searchToSend(state: GifSearchState, { again = false }: { again?: boolean } = {}): string | undefined {
  const query = state.typed.trim().slice(0, MAX_GIF_QUERY);
  if (!query) return undefined;
  // Enter (or "Try again") asks again after a failure; typing alone never repeats a search.
  if (query === state.asked && !(again && state.status === 'failed' && state.items.length === 0)) return undefined;
  return query;
}

/** Whether "More GIFs" asks for the next page (or, after its failure, asks again). */
export const hasMore = (state: GifSearchState) => state.nextOffset !== null && state.items.length > 0 && state.status !== 'searching' && state.status !== 'more';

/** What the picker says of its results, for the eye and the live region alike. */
export function gifSearchSummary(state: GifSearchState): string {
  const what = `“${state.asked}”`;
  switch (state.status) {
    case 'idle':
      return 'Type what to look for: the GIFs GIPHY finds show here.';
    case 'searching':
      return `Searching GIPHY for ${what}…`;
    case 'more':
      return `Loading more GIFs for ${what}…`;
    case 'failed':
      return state.items.length ? `${shownOf(state)} More could not be loaded.` : `The search for ${what} failed.`;
    case 'done':
      return state.items.length ? shownOf(state) : `No GIFs found for ${what}. Try other words.`;
  }
}

const shownOf = ({ items, total, asked }: GifSearchState) =>
  items.length >= total ? `${formatNumber(items.length)} ${items.length === 1 ? 'GIF' : 'GIFs'} for “${asked}”.` : `${formatNumber(items.length)} of ${formatNumber(total)} GIFs for “${asked}”.`;

/**
 * Where the arrow keys (and Home, End) move in a grid of `count` results laid out in `columns`
 * columns, from `index`; undefined for another key. Left and Right go on across rows; Up and Down stay in the column,
 * and stop at the first or last row.
 */
export function gridMove(index: number, key: string, count: number, columns: number): number | undefined {
  const across = Math.max(1, columns);
  const last = count - 1;
  if (count <= 0) return undefined;
  switch (key) {
    case 'ArrowRight':
      return Math.min(index + 1, last);
    case 'ArrowLeft':
      return Math.max(index - 1, 0);
    case 'ArrowDown':
      return index + across <= last ? index + across : index;
    case 'ArrowUp':
      return index - across >= 0 ? index - across : index;
    case 'Home':
      return 0;
    case 'End':
      return last;
    default:
      return undefined;
  }
}

/**
 * A picked GIF as the composer's media, while it is copied into the store (POST /uploads/from-provider): its title the
 * default alt text (unless it has none: the provider's "GIF" says nothing of it), the provider's preview shown until
 * the copy's address is known.
 */
export function pickedGif(result: GifResult, key: string): MediaItem {
  const title = result.title.trim();
  const credited = result.attribution.name !== result.provider ? result.attribution.name : undefined;
  return {
    key,
    name: title || 'GIF',
    mimeType: 'image/gif',
    size: 0,
    src: result.previewUrl,
    step: 'importing',
    progress: 0,
    provider: result.provider,
    ...(credited && { credit: credited }),
    altText: /^gif$/i.test(title) ? '' : title,
  };
}

/** The change once the copy is made: the composer's media from now on, as an upload's is once completed. */
export const importedGif = (imported: Schema<'ProviderUpload'>): Partial<MediaItem> => ({
  step: 'done',
  progress: 1,
  mediaId: imported.mediaId,
  uploadId: imported.uploadId,
  src: imported.publicUrl,
});
