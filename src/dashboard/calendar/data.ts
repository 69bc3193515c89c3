import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { api, call, type ApiError, type Result, type Schema } from '../api.js';

export type CalendarSchedule = Schema<'CalendarSchedule'>;
export type Cursor = { scheduledAt: string; id: string };

/** How often the visible range is read again while the page is visible: a status change shows within this. */
export const POLL_MS = 4000;
/** A month or week is read whole, a page of 100 at a time by the keyset cursor (at most this many pages). */
const MAX_PAGES = 20;

/** What the calendar shows: a month or a week (read whole), or an agenda page (from a day, or from a cursor either way). */
export type Platform = CalendarSchedule['integration']['platform'];
export type Status = CalendarSchedule['status'];

/** The calendar's filters (GET /schedules `platforms` and `statuses`); empty: all. */
export interface CalendarFilters {
  platforms: Platform[];
  statuses: Status[];
}

export type Range = { filters: CalendarFilters } & (
  | { view: 'month' | 'week'; date: string }
  | { view: 'agenda'; date: string; cursor?: Cursor; direction: 'forward' | 'backward' }
);

const filterQuery = ({ platforms, statuses }: CalendarFilters) => ({
  ...(platforms.length && { platforms }),
  ...(statuses.length && { statuses }),
});

export interface Listing {
  schedules: CalendarSchedule[];
  /** Agenda: whether there are more in the direction the page was read. */
  hasMore: boolean;
}

/** Reads `range`: every schedule of a month or week, or one agenda page, in time order. */
export async function readRange(range: Range): Promise<Result<Listing>> {
  if (range.view === 'agenda') {
    const query =
      range.cursor !== undefined
        ? { view: 'agenda' as const, limit: 20, cursor: range.cursor, direction: range.direction }
        : range.direction === 'backward'
          ? { view: 'agenda' as const, limit: 20, endDate: range.date, direction: 'backward' as const }
          : { view: 'agenda' as const, limit: 20, startDate: range.date };
    const result = await call(api.GET('/schedules', { params: { query: { ...query, ...filterQuery(range.filters) } } }));
    if (!result.ok) return result;
    const schedules = range.direction === 'backward' ? [...result.data.schedules].reverse() : result.data.schedules;
    return { ok: true, data: { schedules, hasMore: result.data.hasMore } };
  }
  const schedules: CalendarSchedule[] = [];
  let cursor: Cursor | undefined;
  for (let page = 0; page < MAX_PAGES; page++) {
    const result = await call(
      api.GET('/schedules', { params: { query: { view: range.view, startDate: range.date, limit: 100, ...(cursor && { cursor }), ...filterQuery(range.filters) } } }),
    );
    if (!result.ok) return result;
    schedules.push(...result.data.schedules);
    if (!result.data.hasMore || !result.data.nextCursor) return { ok: true, data: { schedules, hasMore: false } };
    cursor = result.data.nextCursor;
  }
  return { ok: true, data: { schedules, hasMore: true } };
}

const keyOf = (range: Range) => JSON.stringify(range);

/**
 * The schedules of `range`, read again every few seconds while the page is visible (and at once when it becomes
 * visible again), so that a schedule turning PUBLISHING, PUBLISHED or FAILED shows without a reload. The answer
 * replaces the data in place: entries keep their elements (keyed by id), so the focus and an open dialog stay.
 */
export function useCalendar(range: Range | undefined) {
  const [listing, setListing] = useState<Listing>();
  const [loadedKey, setLoadedKey] = useState<string>();
  const [error, setError] = useState<ApiError>();
  const current = useRef<string | undefined>(undefined);
  const key = range ? keyOf(range) : undefined;
  current.current = key;

  /** Requests in the order they were made: an answer older than one already shown is stale (a poll crossing a move). */
  const requests = useRef({ made: 0, shown: 0 });
  const reload = useCallback(async () => {
    if (!range) return;
    const asked = keyOf(range);
    const order = ++requests.current.made;
    const result = await readRange(range);
    // An answer for a range no longer shown (the user moved on meanwhile), or older than the one shown, is dropped.
    if (current.current !== asked || order < requests.current.shown) return;
    requests.current.shown = order;
    if (result.ok) {
      setListing(result.data);
      setLoadedKey(asked);
      setError(undefined);
    } else {
      setError(result.error);
    }
  }, [key]);

  useEffect(() => {
    if (!range) return;
    void reload();
    let timer: ReturnType<typeof setTimeout> | undefined;
    let stopped = false;
    const schedule = () => {
      clearTimeout(timer);
      timer = setTimeout(tick, POLL_MS);
    };
    let polling = false;
    const tick = async () => {
      // One poll at a time: a month read page by page can outlast the interval, and visibility can fire meanwhile.
      if (stopped || polling) return;
      polling = true;
      if (document.visibilityState === 'visible') await reload();
      polling = false;
      if (!stopped) schedule();
    };
    const onVisibility = () => {
      if (document.visibilityState === 'visible') void tick();
    };
    schedule();
    document.addEventListener('visibilitychange', onVisibility);
    return () => {
      stopped = true;
      clearTimeout(timer);
      document.removeEventListener('visibilitychange', onVisibility);
    };
  }, [reload]);

  return { listing, error, reload, loading: key !== loadedKey };
}
