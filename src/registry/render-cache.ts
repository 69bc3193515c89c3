import { LRUCache } from 'lru-cache';

/**
 * What the lists rendered lately, each kept beside the fingerprint of the rows it was made from: a read gets the
 * fingerprints of the rows it shows from Postgres (with the page's ids, or by one light statement), serves the renders
 * whose fingerprint is unchanged and renders only the rest, which makes a page read again much cheaper than its first
 * read (docs/benchmarks.md).
 *
 * A fingerprint is made of the rows' `xmin`, the transaction that wrote each row's current version: every committed
 * change, by any process or by hand, gives a row a new version with another `xmin`, and a deleted or added row changes
 * the set. So a render is never served after its rows changed. Fingerprints are read on the pool's own connections,
 * committed rows only: never inside a transaction, where a row written twice keeps one `xmin`.
 */
export class RenderCache<T extends object> {
  readonly #renders: LRUCache<string, { fingerprint: string; render: T }>;

  /** `maxBytes`: how much the renders kept may weigh, counted as their JSON's length (about their size on the heap). */
  constructor(maxBytes: number) {
    this.#renders = new LRUCache({ maxSize: maxBytes, sizeCalculation: ({ render }) => JSON.stringify(render).length });
  }

  /**
   * The renders of `current` (ids with their rows' fingerprints, as read now), from the cache where the fingerprint is
   * unchanged and from `render` for the others. Renders are frozen: a caller that changed one would change it for
   * every later read.
   */
  async read(current: { id: string; fingerprint: string }[], render: (ids: string[]) => Promise<Map<string, T>>): Promise<Map<string, T>> {
    const found = new Map<string, T>();
    const fingerprints = new Map(current.map((row) => [row.id, row.fingerprint]));
    const stale: string[] = [];
    for (const [id, fingerprint] of fingerprints) {
      const kept = this.#renders.get(id);
      if (kept?.fingerprint === fingerprint) found.set(id, kept.render);
      else stale.push(id);
    }
    if (stale.length === 0) return found;
    // Rendered after the fingerprints were read: a render is at least as recent as the fingerprint it is kept under,
    // so a change committed in between makes the next read miss, never serve the older rows.
    for (const [id, made] of await render(stale)) {
      const fingerprint = fingerprints.get(id);
      if (fingerprint === undefined) continue;
      const render = deepFreeze(made);
      this.#renders.set(id, { fingerprint, render });
      found.set(id, render);
    }
    return found;
  }
}

/**
 * The render caches a process keeps, one per kind of render, made on first use by the module that renders that kind
 * (which alone knows its type and how much of it is worth keeping), so this layer knows nothing of what is rendered.
 */
export class Renders {
  readonly #caches = new Map<string, RenderCache<object>>();

  /** The cache named `name`, made with `maxBytes` on first use; a name always stands for one type of render. */
  of<T extends object>(name: string, maxBytes: number): RenderCache<T> {
    let cache = this.#caches.get(name);
    if (!cache) this.#caches.set(name, (cache = new RenderCache<object>(maxBytes)));
    return cache as unknown as RenderCache<T>;
  }
}

function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const inner of Object.values(value)) deepFreeze(inner);
  }
  return value;
}
