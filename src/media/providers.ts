import type { Config } from '../process/config.js';
import { deadline } from '../process/deadline.js';

/**
 * GIF providers: where searchMedia looks, and where a picked GIF is fetched from into the store (then it is media like
 * any upload, so a post never depends on the provider's links). GIPHY now; the interface is what another (KLIPY) needs.
 */

export const MEDIA_PROVIDERS = ['GIPHY'] as const;
export type MediaProviderName = (typeof MEDIA_PROVIDERS)[number];

/** A GIF a provider offers: what a person sees to pick it, what is fetched when they do, and whom to credit. */
export interface ProviderItem {
  provider: MediaProviderName;
  providerId: string;
  title: string;
  /** The file fetched into the store when it is picked (the original, or a smaller rendition when that is too big). */
  url: string;
  width: number;
  height: number;
  /** Its bytes as the provider says, when it does. */
  size: number | null;
  /** A small rendition for a picker. */
  previewUrl: string;
  previewWidth: number;
  previewHeight: number;
  /** Its page on the provider's site. */
  pageUrl: string;
  /** Whom to credit: the uploader when the provider names one, else the provider ("Powered by GIPHY" is shown by pickers). */
  attribution: { name: string; url: string };
}

export interface MediaProvider {
  name: MediaProviderName;
  search(query: string, page: { limit: number; offset: number; rating?: string }, signal: AbortSignal): Promise<{ items: ProviderItem[]; total: number }>;
  /** One GIF by its id, or null when the provider has none. */
  get(id: string, signal: AbortSignal): Promise<ProviderItem | null>;
}

/** A provider that did not answer as it should: its words, and whether trying again later may help. */
export class ProviderError extends Error {
  constructor(
    message: string,
    readonly status: number | null,
    readonly retryable: boolean,
  ) {
    super(message);
    this.name = 'ProviderError';
  }
}

/** How long a provider may take to answer. */
const TIMEOUT_MS = 10_000;

/** The provider named, or why it cannot be used on this server. */
export function mediaProvider(config: Pick<Config, 'giphy'>, name: MediaProviderName = 'GIPHY', largest: number): MediaProvider | { unavailable: string } {
  if (name === 'GIPHY') {
    if (!config.giphy.apiKey) return { unavailable: 'GIF search is not configured on this server: set GIPHY_API_KEY (a GIPHY API key) to search GIPHY' };
    return giphy(config.giphy.apiUrl, config.giphy.apiKey, largest);
  }
  return { unavailable: `Unknown provider ${name as string}` };
}

/** A rendition in GIPHY's GIF Object: its numbers are strings. */
interface Rendition {
  url: string;
  width: string;
  height: string;
  size?: string;
}

interface GiphyGif {
  id: string;
  title?: string;
  url: string;
  username?: string;
  user?: { display_name?: string; username?: string; profile_url?: string };
  images: { original: Rendition; downsized?: Rendition; fixed_width?: Rendition; fixed_width_small?: Rendition };
}

/** GIPHY's API (developers.giphy.com/docs/api): search and get by id, with the server's API key. */
function giphy(apiUrl: string, apiKey: string, largest: number): MediaProvider {
  const ask = async <T>(path: string, params: Record<string, string>, signal: AbortSignal): Promise<T> => {
    const url = new URL(`${apiUrl}${path}`);
    url.search = new URLSearchParams({ api_key: apiKey, ...params }).toString();
    let response: Response;
    try {
      response = await fetch(url, { signal: AbortSignal.any([signal, deadline(TIMEOUT_MS)]) });
    } catch (error) {
      throw new ProviderError(`GIPHY did not answer (${error instanceof Error ? error.message : String(error)})`, null, true);
    }
    const body = (await response.json().catch(() => null)) as { meta?: { msg?: string }; message?: string } | null;
    if (response.ok && body) return body as T;
    const words = body?.meta?.msg ?? body?.message ?? `status ${response.status}`;
    if (response.status === 404) throw new ProviderError(`GIPHY has no such GIF (${words})`, 404, false);
    if (response.status === 414) throw new ProviderError('GIPHY takes a search of at most 50 characters', 414, false);
    if (response.status === 429) throw new ProviderError('GIPHY asks to slow down (this server\'s key is rate limited): try again later', 429, true);
    if (response.status === 401 || response.status === 403) throw new ProviderError(`GIPHY refused this server's key (GIPHY_API_KEY): ${words}`, response.status, false);
    throw new ProviderError(`GIPHY answered ${response.status}: ${words}`, response.status, response.status >= 500);
  };

  const item = (gif: GiphyGif): ProviderItem => {
    const size = (rendition?: Rendition) => (rendition?.size ? Number(rendition.size) : null);
    // The original unless it is larger than an upload may be; then GIPHY's downsized rendition (at most 2 MB).
    const file = (size(gif.images.original) ?? 0) > largest && gif.images.downsized ? gif.images.downsized : gif.images.original;
    const preview = gif.images.fixed_width_small ?? gif.images.fixed_width ?? file;
    const credited = gif.user?.display_name || gif.user?.username || gif.username;
    return {
      provider: 'GIPHY',
      providerId: gif.id,
      title: gif.title || 'GIF',
      url: file.url,
      width: Number(file.width),
      height: Number(file.height),
      size: size(file),
      previewUrl: preview.url,
      previewWidth: Number(preview.width),
      previewHeight: Number(preview.height),
      pageUrl: gif.url,
      attribution: credited ? { name: credited, url: gif.user?.profile_url || gif.url } : { name: 'GIPHY', url: gif.url },
    };
  };

  return {
    name: 'GIPHY',
    async search(query, { limit, offset, rating }, signal) {
      const answer = await ask<{ data?: GiphyGif[]; pagination?: { total_count?: number } }>(
        '/v1/gifs/search',
        { q: query, limit: String(limit), offset: String(offset), ...(rating && { rating }) },
        signal,
      );
      // GIPHY's "synthetic response" when it is overloaded: a 200 with nothing in it, read as no results.
      const found = Array.isArray(answer.data) ? answer.data.filter((gif) => gif?.images?.original) : [];
      return { items: found.map(item), total: answer.pagination?.total_count ?? found.length };
    },
    async get(id, signal) {
      try {
        const { data } = await ask<{ data?: GiphyGif | [] }>(`/v1/gifs/${encodeURIComponent(id)}`, {}, signal);
        if (!data || Array.isArray(data) || !data.images?.original) throw new ProviderError('GIPHY answered without the GIF (try again shortly)', 200, true);
        return item(data);
      } catch (error) {
        if (error instanceof ProviderError && error.status === 404) return null;
        throw error;
      }
    },
  };
}
