/**
 * Webhook deliveries (`npm run bench -- --only webhooks`): `events` post.created events made through POST /posts (drafts,
 * 50 rows a request, four requests at once), each delivered by the service's worker to a receiver on loopback that
 * answers 200 at once. Delay: the receiver's clock at arrival − the event's createdAt (its transaction's start), both
 * on this machine. Throughput: events / (last arrival − first createdAt). The service trusts 127.0.0.1 for this
 * (MEDIA_FETCH_ALLOW_HOSTS, bench/service.ts).
 */
import { once } from 'node:events';
import { execFile } from 'node:child_process';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { promisify } from 'node:util';
import { bootstrap, createIntegration, defineGenerousPlan } from './admin.js';
import { projectRoot, type RunningService } from './service.js';

export interface WebhookFigures {
  events: number;
  deliveredPerSecond: number;
  delayP50Ms: number;
  delayP99Ms: number;
  delayMaxMs: number;
}

const ROWS_PER_REQUEST = 50;
const PLAN = 'bench-webhooks';

export async function measureWebhooks(service: RunningService, events: number, progress: (line: string) => void): Promise<WebhookFigures> {
  const arrivals = new Map<string, { at: number; createdAt: number }>();
  let allArrived: () => void = () => {};
  const arrived = new Promise<void>((resolve) => (allArrived = resolve));
  const receiver = createServer((request, response) => {
    let body = '';
    request.on('data', (chunk: Buffer) => (body += chunk));
    request.on('end', () => {
      const at = Date.now();
      const event = JSON.parse(body) as { id: string; createdAt: string };
      if (!arrivals.has(event.id)) arrivals.set(event.id, { at, createdAt: Date.parse(event.createdAt) });
      response.end('ok');
      if (arrivals.size >= events) allArrived();
    });
  });
  receiver.listen(0, '127.0.0.1');
  await once(receiver, 'listening');
  try {
    await defineGenerousPlan(service.env, PLAN, 1_000_000);
    const ws = await bootstrap(service.env, PLAN);
    const channel = await createIntegration(service.env, ws.workspaceId, 'LINKEDIN', 'Webhooks bench');
    const url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
    const { stdout } = await promisify(execFile)(
      process.execPath,
      ['--import', 'tsx', 'src/admin/main.ts', 'create-webhook', '--workspace', ws.workspaceId, '--url', url, '--event-types', 'post.created'],
      { cwd: projectRoot, env: service.env },
    );
    if (!JSON.parse(stdout.trim().split('\n').at(-1)!).id) throw new Error(`create-webhook: ${stdout}`);

    progress(`webhooks: ${events} events (post.created, ${ROWS_PER_REQUEST} drafts a request), delivered to a receiver on loopback`);
    const requests = Array.from({ length: Math.ceil(events / ROWS_PER_REQUEST) }, (_, index) => index);
    const send = async () => {
      for (let index = requests.shift(); index !== undefined; index = requests.shift()) {
        const rows = Array.from({ length: Math.min(ROWS_PER_REQUEST, events - index * ROWS_PER_REQUEST) }, (_, i) => ({ content: `Webhook bench ${index}.${i}` }));
        const response = await fetch(`${service.url}/api/v1/posts`, {
          method: 'POST',
          headers: { 'x-api-key': ws.apiKey, 'content-type': 'application/json' },
          body: JSON.stringify({ rows, shared: { selectedIntegrations: [channel] }, postAction: 'DRAFT' }),
        });
        if (response.status !== 201) throw new Error(`POST /posts: status ${response.status}: ${await response.text()}`);
      }
    };
    await Promise.all(Array.from({ length: 4 }, send));
    const timeout = new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`webhooks: ${arrivals.size} of ${events} delivered after 120 s`)), 120_000).unref());
    await Promise.race([arrived, timeout]);

    const delays = [...arrivals.values()].map((arrival) => arrival.at - arrival.createdAt).sort((a, b) => a - b);
    const first = Math.min(...[...arrivals.values()].map((arrival) => arrival.createdAt));
    const last = Math.max(...[...arrivals.values()].map((arrival) => arrival.at));
    return {
      events,
      deliveredPerSecond: Math.round((events / ((last - first) / 1000)) * 10) / 10,
      delayP50Ms: percentile(delays, 50),
      delayP99Ms: percentile(delays, 99),
      delayMaxMs: delays.at(-1)!,
    };
  } finally {
    receiver.closeAllConnections();
    receiver.close();
  }
}

export function renderWebhooks(figures: WebhookFigures): string {
  return [
    `### Webhook deliveries (${figures.events} events, a receiver on loopback answering 200 at once)`,
    '',
    '| events | delivered a second | delay p50 ms | delay p99 ms | delay max ms |',
    '|--:|--:|--:|--:|--:|',
    `| ${figures.events} | ${figures.deliveredPerSecond} | ${figures.delayP50Ms} | ${figures.delayP99Ms} | ${figures.delayMaxMs} |`,
    '',
    'Delay: from the event\'s transaction to the receiver\'s reading of the request. Throughput: events over the time from the first event to the last arrival.',
  ].join('\n');
}

/** The value at or below which `p` % of the sorted values lie. */
function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}
