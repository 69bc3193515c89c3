/**
 * What a terminal shows of the answers that have a reading of their own, keyed by the registry's operation id
 * (`renderers`); every other answer is output.ts's generic table or block. Piped output and `--json` never come here:
 * they are the REST body, byte for byte.
 *
 * Times are shown in the workspace's time zone (GET /workspace's `timeZone`: the zone its posting windows and calendar
 * use), or in UTC where that cannot be read (an API key cannot: the operation is internal); each reading says which.
 * They are written in the reader's locale (LC_ALL, LC_TIME, then LANG).
 */
import { CliFailure } from './failure.js';
import { commandOf, operations } from './manifest.js';

export interface RenderContext {
  /** The answer of a GET operation of the registry, by its id, its path parameters taken from `params`. */
  read(operationId: string, params?: Record<string, string>): Promise<unknown>;
  /** The terminal's width in characters. */
  columns: number;
  /** What the caller signed in with when it reaches only the public operations (`an API key`), for saying why a reading is in UTC. */
  credentials?: string;
}

export type Renderer = (body: unknown, context: RenderContext) => Promise<string>;

/** The fields of a post and of its schedules that the readings below show. */
interface Schedule {
  id: string;
  status: string;
  scheduledAt: string | null;
  publishedAt: string | null;
  failureReason: string | null;
  releaseUrl: string | null;
  scheduledContent: string;
  threadOrder: number;
  integration: { id: string; name: string; platform: string };
}

interface Post {
  id: string;
  content: string;
  approvalStatus: string | null;
  isEvergreen: boolean;
  createdAt: string;
  tags: { name: string }[];
  attachments: { altText: string | null }[];
  schedules: Schedule[];
  user: { name: string; email: string } | null;
}

const FALLBACK_LOCALE = 'en-US';

/** The reader's locale as a BCP 47 tag: the first of LC_ALL, LC_TIME and LANG set (POSIX's order); en-US for C, POSIX or none. */
export function localeOf(env: NodeJS.ProcessEnv = process.env): string {
  const value = [env.LC_ALL, env.LC_TIME, env.LANG].find((candidate) => candidate);
  if (value === undefined) {
    const resolved = new Intl.DateTimeFormat().resolvedOptions().locale;
    return resolved === 'und' ? FALLBACK_LOCALE : resolved;
  }
  const tag = value.split(/[.@]/)[0]!.replace(/_/g, '-');
  try {
    return tag !== 'C' && tag !== 'POSIX' && Intl.DateTimeFormat.supportedLocalesOf([tag]).length ? tag : FALLBACK_LOCALE;
  } catch {
    return FALLBACK_LOCALE;
  }
}

/** The zone the times of a reading are in, and what says why that one. */
export interface Zone {
  name: string;
  /** `the workspace's time zone`, or why it is UTC. */
  why: string;
}

/** The workspace's time zone, from GET /workspace (`getWorkspace`); UTC, saying why, when it cannot be read. */
async function zoneOf(context: RenderContext): Promise<Zone> {
  try {
    const { timeZone } = (await context.read('getWorkspace')) as { timeZone?: unknown };
    if (typeof timeZone === 'string' && timeZone) {
      new Intl.DateTimeFormat('en-US', { timeZone });
      return { name: timeZone, why: "the workspace's time zone" };
    }
  } catch (error) {
    if (error instanceof CliFailure && error.code === 'NEEDS_SESSION') {
      return { name: 'UTC', why: `${context.credentials ?? 'an API key'} cannot read the workspace's time zone; a signed-in session can: postwise login --email` };
    }
  }
  return { name: 'UTC', why: "the workspace's time zone could not be read" };
}

const formats = new Map<string, Intl.DateTimeFormat>();

/** A time in the reader's locale and the zone given (`Tue, Dec 1, 2026, 9:00 AM`); the reading names the zone once. */
export function timeOf(iso: string | null | undefined, zone: string): string {
  if (!iso) return 'no date';
  let format = formats.get(zone);
  if (!format) {
    format = new Intl.DateTimeFormat(localeOf(), { weekday: 'short', day: 'numeric', month: 'short', year: 'numeric', hour: 'numeric', minute: '2-digit', timeZone: zone });
    formats.set(zone, format);
  }
  return format.format(new Date(iso));
}

/** One line of at most `width` characters, whitespace folded, an ellipsis where it was cut. */
function trimmed(text: string, width: number): string {
  const characters = [...text.replace(/\s+/g, ' ').trim()];
  return characters.length > width ? `${characters.slice(0, Math.max(width - 1, 0)).join('')}…` : characters.join('');
}

const capitalised = (word: string) => word.charAt(0).toUpperCase() + word.slice(1).toLowerCase();

/** `SCHEDULED` → `Scheduled`, `pending_review` → `Pending review`. */
const wordsOf = (value: string) => capitalised(value.replace(/_/g, ' '));

/** How each platform is named to people, from the server's GET /platforms (`listPlatforms`); its code, capitalised, when that cannot be read. */
async function platformNames(context: RenderContext): Promise<(platform: string) => string> {
  const names = new Map<string, string>();
  if (operations.some((operation) => operation.id === 'listPlatforms')) {
    try {
      for (const entry of (await context.read('listPlatforms')) as { platform: string; name: string }[]) names.set(entry.platform, entry.name);
    } catch {
      // An older server, or a refusal: the codes serve.
    }
  }
  return (platform) => names.get(platform) ?? capitalised(platform);
}

/** The command of an operation of the registry, as it is typed: `postwise schedules retry`. */
function commandLine(operationId: string): string | undefined {
  const operation = operations.find((candidate) => candidate.id === operationId);
  if (!operation) return undefined;
  const { resource, action } = commandOf(operation);
  return `postwise ${resource} ${action}`;
}

/** Rows of cells as aligned columns, each column as wide as its widest cell (the last one not padded). */
function aligned(rows: string[][], indent = ''): string[] {
  const widths = rows[0]?.map((_, index) => Math.max(...rows.map((row) => [...row[index]!].length))) ?? [];
  return rows.map((row) => indent + row.map((value, index) => (index === row.length - 1 ? value : value + ' '.repeat(widths[index]! - [...value].length))).join('  ').trimEnd());
}

/** The time that tells where a schedule is: when it was published, or when it is due. */
const whenOf = (schedule: Schedule, zone: string) => timeOf(schedule.status === 'PUBLISHED' ? (schedule.publishedAt ?? schedule.scheduledAt) : schedule.scheduledAt, zone);

/** A channel as people name it: `team.example (Bluesky)`. */
const channelOf = (schedule: Schedule, platform: (code: string) => string) => `${schedule.integration.name} (${platform(schedule.integration.platform)})`;

/** `posts get`: the post, then each schedule's channel, status and time, with its link, its failure, and its id. */
async function getPost(body: unknown, context: RenderContext): Promise<string> {
  const post = body as Post;
  const [platform, zone] = await Promise.all([platformNames(context), zoneOf(context)]);
  const retry = commandLine('retrySchedule');
  const facts: string[][] = [
    ['Times', `${zone.name} (${zone.why})`],
    ['Created', `${timeOf(post.createdAt, zone.name)}${post.user ? ` by ${post.user.name || post.user.email}` : ''}`],
    ...(post.approvalStatus ? [['Approval', wordsOf(post.approvalStatus)]] : []),
    ...(post.tags.length ? [['Tags', post.tags.map((tag) => tag.name).join(', ')]] : []),
    ...(post.attachments.length ? [['Media', post.attachments.map((attachment, index) => attachment.altText || `image ${index + 1} (no alt text)`).join('; ')]] : []),
    ...(post.isEvergreen ? [['Evergreen', 'yes: recycle rules may post it again']] : []),
  ];
  const lines = [`Post ${post.id}`, ...aligned(facts.map(([label, value]) => [`${label}:`, value!])), '', ...post.content.split('\n').map((line) => `  ${line}`.trimEnd()), ''];
  if (!post.schedules.length) return [...lines, 'No schedules.'].join('\n');
  lines.push(`Schedules (${post.schedules.filter((schedule) => schedule.threadOrder === 0).length}):`);
  const heads = aligned(
    post.schedules.map((schedule) => [
      schedule.threadOrder === 0 ? channelOf(schedule, platform) : `  ↳ thread part ${schedule.threadOrder}`,
      wordsOf(schedule.status),
      whenOf(schedule, zone.name),
    ]),
    '  ',
  );
  for (const [index, schedule] of post.schedules.entries()) {
    const details: string[][] = [];
    if (schedule.threadOrder > 0 || schedule.scheduledContent !== post.content) details.push(['text:', trimmed(schedule.scheduledContent, Math.max(context.columns - 16, 20))]);
    if (schedule.releaseUrl) details.push(['link:', schedule.releaseUrl]);
    if (schedule.failureReason) details.push(['failure:', schedule.failureReason]);
    details.push(['schedule:', schedule.id]);
    if (schedule.status === 'FAILED' && retry && schedule.threadOrder === 0) details.push(['retry:', `${retry} ${schedule.id}`]);
    lines.push(heads[index]!, ...aligned(details, '      '));
  }
  return lines.join('\n');
}

/** `posts list`: a table of the posts' text (trimmed to the terminal), channels, status and time, then where the next page is. */
async function listPosts(body: unknown, context: RenderContext): Promise<string> {
  const { items, pageInfo } = body as { items: Post[]; pageInfo?: { page: number; totalPages: number; total: number; hasNextPage: boolean } };
  const [platform, zone] = await Promise.all([platformNames(context), zoneOf(context)]);
  const rows = items.map((post) => {
    const roots = post.schedules.filter((schedule) => schedule.threadOrder === 0);
    const channels = [...new Set(roots.map((schedule) => channelOf(schedule, platform)))].join(', ');
    const counts = new Map<string, number>();
    for (const schedule of roots) counts.set(schedule.status, (counts.get(schedule.status) ?? 0) + 1);
    const status =
      post.approvalStatus === 'pending_review' || post.approvalStatus === 'rejected'
        ? wordsOf(post.approvalStatus)
        : counts.size === 1
          ? wordsOf([...counts.keys()][0]!)
          : [...counts].map(([name, count]) => `${count} ${name.toLowerCase()}`).join(', ');
    const times = roots.map((schedule) => (schedule.status === 'PUBLISHED' ? (schedule.publishedAt ?? schedule.scheduledAt) : schedule.scheduledAt)).filter((time): time is string => Boolean(time)).sort();
    return { id: post.id, text: post.content, channels: channels || '(none)', status: status || '(none)', time: timeOf(times[0], zone.name) };
  });
  const lines: string[] = [];
  if (!rows.length) lines.push('No posts.');
  else {
    const header = { id: 'ID', text: 'TEXT', channels: 'CHANNELS', status: 'STATUS', time: `TIME (${zone.name})` };
    const width = (key: keyof typeof header) => Math.max(...[header, ...rows].map((row) => [...row[key]].length));
    // The text and the channels share what the id, status and time leave of the terminal's width, each cut with an
    // ellipsis: the channels whole while the text keeps 30 characters, else two fifths; at least 12 each, however narrow.
    const rest = context.columns - (width('id') + width('status') + width('time') + 8);
    const channelsWidth = Math.min(width('channels'), Math.max(rest - 30, Math.floor((rest * 2) / 5), 12));
    const textWidth = Math.max(rest - channelsWidth, 12);
    lines.push(...aligned([header, ...rows].map((row) => [row.id, trimmed(row.text, textWidth), trimmed(row.channels, channelsWidth), row.status, row.time])));
  }
  if (pageInfo) {
    const next = pageInfo.hasNextPage ? `; the next: --page ${pageInfo.page + 1} (or --all)` : '';
    lines.push('', `Page ${pageInfo.page} of ${Math.max(pageInfo.totalPages, 1)}, ${pageInfo.total} post${pageInfo.total === 1 ? '' : 's'} in all${next}`);
  }
  if (rows.length && zone.why !== "the workspace's time zone") lines.push(`Times in ${zone.name}: ${zone.why}.`);
  return lines.join('\n');
}

/**
 * `posts create`: which slot each schedule took, read back from the posts made (the answer names them, not their
 * schedules): "Scheduled on team.example (Bluesky) for Tue, Dec 1, 2026, 9:00 AM", or that a draft was saved; then
 * the zone of those times.
 */
async function createPost(body: unknown, context: RenderContext): Promise<string> {
  const created = body as { postIds: string[]; approvalStatus: string | null; message: string };
  const [platform, zone] = await Promise.all([platformNames(context), zoneOf(context)]);
  const get = commandLine('getPost');
  const lines: string[] = [];
  for (const id of created.postIds) {
    const post = (await context.read('getPost', { id })) as Post;
    lines.push(`Post ${post.id}: ${trimmed(post.content, Math.max(context.columns - 44, 20))}`);
    const roots = post.schedules.filter((schedule) => schedule.threadOrder === 0);
    for (const schedule of roots) {
      const channel = channelOf(schedule, platform);
      const parts = post.schedules.filter((other) => other.threadOrder > 0 && other.integration.id === schedule.integration.id).length;
      const thread = parts ? `, with ${parts} thread part${parts === 1 ? '' : 's'}` : '';
      const said: Record<string, string> = {
        DRAFT: `Saved a draft for ${channel}${schedule.scheduledAt ? `, dated ${timeOf(schedule.scheduledAt, zone.name)}` : ''}${thread}, not scheduled`,
        SCHEDULED: `Scheduled on ${channel} for ${timeOf(schedule.scheduledAt, zone.name)}${thread}`,
        PUBLISHING: `Publishing on ${channel} now${thread}`,
        PUBLISHED: `Published on ${channel} at ${whenOf(schedule, zone.name)}${thread}${schedule.releaseUrl ? `: ${schedule.releaseUrl}` : ''}`,
        FAILED: `Failed on ${channel}${schedule.failureReason ? `: ${schedule.failureReason}` : ''}`,
      };
      lines.push(`  ${said[schedule.status] ?? `${wordsOf(schedule.status)} on ${channel}, ${timeOf(schedule.scheduledAt, zone.name)}`}`);
    }
  }
  if (created.approvalStatus === 'pending_review') lines.push('Waiting for approval: nothing publishes until an approver approves it.');
  if (lines.length) lines.push(`Times in ${zone.name} (${zone.why}).`);
  if (get && created.postIds.length) lines.push(`See a post: ${get} ${created.postIds[0]}`);
  return lines.join('\n');
}

/** What others wrote (a post's text, a channel's name, a failure) cannot steer the terminal: control characters but the line's end show as �. */
const printable = (text: string) => text.replace(/\p{Cc}/gu, (character) => (character === '\n' ? character : '\uFFFD'));

/** The readings of their own, by operation id (test/cli.test.ts checks each is an operation of the registry). */
export const renderers: Record<string, Renderer> = Object.fromEntries(
  Object.entries({ getPost, listPosts, createPost }).map(([id, render]): [string, Renderer] => [id, async (body, context) => printable(await render(body, context))]),
);
