import { ImagePlay } from 'lucide';
import { useEffect, useId, useReducer, useRef, useState } from 'preact/hooks';
import { api, call, inWords } from '../api.js';
import { Dialog } from '../components/dialog.js';
import { Icon } from '../components/icon.js';
import {
  GIF_PAGE_SIZE,
  GIF_SEARCH_DELAY_MS,
  gifSearch,
  gifSearchSummary,
  gridMove,
  hasMore,
  MAX_GIF_QUERY,
  NO_GIF_SEARCH,
  searchToSend,
  type GifResult,
  type GifSearchState,
} from './gif-search.js';

/**
 * The composer's GIF picker (docs/media.md#gifs-from-a-provider): an "Add a GIF" button beside "Add images", shown only
 * when the server offers GIF search, opening a dialog that searches GIPHY through GET /media/search as one types (or at
 * Enter), shows the previews as a grid of buttons the arrow keys move through, and pages with "More GIFs". The GIF
 * picked is handed to `onPick` (compose/media.tsx copies it into the store). Its logic is compose/gif-search.ts.
 */

/** The button and its dialog; the search is kept while the page is, so that the dialog opens again where it was. */
export function GifPicker({ onPick }: { onPick: (gif: GifResult) => void }) {
  const [open, setOpen] = useState(false);
  const [search, send] = useReducer(gifSearch, NO_GIF_SEARCH);
  const requests = useRef(0);
  const typing = useRef<ReturnType<typeof setTimeout> | undefined>(undefined);

  const run = async (query: string, offset: number, more: boolean) => {
    const request = ++requests.current;
    send({ type: 'sent', request, query, more });
    const answer = await call(api.GET('/media/search', { params: { query: { query, limit: GIF_PAGE_SIZE, offset } } }));
    send(answer.ok ? { type: 'answered', request, page: answer.data } : { type: 'failed', request, error: answer.error });
  };
  const searchNow = (again: boolean) => {
    clearTimeout(typing.current);
    const query = searchToSend(search, { again });
    if (query) void run(query, 0, false);
  };

  // Typing searches once it pauses: every search is a call to GIPHY, whose key allows so many an hour.
  useEffect(() => {
    const query = searchToSend(search);
    if (!query) return;
    typing.current = setTimeout(() => void run(query, 0, false), GIF_SEARCH_DELAY_MS);
    return () => clearTimeout(typing.current);
  }, [search.typed]);

  return (
    <>
      <button type="button" class="file-button" aria-haspopup="dialog" onClick={() => setOpen(true)}>
        <Icon icon={ImagePlay} />
        Add a GIF
      </button>
      <Dialog open={open} title="Add a GIF" onClose={() => setOpen(false)} class="gif-dialog">
        <GifSearchBody
          search={search}
          onType={(typed) => send({ type: 'typed', typed })}
          onSearch={() => searchNow(true)}
          onMore={() => search.nextOffset !== null && void run(search.asked, search.nextOffset, true)}
          onPick={(gif) => {
            setOpen(false);
            onPick(gif);
          }}
          onClose={() => setOpen(false)}
        />
      </Dialog>
    </>
  );
}

interface BodyProps {
  search: GifSearchState;
  onType: (typed: string) => void;
  onSearch: () => void;
  onMore: () => void;
  onPick: (gif: GifResult) => void;
  onClose: () => void;
}

/** The dialog's content (there only while it is open): the field, what was found in words, the grid, the credit. */
function GifSearchBody({ search, onType, onSearch, onMore, onPick, onClose }: BodyProps) {
  const id = useId();
  const grid = useRef<HTMLUListElement>(null);
  // The one result Tab reaches (a roving tabindex): the arrow keys move it, and the focus with it.
  const [active, setActive] = useState(0);
  const field = useRef<HTMLInputElement>(null);
  const shownBefore = useRef(search.items.length);
  /** "More GIFs" was pressed: the focus goes to the first GIF it adds (the button may be gone: the last page). */
  const moreAsked = useRef(false);
  const { items, status, error } = search;

  useEffect(() => {
    const before = shownBefore.current;
    shownBefore.current = items.length;
    // A new search starts at its first GIF.
    if (items.length === 0 || before === 0) setActive(0);
    if (moreAsked.current && status !== 'more') {
      moreAsked.current = false;
      if (items.length > before) focusAt(before);
    }
  }, [items, status]);

  const buttons = () => [...(grid.current?.querySelectorAll<HTMLButtonElement>('.gif-result') ?? [])];
  const focusAt = (index: number) => {
    setActive(index);
    buttons()[index]?.focus();
  };
  // Columns as the grid lays them out now (the dialog's width decides): the GIFs on the first row.
  const columns = () => {
    const tops = buttons().map((button) => button.offsetTop);
    return tops.filter((top) => top === tops[0]).length;
  };

  return (
    <div class="gif-picker">
      <div class="field gif-search">
        <label for={`${id}-query`}>Search GIPHY</label>
        <p class="hint" id={`${id}-hint`}>
          Results show as you type (at most {MAX_GIF_QUERY} characters), or press Enter. In the results, the arrow keys move from GIF to GIF; Enter picks
          one.
        </p>
        <div class="gif-search-row">
          <input
            ref={field}
            id={`${id}-query`}
            type="search"
            data-autofocus
            value={search.typed}
            maxLength={MAX_GIF_QUERY}
            autoComplete="off"
            aria-describedby={`${id}-hint`}
            onInput={(event) => onType(event.currentTarget.value)}
            onKeyDown={(event) => {
              // Enter searches at once, and never submits the post's form around the dialog.
              if (event.key !== 'Enter') return;
              event.preventDefault();
              onSearch();
            }}
          />
          <button type="button" onClick={onSearch}>
            Search
          </button>
        </div>
      </div>

      <div role="status" class="gif-status">
        <p class="hint">{gifSearchSummary(search)}</p>
        {error && <p class="error">{inWords(error.message)}</p>}
      </div>
      {status === 'failed' && items.length === 0 && (
        <button
          type="button"
          onClick={() => {
            onSearch();
            field.current?.focus();
          }}
        >
          Try again
        </button>
      )}

      {items.length > 0 && (
        <div class="gif-results">
          <ul class="gif-grid" ref={grid} aria-label={`GIFs for “${search.asked}”`}>
            {items.map((gif, index) => (
              <li key={gif.providerId}>
                <button
                  type="button"
                  class="gif-result"
                  tabIndex={index === Math.min(active, items.length - 1) ? 0 : -1}
                  onFocus={() => setActive(index)}
                  onClick={() => onPick(gif)}
                  onKeyDown={(event) => {
                    const to = gridMove(index, event.key, items.length, columns());
                    if (to === undefined) return;
                    event.preventDefault();
                    focusAt(to);
                  }}
                >
                  <img src={gif.previewUrl} alt={gif.title} width={gif.previewWidth} height={gif.previewHeight} loading="lazy" />
                </button>
              </li>
            ))}
          </ul>
          {(hasMore(search) || status === 'more') && (
            // Not disabled while it loads, so that the focus stays on it until the GIFs it adds take it.
            <button
              type="button"
              class="gif-more"
              aria-disabled={status === 'more' ? 'true' : undefined}
              aria-busy={status === 'more' ? 'true' : undefined}
              onClick={() => {
                if (status === 'more') return;
                moreAsked.current = true;
                onMore();
              }}
            >
              {status === 'more' ? 'Loading more…' : 'More GIFs'}
            </button>
          )}
        </div>
      )}

      <div class="actions gif-actions">
        <p class="gif-credit">Powered by GIPHY</p>
        <button type="button" onClick={onClose}>
          Close
        </button>
      </div>
    </div>
  );
}
