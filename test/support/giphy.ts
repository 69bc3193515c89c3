import { createHash, randomBytes } from 'node:crypto';
import type { Request, Response } from 'express';
import sharp from 'sharp';
import { startLoopbackApp } from './loopback-app.js';

/**
 * A strict fake of GIPHY's API on loopback (plain http: the service reaches its media through MEDIA_FETCH_ALLOW_HOSTS),
 * written from GIPHY's public documentation (developers.giphy.com/docs/api: endpoint#search, endpoint#get-gif-by-id,
 * schema (the GIF, Images, User, Meta and Pagination Objects), response-codes, synthetic-response, quick-start-guide,
 * best-practices; docs/optional-settings: renditions-glossary, renditions-on-demand). Where the docs are silent it
 * follows what GIPHY was seen to answer, and says so. Every rule below names where it comes from.
 *
 * Two endpoints, GET /v1/gifs/search and GET /v1/gifs/{gif_id}, answer `{ data, pagination?, meta }`; errors are a Meta
 * Object with an empty `data` (response-codes: "The API will return a Meta Object in its response"). The media URLs of
 * the Images Object point at the fake itself and serve real animated GIFs (and WebP), counted per path. Where GIPHY
 * documents a limit but quietly clamps or ignores (a limit over 50, an unknown parameter, an unknown rating), the fake
 * refuses with 400 and says what was wrong, so that a client's mistake shows in a test.
 *
 * Not modelled: stickers, clips, trending, random, translate, GIFs by ids, MP4 renditions (nothing here can write an
 * MP4: the renditions carry no `mp4` field, which the Images Object allows: "some GIFs don't have every property"),
 * `lang`'s regional results, `bundle`'s paring down (the value is checked, every rendition is still sent).
 */

// --- Types ---

/** The search endpoint's `rating` values, lowest first (endpoint#search). */
export type GiphyRating = 'g' | 'pg' | 'pg-13' | 'r';

/** A GIF of the fake's catalogue, as a test describes it. */
export interface FakeGifInput {
  id: string;
  title: string;
  /** More words the search matches besides the title's. */
  tags?: string[];
  /** Default `g`. */
  rating?: GiphyRating;
  /** The channel the GIF is attached to: the GIF Object then has `username` and a User Object. */
  username?: string;
  user?: { displayName?: string; verified?: boolean };
  altText?: string;
  source?: string;
  /** The original's size (renditions-glossary: "Up to 480px on the larger side"); default 480×270, 4 frames. */
  width?: number;
  height?: number;
  frames?: number;
  importedAt?: Date;
}

export type FakeGif = Required<Omit<FakeGifInput, 'username' | 'user'>> & { username: string; user: { displayName: string; verified: boolean } | null };

export interface FakeGiphyRequest {
  method: string;
  path: string;
  query: Record<string, string>;
  /** The answer's status; absent while unanswered, and for a dropped connection. */
  status?: number;
  at: Date;
}

/**
 * A fault the next request to an endpoint meets before anything is checked, answered as a Meta Object (a plain text
 * body for media); `drop`: the request is counted and the connection cut unanswered (media: after half the bytes);
 * `synthetic`: GIPHY's synthetic response (synthetic-response: status 200, `meta.response_id` "", the rest empty).
 */
export type GiphyFault = { status: number } | 'drop' | 'synthetic';
export type GiphyEndpoint = 'search' | 'gif' | 'media';

export interface FakeGiphyOptions {
  /** The one key GIPHY knows; default `giphy-test-key`. */
  apiKey?: string;
  /** The catalogue; default a few GIFs of cats and dogs. */
  gifs?: FakeGifInput[];
  /** API calls a key may make in an hour (quick-start-guide: beta keys, 100); default 100. */
  rateLimitPerHour?: number;
}

export interface FakeGiphy {
  /** `http://127.0.0.1:<port>`: the API's origin (api.giphy.com) and the media's. */
  url: string;
  /** `127.0.0.1:<port>`: what MEDIA_FETCH_ALLOW_HOSTS names. */
  host: string;
  apiKey: string;
  rateLimitPerHour: number;
  /** The catalogue, by id: delete from it at will, add to it with addGif. */
  gifs: Map<string, FakeGif>;
  /** Every request received, in order, media included. */
  requests: FakeGiphyRequest[];
  /** Media served (GET answered 200), by path (`/media/<id>/giphy.gif`). */
  downloads: Map<string, number>;
  addGif(gif: FakeGifInput): FakeGif;
  failNext(endpoint: GiphyEndpoint, fault: GiphyFault): void;
  close(): Promise<void>;
}

// --- Constants from the documentation ---

const RATINGS: GiphyRating[] = ['g', 'pg', 'pg-13', 'r'];
/** endpoint#search: "Maximum length: 50 chars"; limit "For beta keys, max limit is 50"; offset "Maximum: 4999". */
const [MAX_QUERY, MAX_LIMIT, MAX_OFFSET] = [50, 50, 4999];
/** renditions-on-demand: the bundles it names. */
const BUNDLES = ['messaging_non_clips', 'clips_grid_picker', 'sticker_layering', 'low_bandwidth'];
const SEARCH_PARAMS = ['api_key', 'q', 'limit', 'offset', 'rating', 'lang', 'random_id', 'bundle', 'country_code', 'region', 'remove_low_contrast'];
const GIF_PARAMS = ['api_key', 'rating', 'random_id', 'customer_id', 'country_code', 'region', 'bundle'];
const REASONS: Record<number, string> = { 400: 'Bad Request', 401: 'Unauthorized', 403: 'Forbidden', 404: 'Not Found', 414: 'URI Too Long', 429: 'Too Many Requests', 500: 'Internal Server Error', 502: 'Bad Gateway', 503: 'Service Unavailable' };

/**
 * The renditions served (schema's Images Object; sizes from renditions-glossary: fixed_height 200px high, _small 100px,
 * fixed_width 200px wide, stills one frame). downsized is "under 2mb" in the docs: the fake makes it half the original's
 * size, so a client choosing between them shows. preview_gif: small, its first two frames.
 */
const RENDITIONS: Record<string, { file: string; webp?: boolean; frames?: number; box(w: number, h: number): [number, number] }> = {
  original: { file: 'giphy', webp: true, box: (w, h) => [w, h] },
  original_still: { file: 'giphy_s', frames: 1, box: (w, h) => [w, h] },
  fixed_height: { file: '200', webp: true, box: (w, h) => [Math.round((w * 200) / h), 200] },
  fixed_height_still: { file: '200_s', frames: 1, box: (w, h) => [Math.round((w * 200) / h), 200] },
  fixed_height_small: { file: '100', webp: true, box: (w, h) => [Math.round((w * 100) / h), 100] },
  fixed_width: { file: '200w', webp: true, box: (w, h) => [200, Math.round((h * 200) / w)] },
  fixed_width_still: { file: '200w_s', frames: 1, box: (w, h) => [200, Math.round((h * 200) / w)] },
  fixed_width_small: { file: '100w', webp: true, box: (w, h) => [100, Math.round((h * 100) / w)] },
  downsized: { file: 'giphy-downsized', box: (w, h) => [Math.round(w / 2), Math.round(h / 2)] },
  preview_gif: { file: 'giphy-preview', frames: 2, box: (w, h) => [120, Math.round((h * 120) / w)] },
};
const MEDIA_FILES = new Set(Object.values(RENDITIONS).flatMap(({ file, webp }) => (webp ? [`${file}.gif`, `${file}.webp`] : [`${file}.gif`])));
const FRAME_MS = 120;
const PALETTES = [
  [[230, 57, 70], [241, 250, 238], [69, 123, 157], [29, 53, 87]],
  [[38, 70, 83], [42, 157, 143], [233, 196, 106], [244, 162, 97]],
  [[255, 190, 11], [251, 86, 7], [255, 0, 110], [131, 56, 236]],
];

const DEFAULT_GIFS: FakeGifInput[] = [
  { id: 'catKeyboard1', title: 'Cat Typing GIF', tags: ['cat', 'keyboard', 'work'] },
  { id: 'catNap2', title: 'Sleepy Cat GIF', tags: ['cat', 'nap'], username: 'catchannel', user: { displayName: 'The Cat Channel', verified: true } },
  { id: 'dogParty3', title: 'Party Dog GIF', tags: ['dog', 'party', 'celebrate'], rating: 'pg' },
  { id: 'dogCat4', title: 'Dog Meets Cat GIF', tags: ['dog', 'cat', 'friends'] },
  { id: 'rCat5', title: 'Angry Cat GIF', tags: ['cat', 'angry'], rating: 'r' },
];

// --- The fake ---

export async function startFakeGiphy(options: FakeGiphyOptions = {}): Promise<FakeGiphy> {
  const { app, server, host, url } = await startLoopbackApp();
  /** Media URLs carry GIPHY's query (`cid`, `rid`, `ct`); best-practices forbids stripping or changing it. */
  const cid = randomBytes(12).toString('hex');
  const faults: Record<GiphyEndpoint, GiphyFault[]> = { search: [], gif: [], media: [] };
  const calls: number[] = [];
  const media = new Map<string, Promise<Map<string, Buffer>>>();

  const fake: FakeGiphy = {
    url,
    host,
    apiKey: options.apiKey ?? 'giphy-test-key',
    rateLimitPerHour: options.rateLimitPerHour ?? 100,
    gifs: new Map(),
    requests: [],
    downloads: new Map(),
    addGif(input) {
      const gif: FakeGif = {
        id: input.id, title: input.title, tags: input.tags ?? [], rating: input.rating ?? 'g', username: input.username ?? '',
        user: input.username ? { displayName: input.user?.displayName ?? input.username, verified: input.user?.verified ?? false } : null,
        altText: input.altText ?? '', source: input.source ?? '', width: input.width ?? 480, height: input.height ?? 270, frames: input.frames ?? 4,
        importedAt: input.importedAt ?? new Date(Date.UTC(2021, 0, 1)),
      };
      if (Math.max(gif.width, gif.height) > 480 || gif.frames < 2) throw new Error(`GIF ${gif.id}: GIPHY's originals are at most 480px on a side and animated`);
      fake.gifs.set(gif.id, gif);
      media.delete(gif.id);
      return gif;
    },
    failNext(endpoint, fault) {
      if (endpoint === 'media' && fault === 'synthetic') throw new Error('A synthetic response is an API answer, not a media one');
      faults[endpoint].push(fault);
    },
    close: () =>
      new Promise((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
  for (const gif of options.gifs ?? DEFAULT_GIFS) fake.addGif(gif);

  // --- Plumbing: the request log, answers, faults, the key and the rate limit ---

  app.use((req, res, next) => {
    const entry: FakeGiphyRequest = { method: req.method, path: req.path, query: Object.fromEntries(searchOf(req)), at: new Date() };
    fake.requests.push(entry);
    res.on('finish', () => (entry.status = res.statusCode));
    // docs: "The GIPHY API also implements CORS".
    res.set('access-control-allow-origin', '*');
    next();
  });

  /**
   * An error: a Meta Object, `data` empty and `response_id` "" (as GIPHY answers a missing or wrong key); `msg` is the
   * status's reason, but for a refused parameter, where the fake says what it refused (the docs give no wording).
   */
  const fail = (res: Response, status: number, msg = REASONS[status] ?? 'Error') => void res.status(status).json({ data: [], meta: { status, msg, response_id: '' } });
  const ok = (res: Response, body: object) => void res.json({ ...body, meta: { status: 200, msg: 'OK', response_id: randomBytes(12).toString('hex') } });

  /** Takes the endpoint's next fault: answers it (true), or arranges a drop and lets the request go on (false). */
  function faulted(endpoint: 'search' | 'gif', req: Request, res: Response): boolean {
    const fault = faults[endpoint].shift();
    if (!fault) return false;
    if (fault === 'drop') {
      res.end = (() => (req.socket.destroy(), res)) as typeof res.end;
      return false;
    }
    if (fault === 'synthetic') res.json({ data: endpoint === 'search' ? [] : {}, meta: { status: 200, msg: 'OK', response_id: '' } });
    else fail(res, fault.status);
    return true;
  }

  /**
   * The key (response-codes: 401 "the API Key is missing", or wrong). Docs give no bodies: GIPHY was seen answering
   * `meta.msg` "No API key found in request." without a key and "Unauthorized" with a wrong one. Then the beta key's
   * rate limit (quick-start-guide: "100 searches/API calls per hour"; response-codes: 429), counted over the last hour.
   */
  function admitted(params: URLSearchParams, res: Response): boolean {
    const key = params.get('api_key');
    const now = Date.now();
    while (calls.length && calls[0]! <= now - 3600_000) calls.shift();
    if (!key) fail(res, 401, 'No API key found in request.');
    else if (key !== fake.apiKey) fail(res, 401);
    else if (calls.length >= fake.rateLimitPerHour) fail(res, 429);
    else {
      calls.push(now);
      return true;
    }
    return false;
  }

  /** The query, strictly: only the endpoint's parameters, each once (GIPHY ignores the others; the fake refuses them). */
  function checked(req: Request, res: Response, allowed: string[]): URLSearchParams | null {
    const params = searchOf(req);
    const keys = [...params.keys()];
    const unknown = keys.find((key) => !allowed.includes(key));
    const repeated = keys.find((key, index) => keys.indexOf(key) !== index);
    if (unknown === undefined && repeated === undefined) return params;
    if (!admitted(params, res)) return null;
    fail(res, 400, unknown !== undefined ? `Bad Request: unknown parameter ${unknown}` : `Bad Request: ${repeated} given more than once`);
    return null;
  }

  /** Integers as GIPHY's docs bound them; null when absent, a message when refused. */
  function integer(params: URLSearchParams, name: string, min: number, max: number): number | null | string {
    const value = params.get(name);
    if (value === null) return null;
    if (!/^\d+$/.test(value) || Number(value) < min || Number(value) > max) return `Bad Request: ${name} must be an integer from ${min} to ${max}`;
    return Number(value);
  }

  /** rating, lang and bundle as endpoint#search and renditions-on-demand name them; a message when refused. */
  function refusal(params: URLSearchParams): string | null {
    const rating = params.get('rating');
    if (rating !== null && !RATINGS.includes(rating as GiphyRating)) return `Bad Request: rating must be one of ${RATINGS.join(', ')}`;
    const [lang, bundle, low] = ['lang', 'bundle', 'remove_low_contrast'].map((name) => params.get(name));
    if (lang != null && !/^[a-z]{2}(-[A-Z]{2})?$/.test(lang)) return 'Bad Request: lang must be a 2-letter ISO 639-1 code';
    if (bundle != null && !BUNDLES.includes(bundle)) return `Bad Request: bundle must be one of ${BUNDLES.join(', ')}`;
    if (low != null && low !== 'true' && low !== 'false') return 'Bad Request: remove_low_contrast must be true or false';
    return null;
  }

  /** endpoint#get-gif-by-id: a GIF "rated higher than the rating parameter" is not given; the search filters likewise. */
  const within = (gif: FakeGif, rating: string | null) => rating === null || RATINGS.indexOf(gif.rating) <= RATINGS.indexOf(rating as GiphyRating);

  // --- GET /v1/gifs/search (endpoint#search) ---

  app.get('/v1/gifs/search', async (req, res) => {
    if (faulted('search', req, res)) return;
    const params = checked(req, res, SEARCH_PARAMS);
    if (!params || !admitted(params, res)) return;
    const q = params.get('q');
    if (!q?.trim()) return fail(res, 400, 'Bad Request: q is required');
    // response-codes: "414 URI Too Long: The length of the search query exceeds 50 characters."
    if ([...q].length > MAX_QUERY) return fail(res, 414);
    const limit = integer(params, 'limit', 1, MAX_LIMIT);
    const offset = integer(params, 'offset', 0, MAX_OFFSET);
    const refused = [limit, offset].find((value) => typeof value === 'string') ?? refusal(params);
    if (typeof refused === 'string') return fail(res, 400, refused);

    // endpoint#search: "@<username> anywhere in q changes the search to that specific public, verified user's GIFs".
    const channel = /(?:^|\s)@([\w-]+)/.exec(q)?.[1]?.toLowerCase();
    const sought = new Set(wordsOf(q.replace(/(?:^|\s)@[\w-]+/g, ' ')));
    const rating = params.get('rating');
    const found = [...fake.gifs.values()]
      .filter((gif) => within(gif, rating) && (!channel || (gif.user?.verified && gif.username.toLowerCase() === channel)))
      .map((gif) => {
        const own = new Set(wordsOf([gif.title, ...gif.tags].join(' ')));
        return { gif, score: [...sought].filter((word) => own.has(word)).length };
      })
      .filter(({ score }) => score > 0 || (channel && sought.size === 0))
      .sort((a, b) => b.score - a.score || (a.gif.id < b.gif.id ? -1 : a.gif.id > b.gif.id ? 1 : 0));
    const start = (offset as number | null) ?? 0;
    const page = found.slice(start, start + ((limit as number | null) ?? 25)).map(({ gif }) => gif);
    const data = await Promise.all(page.map(gifObject));
    ok(res, { data, pagination: { total_count: found.length, count: data.length, offset: start } });
  });

  // --- GET /v1/gifs/{gif_id} (endpoint#get-gif-by-id) ---

  app.get('/v1/gifs/:id', async (req, res) => {
    if (faulted('gif', req, res)) return;
    const params = checked(req, res, GIF_PARAMS);
    if (!params || !admitted(params, res)) return;
    const refused = refusal(params);
    if (refused) return fail(res, 400, refused);
    const gif = fake.gifs.get(req.params.id);
    // response-codes: 404 "if you request a GIF by using an id that does not exist"; a GIF rated above `rating`: "an
    // empty response with a Meta Object containing a 4xx error code" (the fake: 404).
    if (!gif || !within(gif, params.get('rating'))) return fail(res, 404);
    ok(res, { data: await gifObject(gif) });
  });

  // --- Media: the renditions' files ---

  app.get('/media/:id/:file', async (req, res) => {
    const gif = fake.gifs.get(req.params.id);
    const bytes = gif && MEDIA_FILES.has(req.params.file) ? (await filesOf(gif)).get(req.params.file) : undefined;
    if (!bytes) return void res.status(404).type('text').send('Not Found');
    // best-practices: "do not remove or modify query params in our media URLs". GIPHY's CDN would still answer.
    const query = Object.fromEntries(searchOf(req));
    if (JSON.stringify(query) !== JSON.stringify({ cid, rid: req.params.file, ct: 'g' })) {
      return void res.status(400).type('text').send('The fake refuses a media URL whose query was stripped or changed (GIPHY best practices: use the URLs as the API gives them)');
    }
    serveMedia(req, res, bytes, req.params.file.endsWith('.webp') ? 'image/webp' : 'image/gif');
  });

  function serveMedia(req: Request, res: Response, bytes: Buffer, type: string) {
    const fault = faults.media.shift();
    if (fault && fault !== 'drop' && fault !== 'synthetic') return void res.status(fault.status).type('text').send(REASONS[fault.status] ?? 'Error');
    res.writeHead(200, { 'content-type': type, 'content-length': bytes.length, 'cache-control': 'public, max-age=86400' });
    if (fault === 'drop') {
      res.write(bytes.subarray(0, bytes.length >> 1));
      return void setImmediate(() => req.socket.destroy());
    }
    if (req.method === 'GET') fake.downloads.set(req.path, (fake.downloads.get(req.path) ?? 0) + 1);
    res.end(req.method === 'HEAD' ? undefined : bytes);
  }

  app.use((_req, res) => fail(res, 404));

  // --- The GIF Object (schema) ---

  /** Every file of a GIF's renditions, made once, when first asked for: `<file>.gif` and `<file>.webp`. */
  function filesOf(gif: FakeGif): Promise<Map<string, Buffer>> {
    let made = media.get(gif.id);
    if (!made) {
      const seed = createHash('md5').update(gif.id).digest().readUInt32BE(0);
      const jobs = Object.values(RENDITIONS).flatMap(({ file, webp, frames, box }) => {
        const [width, height] = box(gif.width, gif.height);
        const count = Math.min(frames ?? gif.frames, gif.frames);
        const formats: ('gif' | 'webp')[] = webp ? ['gif', 'webp'] : ['gif'];
        return formats.map(async (format) => [`${file}.${format}`, await animation(width, height, count, seed, format)] as const);
      });
      made = Promise.all(jobs).then((files) => new Map(files));
      media.set(gif.id, made);
    }
    return made;
  }

  const mediaUrl = (gif: FakeGif, file: string) => `${url}/media/${gif.id}/${file}?${new URLSearchParams({ cid, rid: file, ct: 'g' })}`;

  /**
   * The GIF Object (schema): the Images Object's numbers are strings ("width": "480"). As GIPHY's answers show them
   * (the docs are silent): `bitly_gif_url`, `is_sticker` 0, `trending_datetime` "0000-00-00 00:00:00" when never
   * trending, and media URLs carrying `cid`, `rid` (the file) and `ct` ("g").
   */
  async function gifObject(gif: FakeGif) {
    const files = await filesOf(gif);
    const images = Object.fromEntries(
      Object.entries(RENDITIONS).map(([name, { file, webp, box }]) => {
        const [width, height] = box(gif.width, gif.height).map(String);
        const bytes = files.get(`${file}.gif`)!;
        const rendition: Record<string, string> = { url: mediaUrl(gif, `${file}.gif`), width: width!, height: height!, size: String(bytes.length) };
        if (name === 'original') Object.assign(rendition, { frames: String(gif.frames), hash: createHash('md5').update(bytes).digest('hex') });
        if (webp) Object.assign(rendition, { webp: mediaUrl(gif, `${file}.webp`), webp_size: String(files.get(`${file}.webp`)!.length) });
        return [name, rendition];
      }),
    );
    const slug = [...wordsOf(gif.title).filter((word) => word !== 'gif'), gif.id].join('-');
    const user = gif.user && {
      // The User Object (schema); the avatar: the GIF's still, so that it too is served by the fake.
      avatar_url: mediaUrl(gif, 'giphy_s.gif'), banner_image: '', banner_url: '', profile_url: `https://giphy.com/${gif.username}/`,
      username: gif.username, display_name: gif.user.displayName, description: '', instagram_url: '', website_url: '', is_verified: gif.user.verified,
    };
    return {
      type: 'gif', id: gif.id, url: `https://giphy.com/gifs/${slug}`, slug, bitly_gif_url: `https://gph.is/g/${gif.id}`, bitly_url: `https://gph.is/g/${gif.id}`,
      embed_url: `https://giphy.com/embed/${gif.id}`, username: gif.username, source: gif.source, title: gif.title, rating: gif.rating, content_url: '',
      source_tld: gif.source ? new URL(gif.source).hostname : '', source_post_url: gif.source, is_sticker: 0,
      import_datetime: gif.importedAt.toISOString().slice(0, 19).replace('T', ' '), trending_datetime: '0000-00-00 00:00:00',
      images, ...(user && { user }), alt_text: gif.altText,
    };
  }

  return fake;
}

/** The query as sent (`+` and %-escapes decoded), keys in order, repeats kept. */
const searchOf = (req: Request) => new URL(req.originalUrl, 'http://fake').searchParams;

/** Case-insensitive words: letters and digits. */
const wordsOf = (text: string) => text.toLowerCase().split(/[^\p{L}\p{N}]+/u).filter(Boolean);

/** A real animated image: bands of a palette sliding a step each frame, so every frame differs. */
async function animation(width: number, height: number, frames: number, seed: number, format: 'gif' | 'webp'): Promise<Buffer> {
  const palette = PALETTES[seed % PALETTES.length]!;
  const raw = Buffer.alloc(width * height * frames * 4);
  for (let frame = 0; frame < frames; frame++) {
    for (let y = 0; y < height; y++) {
      for (let x = 0; x < width; x++) {
        const colour = palette[(Math.floor((x * 4) / width) + Math.floor((y * 2) / height) + frame + seed) % palette.length]!;
        const offset = ((frame * height + y) * width + x) * 4;
        raw[offset] = colour[0]!;
        raw[offset + 1] = colour[1]!;
        raw[offset + 2] = colour[2]!;
        raw[offset + 3] = 255;
      }
    }
  }
  const image = sharp(raw, { raw: { width, height: height * frames, channels: 4, pageHeight: height } });
  const delay = Array<number>(frames).fill(FRAME_MS);
  return format === 'gif' ? image.gif({ delay, loop: 0, effort: 1, dither: 0 }).toBuffer() : image.webp({ delay, loop: 0, effort: 0 }).toBuffer();
}
