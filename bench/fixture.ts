/**
 * The workspaces the scenarios read and write, all on a plan whose quotas the bench cannot spend:
 * - `lists`: 50 tags, two channels and a small, realistic set of posts and schedules, created through
 *   REST POST /posts as a user would, for the list scenarios (GET /posts, GET /schedules, GET /tags, users/me);
 * - `writes`: two channels that POST /posts creates on, so the timed creates never change what the list
 *   scenarios (and their baselines) answer.
 */
import { bootstrap, createIntegration, createTags, defineGenerousPlan, type Workspace } from './admin.js';

export const PLAN = 'bench';
/** Posts a month per platform, and requests a minute: far more than any run can spend (the admin command takes up to nine digits). */
export const ALLOWANCE = 100_000_000;
/** Admin commands at once while making tags: each is a node process of its own. */
const ADMIN_CONCURRENCY = 4;
/** Posts of the lists workspace: three pages of GET /posts, each post on both channels. */
const LIST_POSTS = 30;

export interface ChannelledWorkspace extends Workspace {
  /** A Bluesky channel and a LinkedIn one, in that order. */
  integrationIds: [string, string];
}

export interface Fixture {
  lists: ChannelledWorkspace & { tagIds: string[] };
  writes: ChannelledWorkspace;
}

export async function makeFixture(env: NodeJS.ProcessEnv, serviceUrl: string, tagCount: number): Promise<Fixture> {
  await defineGenerousPlan(env, PLAN, ALLOWANCE);
  const [lists, writes] = await Promise.all([channelledWorkspace(env, 'Lists'), channelledWorkspace(env, 'Writes')]);
  await createTags(env, lists.workspaceId, tagCount, ADMIN_CONCURRENCY);
  const tagIds = await tagIdsOf(serviceUrl, lists.apiKey, tagCount);
  await createListPosts(serviceUrl, { ...lists, tagIds });
  return { lists: { ...lists, tagIds }, writes };
}

async function channelledWorkspace(env: NodeJS.ProcessEnv, name: string): Promise<ChannelledWorkspace> {
  const workspace = await bootstrap(env, PLAN);
  const integrationIds = await Promise.all([
    createIntegration(env, workspace.workspaceId, 'BLUESKY', `${name} on Bluesky`),
    createIntegration(env, workspace.workspaceId, 'LINKEDIN', `${name} on LinkedIn`),
  ]);
  return { ...workspace, integrationIds: integrationIds as [string, string] };
}

async function tagIdsOf(serviceUrl: string, apiKey: string, count: number): Promise<string[]> {
  const response = await fetch(`${serviceUrl}/api/v1/tags?limit=${count}`, { headers: { 'x-api-key': apiKey } });
  if (!response.ok) throw new Error(`GET /tags: status ${response.status}`);
  return ((await response.json()) as { items: { id: string }[] }).items.map((tag) => tag.id);
}

const SENTENCES = [
  'We just shipped calendar views for every channel.',
  'Three lessons from a year of scheduling posts across time zones.',
  'Our team is hiring: backend engineers who like Postgres.',
  'Thread: how we keep a page of the calendar fast at a million rows.',
  'Behind the scenes of this week\'s release, with a few screenshots. 🚀',
  'Join us on Thursday for a live Q&A about posting windows.',
  'A small change with a big effect: drafts now keep their dates.',
];

/**
 * One create per post, as a client would send them: most scheduled on both channels (SCHEDULED_TIME, three
 * hours apart, next January), some as drafts held on the calendar, some with tags, a first comment or a thread.
 */
async function createListPosts(serviceUrl: string, lists: ChannelledWorkspace & { tagIds: string[] }): Promise<void> {
  const firstSlot = Date.UTC(new Date().getUTCFullYear() + 1, 0, 5, 9);
  for (let index = 0; index < LIST_POSTS; index++) {
    const content = `${SENTENCES[index % SENTENCES.length]} (${index + 1}/${LIST_POSTS}) ${'More detail follows. '.repeat(index % 5)}`.trim();
    const row = {
      content,
      scheduledAt: new Date(firstSlot + index * 3 * 3600_000).toISOString(),
      tagIds: lists.tagIds.slice(index % 7, index % 7 + (index % 4)),
      ...(index % 3 === 0 && { firstComment: 'Link in the first comment: https://example.com/blog' }),
      ...(index % 10 === 4 && { thread: [{ content: 'Part two of the thread.' }, { content: 'And the last part.' }] }),
    };
    // LinkedIn has no threads: a post with one goes to the Bluesky channel alone.
    const channels = row.thread ? [lists.integrationIds[0]] : lists.integrationIds;
    const body = { rows: [row], shared: { selectedIntegrations: channels }, postAction: index % 6 === 5 ? 'DRAFT' : 'SCHEDULED_TIME' };
    const response = await fetch(`${serviceUrl}/api/v1/posts`, {
      method: 'POST',
      headers: { 'x-api-key': lists.apiKey, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    if (response.status !== 201) throw new Error(`POST /posts for the lists fixture: status ${response.status}: ${await response.text()}`);
  }
}
