/** What is measured: each request is checked once for the right answer before it is timed. */
import { isDeepStrictEqual } from 'node:util';
import { CALENDAR_PAGE, type Calendar, type CalendarPosition } from './calendar.js';
import type { LoadRequest } from './load.js';

export type ScenarioId =
  | 'baseline-users-me'
  | 'rest-users-me'
  | 'rest-tags'
  | 'mcp-users-me'
  | 'mcp-posts'
  | 'mcp2026-users-me'
  | 'mcp2026-posts'
  | 'baseline-posts'
  | 'rest-posts'
  | 'baseline-schedules'
  | 'rest-schedules'
  | 'rest-create-post'
  | 'calendar-start'
  | 'calendar-end';

export interface Scenario {
  id: ScenarioId;
  title: string;
  /** The process that answers, whose memory is reported: the baseline server or the service. */
  pid: number;
  request: Pick<LoadRequest, 'url' | 'method' | 'headers' | 'body' | 'check' | 'expectedStatus'>;
  /** Why the answer is wrong, or undefined when it is right. */
  verify(status: number, body: Buffer): string | undefined;
}

export const USERS_ME_PATH = '/api/v1/users/me';
/** The lists as a client first asks for them: GET /posts' default page of 10, GET /schedules' default page of 20. */
export const POSTS_PATH = '/api/v1/posts';
export const SCHEDULES_PATH = '/api/v1/schedules';
/** A 2025 client, as MCP clients were until 2026-07-28 (a session begun by initialize; the call carries the version header). */
export const MCP_PROTOCOL_VERSION = '2025-06-18';
/** A 2026-07-28 client: no session, every request carries its version and capabilities in `_meta` and its headers. */
export const MCP_2026_VERSION = '2026-07-28';

export interface Targets {
  serviceUrl: string;
  servicePid: number;
  baselineUrl: string;
  baselinePid: number;
  /** The workspace the reads ask: its key, its tags, and the exact bytes of the answers the baseline serves too. */
  lists: { apiKey: string; tagCount: number; usersMe: Buffer; posts: Buffer; schedules: Buffer };
  /** The workspace POST /posts creates in: its key, its two channels, and the time the posts are scheduled at. */
  writes: { apiKey: string; integrationIds: [string, string]; scheduledAt: string };
  calendar: Calendar;
}

const jsonOf = <T>(body: Buffer) => JSON.parse(body.toString('utf8')) as T;
const ok = (status: number, problem: () => string | undefined) => (status >= 200 && status < 300 ? problem() : `status ${status}`);

/** The baseline and the service answering the same path with the same bytes. */
/** One JSON-RPC `tools/call` of `tool` without arguments, as an MCP client of that protocol sends it at `POST /mcp`. */
function mcpCall(t: Targets, tool: string, version: '2025' | '2026' = '2025'): Pick<LoadRequest, 'url' | 'method' | 'headers' | 'body'> {
  const modern = version === '2026';
  const meta = { 'io.modelcontextprotocol/protocolVersion': MCP_2026_VERSION, 'io.modelcontextprotocol/clientCapabilities': {} };
  return {
    url: `${t.serviceUrl}/mcp`,
    method: 'POST',
    headers: {
      'x-api-key': t.lists.apiKey,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': modern ? MCP_2026_VERSION : MCP_PROTOCOL_VERSION,
      ...(modern && { 'mcp-method': 'tools/call', 'mcp-name': tool }),
    },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: tool, arguments: {}, ...(modern && { _meta: meta }) } }),
  };
}

/** The tool's answer must be the REST body `expected`, as a 2025 or a 2026 client gets it. */
const sameAsRest = (expected: unknown, what: string) => (status: number, body: Buffer) =>
  ok(status, () => {
    const { result } = jsonOf<{ result?: { isError?: boolean; structuredContent?: unknown } }>(body);
    if (!result || result.isError) return `not a tool result: ${body.toString().slice(0, 200)}`;
    return isDeepStrictEqual(result.structuredContent, expected) ? undefined : `structuredContent differs from ${what}`;
  });

function listPair(t: Targets, id: 'posts' | 'schedules', path: string, what: string): Scenario[] {
  const bytes = t.lists[id];
  const same = (status: number, body: Buffer) => ok(status, () => (body.equals(bytes) ? undefined : `body differs from the captured ${what}`));
  return [
    {
      id: `baseline-${id}`,
      title: `Baseline: bare Express, the bytes of ${what}`,
      pid: t.baselinePid,
      request: { url: t.baselineUrl + path, method: 'GET', headers: {}, check: 'status' },
      verify: same,
    },
    {
      id: `rest-${id}`,
      title: `REST ${what}`,
      pid: t.servicePid,
      request: { url: t.serviceUrl + path, method: 'GET', headers: { 'x-api-key': t.lists.apiKey }, check: 'status' },
      // The service must answer byte for byte what the baseline serves, on every call: nothing in it may vary.
      verify: same,
    },
  ];
}

export function scenarios(t: Targets): Scenario[] {
  const user = jsonOf<unknown>(t.lists.usersMe);
  const keyed = { 'x-api-key': t.lists.apiKey };
  const rows = t.calendar.schedules.toLocaleString('en-US');
  return [
    {
      id: 'baseline-users-me',
      title: 'Baseline: bare Express, the bytes of GET /users/me',
      pid: t.baselinePid,
      request: { url: t.baselineUrl + USERS_ME_PATH, method: 'GET', headers: {}, check: 'status' },
      verify: (status, body) => ok(status, () => (body.equals(t.lists.usersMe) ? undefined : 'body differs from GET /users/me')),
    },
    {
      id: 'rest-users-me',
      title: 'REST GET /api/v1/users/me',
      pid: t.servicePid,
      request: { url: t.serviceUrl + USERS_ME_PATH, method: 'GET', headers: keyed, check: 'status' },
      verify: (status, body) => ok(status, () => (isDeepStrictEqual(jsonOf(body), user) ? undefined : 'a different user')),
    },
    {
      id: 'rest-tags',
      title: `REST GET /api/v1/tags (${t.lists.tagCount} tags)`,
      pid: t.servicePid,
      request: { url: `${t.serviceUrl}/api/v1/tags?limit=${t.lists.tagCount}`, method: 'GET', headers: keyed, check: 'status' },
      verify: (status, body) =>
        ok(status, () => {
          const count = jsonOf<{ items: unknown[] }>(body).items.length;
          return count === t.lists.tagCount ? undefined : `${count} tags instead of ${t.lists.tagCount}`;
        }),
    },
    {
      id: 'mcp-users-me',
      title: 'MCP tools/call getCurrentUser (2025-06-18)',
      pid: t.servicePid,
      request: { ...mcpCall(t, 'getCurrentUser'), check: 'mcp-tool' },
      verify: sameAsRest(user, 'GET /users/me'),
    },
    {
      id: 'mcp2026-users-me',
      title: 'MCP tools/call getCurrentUser (2026-07-28)',
      pid: t.servicePid,
      request: { ...mcpCall(t, 'getCurrentUser', '2026'), check: 'mcp-tool' },
      verify: sameAsRest(user, 'GET /users/me'),
    },
    ...listPair(t, 'posts', POSTS_PATH, 'GET /api/v1/posts (page of 10)'),
    {
      id: 'mcp-posts',
      title: 'MCP tools/call listPosts (page of 10, 2025-06-18)',
      pid: t.servicePid,
      request: { ...mcpCall(t, 'listPosts'), check: 'mcp-tool' },
      verify: sameAsRest(jsonOf(t.lists.posts), 'GET /posts'),
    },
    {
      id: 'mcp2026-posts',
      title: 'MCP tools/call listPosts (page of 10, 2026-07-28)',
      pid: t.servicePid,
      request: { ...mcpCall(t, 'listPosts', '2026'), check: 'mcp-tool' },
      verify: sameAsRest(jsonOf(t.lists.posts), 'GET /posts'),
    },
    ...listPair(t, 'schedules', SCHEDULES_PATH, 'GET /api/v1/schedules (page of 20)'),
    {
      id: 'rest-create-post',
      title: 'REST POST /api/v1/posts (1 row, 2 channels, SCHEDULED_TIME)',
      pid: t.servicePid,
      request: {
        url: t.serviceUrl + POSTS_PATH,
        method: 'POST',
        headers: { 'x-api-key': t.writes.apiKey, 'content-type': 'application/json' },
        body: JSON.stringify({
          rows: [
            {
              content: 'New on the blog: how we schedule a post to every channel at once, and what happens when a slot is taken. 🧵 https://example.com/blog/scheduling',
              scheduledAt: t.writes.scheduledAt,
            },
          ],
          shared: { selectedIntegrations: t.writes.integrationIds },
          postAction: 'SCHEDULED_TIME',
        }),
        check: 'status',
        expectedStatus: 201,
      },
      verify: (status, body) => {
        if (status !== 201) return `status ${status}: ${body.toString().slice(0, 200)}`;
        const { scheduleCount } = jsonOf<{ scheduleCount: number }>(body);
        return scheduleCount === 2 ? undefined : `${scheduleCount} schedules instead of 2`;
      },
    },
    {
      id: 'calendar-start',
      title: `REST GET /api/v1/schedules, first page of ${rows}`,
      pid: t.servicePid,
      request: { url: t.serviceUrl + SCHEDULES_PATH, method: 'GET', headers: { 'x-api-key': t.calendar.apiKey }, check: 'status' },
      verify: (status, body) => ok(status, () => calendarPageProblem(body, t.calendar.first)),
    },
    {
      id: 'calendar-end',
      title: `REST GET /api/v1/schedules, page at the end of ${rows}`,
      pid: t.servicePid,
      request: {
        url: `${t.serviceUrl}${SCHEDULES_PATH}?${cursorQuery(t.calendar.endCursor)}`,
        method: 'GET',
        headers: { 'x-api-key': t.calendar.apiKey },
        check: 'status',
      },
      verify: (status, body) => ok(status, () => calendarPageProblem(body, t.calendar.firstAfterEndCursor)),
    },
  ];
}

/** The cursor as deep-object keys, as a browser would send it. */
function cursorQuery(cursor: CalendarPosition): string {
  const key = (name: string) => encodeURIComponent(`cursor[${name}]`);
  return `${key('scheduledAt')}=${encodeURIComponent(cursor.scheduledAt)}&${key('id')}=${cursor.id}`;
}

/** Both calendar pages are full and have more after them, so they cost the same work but for where they start. */
function calendarPageProblem(body: Buffer, expectedFirst: CalendarPosition): string | undefined {
  const { schedules, hasMore } = jsonOf<{ schedules: { id: string }[]; hasMore: boolean }>(body);
  if (schedules.length !== CALENDAR_PAGE || !hasMore) return `${schedules.length} schedules, hasMore ${hasMore}; expected ${CALENDAR_PAGE} and more`;
  return schedules[0]!.id === expectedFirst.id ? undefined : `the page starts at ${schedules[0]!.id} instead of ${expectedFirst.id}`;
}

/** One request, outside the timed runs: a scenario that answers the wrong thing is not worth timing. */
export async function checkScenario(scenario: Scenario): Promise<void> {
  const { url, method, headers, body } = scenario.request;
  const response = await fetch(url, { method, headers, body });
  const problem = scenario.verify(response.status, Buffer.from(await response.arrayBuffer()));
  if (problem) throw new Error(`${scenario.title}: wrong answer before timing: ${problem}`);
}

export async function fetchBytes(url: string, headers: Record<string, string>): Promise<Buffer> {
  const response = await fetch(url, { headers });
  if (!response.ok) throw new Error(`GET ${url}: status ${response.status}`);
  return Buffer.from(await response.arrayBuffer());
}
