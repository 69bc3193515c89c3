import { useState } from 'preact/hooks';
import { api, call, type Schema } from '../api.js';
import { followInApp } from '../calendar/schedule-dialog.js';
import { ApprovalBadge, excerpt, StatusLine, STATUS_LABELS, STATUSES, type ScheduleStatus } from '../calendar/status.js';
import { platformLabel, PLATFORMS, type Platform } from '../platforms.js';
import { isDay } from '../zoned-time.js';
import { ErrorMessage, Field } from '../components/form.js';
import { FilterPanel } from '../components/filter-panel.js';
import { Loading, Page, type PageProps } from '../components/page.js';
import { Table, type Column } from '../components/table.js';
import { formatDateTime, formatNumber } from '../format.js';
import { useLoad } from '../hooks.js';
import { navigate, useLocation } from '../router.js';

type Post = Schema<'Post'>;
const LIMITS = [10, 20, 50, 100];

/** The filters and page of GET /posts, as the address holds them (`?status=FAILED&platform=BLUESKY&page=2`). */
interface Filters {
  status: ScheduleStatus[];
  /** Posts with a schedule FAILED or waiting for an automatic retry (`failing=true`): what a channel's flag links to. */
  failing: boolean;
  integrationId: string[];
  platform: Platform[];
  tagIds: string[];
  dateFrom: string;
  dateTo: string;
  search: string;
  page: number;
  limit: number;
}

/** Repeated keys or comma-separated values, as the API takes them. */
const many = (params: URLSearchParams, name: string) => params.getAll(name).flatMap((value) => value.split(',')).filter(Boolean);

function filtersOf(params: URLSearchParams): Filters {
  const page = Number(params.get('page'));
  const limit = Number(params.get('limit'));
  const dateFrom = params.get('dateFrom') ?? '';
  const dateTo = params.get('dateTo') ?? '';
  return {
    status: many(params, 'status').filter((value): value is ScheduleStatus => (STATUSES as readonly string[]).includes(value)),
    failing: params.get('failing') === 'true',
    integrationId: many(params, 'integrationId'),
    platform: many(params, 'platform').filter((value): value is Platform => (PLATFORMS as readonly string[]).includes(value)),
    tagIds: many(params, 'tagIds'),
    dateFrom: isDay(dateFrom) ? dateFrom : '',
    dateTo: isDay(dateTo) ? dateTo : '',
    search: params.get('search') ?? '',
    page: Number.isInteger(page) && page >= 1 ? page : 1,
    limit: LIMITS.includes(limit) ? limit : 10,
  };
}

/** The address of a filtered view: only what differs from the defaults, arrays as repeated keys. */
function postsUrl(filters: Filters): string {
  const params = new URLSearchParams();
  for (const status of filters.status) params.append('status', status);
  if (filters.failing) params.set('failing', 'true');
  for (const integrationId of filters.integrationId) params.append('integrationId', integrationId);
  for (const platform of filters.platform) params.append('platform', platform);
  for (const tagId of filters.tagIds) params.append('tagIds', tagId);
  if (filters.dateFrom) params.set('dateFrom', filters.dateFrom);
  if (filters.dateTo) params.set('dateTo', filters.dateTo);
  if (filters.search.trim()) params.set('search', filters.search.trim());
  if (filters.limit !== 10) params.set('limit', String(filters.limit));
  if (filters.page > 1) params.set('page', String(filters.page));
  const query = params.toString();
  return query ? `/posts?${query}` : '/posts';
}

/** `/posts`: the workspace's posts, newest first, filtered and paged as GET /posts does, the view kept in the address. */
export function PostsPage(_props: PageProps) {
  const url = useLocation();
  const filters = filtersOf(url.searchParams);
  const search = url.search;
  const workspace = useLoad(() => call(api.GET('/workspace')));
  const tags = useLoad(() => call(api.GET('/tags', { params: { query: { limit: 100 } } })));
  const channels = useLoad(() => call(api.GET('/integrations')));
  const posts = useLoad(async () => {
    const result = await call(
      api.GET('/posts', {
        params: {
          query: {
            page: filters.page,
            limit: filters.limit,
            ...(filters.status.length && { status: filters.status }),
            ...(filters.failing && { failing: true }),
            ...(filters.integrationId.length && { integrationId: filters.integrationId }),
            ...(filters.platform.length && { platform: filters.platform }),
            ...(filters.tagIds.length && { tagIds: filters.tagIds }),
            ...(filters.dateFrom && { dateFrom: filters.dateFrom }),
            ...(filters.dateTo && { dateTo: filters.dateTo }),
            ...(filters.search.trim() && { search: filters.search.trim() }),
          },
        },
      }),
    );
    // Which address the answer is for: another one's rows are never shown as this one's.
    return result.ok ? { ok: true as const, data: { ...result.data, for: search } } : result;
  }, [search]);
  const timeZone = workspace.data?.timeZone;
  const shown = posts.data?.for === search ? posts.data : undefined;
  const info = shown?.pageInfo;

  return (
    <Page title="Posts" intro="Every post of the workspace, newest first. The address keeps the filters, so a filtered view can be shared.">
      <section aria-labelledby="filters">
        <h2 id="filters" class="visually-hidden">
          Filters
        </h2>
        <FilterPanel active={filters.status.length + (filters.failing ? 1 : 0) + filters.integrationId.length + filters.platform.length + filters.tagIds.length + (filters.dateFrom ? 1 : 0) + (filters.dateTo ? 1 : 0) + (filters.search.trim() ? 1 : 0)}>
          <FilterForm key={search} filters={filters} tags={tags.data?.items ?? []} channels={channels.data ?? []} timeZone={timeZone} />
        </FilterPanel>
        <ErrorMessage message={tags.error?.message} />
      </section>
      <section aria-labelledby="post-list">
        <h2 id="post-list" class="visually-hidden">
          Posts
        </h2>
        <ErrorMessage message={posts.error?.message ?? workspace.error?.message} />
        {(!shown || !timeZone) && !posts.error && !workspace.error && <Loading what="the posts" />}
        {shown && timeZone && info && (
          <>
            <p role="status">
              {info.total === 0
                ? 'No post matches.'
                : `${formatNumber(info.total)} ${info.total === 1 ? 'post' : 'posts'}${info.totalPages > 1 ? `, page ${info.page} of ${info.totalPages}` : ''}.`}
            </p>
            {shown.items.length > 0 && <p class="hint">Times are in the workspace’s time zone, {timeZone}.</p>}
            {shown.items.length > 0 && <PostsTable posts={shown.items} timeZone={timeZone} />}
            {info.total > 0 && shown.items.length === 0 && <p>This page is past the last one.</p>}
            {(info.hasPreviousPage || info.hasNextPage) && (
              <nav class="pager" aria-label="Pages of posts">
                {info.hasPreviousPage && (
                  <a href={postsUrl({ ...filters, page: Math.min(filters.page - 1, Math.max(info.totalPages, 1)) })} onClick={followInApp} rel="prev">
                    <span aria-hidden="true">← </span>Previous page
                  </a>
                )}
                <span>
                  Page {info.page} of {Math.max(info.totalPages, 1)}
                </span>
                {info.hasNextPage && (
                  <a href={postsUrl({ ...filters, page: filters.page + 1 })} onClick={followInApp} rel="next">
                    Next page<span aria-hidden="true"> →</span>
                  </a>
                )}
              </nav>
            )}
          </>
        )}
      </section>
    </Page>
  );
}

function FilterForm({ filters, tags, channels, timeZone }: { filters: Filters; tags: Schema<'Tag'>[]; channels: Schema<'Integration'>[]; timeZone: string | undefined }) {
  const [status, setStatus] = useState(filters.status);
  const [failing, setFailing] = useState(filters.failing);
  const [integrationId, setIntegrationId] = useState(filters.integrationId);
  const [platform, setPlatform] = useState(filters.platform);
  const [tagIds, setTagIds] = useState(filters.tagIds);
  const [dateFrom, setDateFrom] = useState(filters.dateFrom);
  const [dateTo, setDateTo] = useState(filters.dateTo);
  const [search, setSearch] = useState(filters.search);
  const [limit, setLimit] = useState(filters.limit);

  const toggle = <T,>(list: T[], value: T, on: boolean) => (on ? [...list.filter((item) => item !== value), value] : list.filter((item) => item !== value));
  const submit = (event: Event) => {
    event.preventDefault();
    // A new filter starts from the first page.
    navigate(postsUrl({ status, failing, integrationId, platform, tagIds, dateFrom, dateTo, search, limit, page: 1 }));
  };

  return (
    <form class="post-filters" onSubmit={submit} role="search" aria-label="Filter the posts">
      <div class="filter-row">
        <Field label="Text contains" type="text" name="search" value={search} onInput={setSearch} />
        <fieldset class="date-range">
          <legend>Scheduled between{timeZone && <span class="hint"> (days in {timeZone})</span>}</legend>
          <Field label="From" type="date" name="dateFrom" value={dateFrom} onInput={setDateFrom} />
          <Field label="To" type="date" name="dateTo" value={dateTo} onInput={setDateTo} min={dateFrom || undefined} />
        </fieldset>
        <div class="field">
          <label for="posts-limit">Posts per page</label>
          <select id="posts-limit" name="limit" value={String(limit)} onChange={(event) => setLimit(Number(event.currentTarget.value))}>
            {LIMITS.map((value) => (
              <option key={value} value={String(value)}>
                {value}
              </option>
            ))}
          </select>
        </div>
      </div>
      <fieldset>
        <legend>Status</legend>
        {STATUSES.map((value) => (
          <label key={value} class="checkbox">
            <input type="checkbox" name="status" value={value} checked={status.includes(value)} onChange={(event) => setStatus(toggle(status, value, event.currentTarget.checked))} />
            {STATUS_LABELS[value]}
          </label>
        ))}
        <label class="checkbox">
          <input type="checkbox" name="failing" value="true" checked={failing} onChange={(event) => setFailing(event.currentTarget.checked)} />
          Failing (failed, or retrying)
        </label>
      </fieldset>
      {channels.length > 0 && (
        <fieldset>
          <legend>Channel</legend>
          {channels.map((channel) => (
            <label key={channel.id} class="checkbox">
              <input
                type="checkbox"
                name="integrationId"
                value={channel.id}
                checked={integrationId.includes(channel.id)}
                onChange={(event) => setIntegrationId(toggle(integrationId, channel.id, event.currentTarget.checked))}
              />
              {channel.name}
            </label>
          ))}
        </fieldset>
      )}
      <fieldset>
        <legend>Platform</legend>
        {PLATFORMS.map((value) => (
          <label key={value} class="checkbox">
            <input
              type="checkbox"
              name="platform"
              value={value}
              checked={platform.includes(value)}
              onChange={(event) => setPlatform(toggle(platform, value, event.currentTarget.checked))}
            />
            {platformLabel(value)}
          </label>
        ))}
      </fieldset>
      <fieldset>
        <legend>Tags</legend>
        {tags.length === 0 && <p class="hint">No tags yet.</p>}
        {tags.map((tag) => (
          <label key={tag.id} class="checkbox">
            <input type="checkbox" name="tagIds" value={tag.id} checked={tagIds.includes(tag.id)} onChange={(event) => setTagIds(toggle(tagIds, tag.id, event.currentTarget.checked))} />
            {tag.name}
          </label>
        ))}
      </fieldset>
      <div class="filter-actions">
        <button type="submit" class="primary">
          Apply filters
        </button>
        <a href="/posts" onClick={followInApp}>
          Clear the filters
        </a>
      </div>
    </form>
  );
}

/** A thread's parts follow their first schedule: a row shows one line per channel. */
const firstSchedules = (post: Post) => post.schedules.filter((schedule) => schedule.threadOrder === 0);

function PostsTable({ posts, timeZone }: { posts: Post[]; timeZone: string }) {
  const columns: Column<Post>[] = [
    {
      header: 'Post',
      // One element: on a phone the cell is a grid of its label and its content.
      cell: (post) => (
        <div>
          <a href={`/posts/${post.id}`} onClick={followInApp}>
            {excerpt(post.content, 100) || '(no text)'}
          </a>
          {(post.isEvergreen || post.lastRecycledAt) && (
            <p class="post-marks">
              {post.isEvergreen && <span class="badge evergreen">Evergreen</span>}
              {post.lastRecycledAt && <span class="status-detail">Recycled {formatDateTime(post.lastRecycledAt, '—', timeZone)}</span>}
            </p>
          )}
        </div>
      ),
    },
    {
      header: 'Channels',
      cell: (post) => (
        <ul class="post-schedules">
          {firstSchedules(post).map((schedule) => (
            <li key={schedule.id}>
              {schedule.integration.name} <span class="platform">({platformLabel(schedule.integration.platform)})</span>
              {/* A channel whose text is not the post's (its own, or as it was published) says it as it is there. */}
              {schedule.scheduledContent !== post.content && <span class="channel-text">“{excerpt(schedule.scheduledContent, 60)}”</span>}
            </li>
          ))}
        </ul>
      ),
    },
    {
      header: 'Status',
      cell: (post) => {
        const schedules = firstSchedules(post);
        return (
          <>
            <ApprovalBadge post={post} />
            <ul class="post-schedules">
              {schedules.map((schedule) => (
                <li key={schedule.id}>
                  <StatusLine schedule={schedule} timeZone={timeZone} />
                  {schedules.length > 1 && <span class="visually-hidden"> on {schedule.integration.name}</span>}
                </li>
              ))}
            </ul>
          </>
        );
      },
    },
    {
      header: 'Scheduled',
      cell: (post) => {
        const schedules = firstSchedules(post);
        return (
          <ul class="post-schedules">
            {schedules.map((schedule) => (
              <li key={schedule.id}>
                {schedule.scheduledAt ? formatDateTime(schedule.scheduledAt, '—', timeZone) : 'No date'}
                {schedules.length > 1 && <span class="visually-hidden"> on {schedule.integration.name}</span>}
              </li>
            ))}
          </ul>
        );
      },
    },
    {
      header: 'Tags',
      cell: (post) =>
        post.tags.length ? (
          <ul class="tag-list">
            {post.tags.map((tag) => (
              <li key={tag.id} class="tag">
                {tag.name}
              </li>
            ))}
          </ul>
        ) : (
          <span class="status-detail">None</span>
        ),
    },
  ];
  return (
    <Table caption="Posts, newest first" class="posts-table" columns={columns} rows={posts} rowKey={(post) => post.id} rowData={(post) => ({ 'data-post-id': post.id })} />
  );
}
