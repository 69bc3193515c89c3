/** What is measured: four requests, each checked once for the right answer before it is timed. */
import { isDeepStrictEqual } from 'node:util';
import type { LoadRequest } from './load.js';

export type ScenarioId = 'baseline' | 'rest-users-me' | 'rest-tags' | 'mcp-users-me';

export interface Scenario {
  id: ScenarioId;
  title: string;
  /** The process that answers, whose memory is reported: the baseline server or the service. */
  pid: number;
  request: Pick<LoadRequest, 'url' | 'method' | 'headers' | 'body' | 'check'>;
  /** Why the answer is wrong, or undefined when it is right. */
  verify(status: number, body: Buffer): string | undefined;
}

export const USERS_ME_PATH = '/api/v1/users/me';
export const MCP_PROTOCOL_VERSION = '2025-06-18';

export interface Targets {
  serviceUrl: string;
  servicePid: number;
  baselineUrl: string;
  baselinePid: number;
  apiKey: string;
  /** The exact bytes of GET /api/v1/users/me, which the baseline serves too. */
  usersMe: Buffer;
  tagCount: number;
}

export function scenarios(t: Targets): Scenario[] {
  const user = JSON.parse(t.usersMe.toString('utf8')) as unknown;
  const keyed = { 'x-api-key': t.apiKey };
  const ok = (status: number, problem: () => string | undefined) => (status >= 200 && status < 300 ? problem() : `status ${status}`);
  return [
    {
      id: 'baseline',
      title: 'Baseline: bare Express, constant body',
      pid: t.baselinePid,
      request: { url: t.baselineUrl + USERS_ME_PATH, method: 'GET', headers: {}, check: 'status' },
      verify: (status, body) => ok(status, () => (body.equals(t.usersMe) ? undefined : 'body differs from GET /users/me')),
    },
    {
      id: 'rest-users-me',
      title: 'REST GET /api/v1/users/me',
      pid: t.servicePid,
      request: { url: t.serviceUrl + USERS_ME_PATH, method: 'GET', headers: keyed, check: 'status' },
      verify: (status, body) => ok(status, () => (isDeepStrictEqual(JSON.parse(body.toString()), user) ? undefined : 'a different user')),
    },
    {
      id: 'rest-tags',
      title: `REST GET /api/v1/tags (${t.tagCount} tags)`,
      pid: t.servicePid,
      request: { url: `${t.serviceUrl}/api/v1/tags?limit=${t.tagCount}`, method: 'GET', headers: keyed, check: 'status' },
      verify: (status, body) =>
        ok(status, () => {
          const count = (JSON.parse(body.toString()) as { items: unknown[] }).items.length;
          return count === t.tagCount ? undefined : `${count} tags instead of ${t.tagCount}`;
        }),
    },
    {
      id: 'mcp-users-me',
      title: 'MCP tools/call getCurrentUser',
      pid: t.servicePid,
      request: {
        url: `${t.serviceUrl}/mcp`,
        method: 'POST',
        headers: {
          ...keyed,
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          'mcp-protocol-version': MCP_PROTOCOL_VERSION,
        },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'getCurrentUser', arguments: {} } }),
        check: 'mcp-tool',
      },
      verify: (status, body) =>
        ok(status, () => {
          const { result } = JSON.parse(body.toString()) as { result?: { isError?: boolean; structuredContent?: unknown } };
          if (!result || result.isError) return `not a tool result: ${body.toString().slice(0, 200)}`;
          return isDeepStrictEqual(result.structuredContent, user) ? undefined : 'structuredContent differs from GET /users/me';
        }),
    },
  ];
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
