/**
 * Child process entry (forked by bench/load.ts): receives a LoadRequest, runs autocannon for the warm-up and
 * then for the measurement, and sends back a LoadResult.
 */
import autocannon from 'autocannon';
import type { LoadRequest, LoadResult } from './load.js';
import { cpuPerRequest, sampleCpu } from './procs.js';

/**
 * Cheap on the hot path (the load generator shares the cores with the service): a plain substring test for
 * the usual success shape, and a full parse only when it fails, to rule out a false alarm.
 */
function isToolSuccess(body: string): boolean {
  if (body.includes('"result"') && !body.includes('"isError":true')) return true;
  try {
    const message = JSON.parse(body) as { result?: { isError?: boolean } };
    return message.result !== undefined && message.result.isError !== true;
  } catch {
    return false;
  }
}

function percentile(sorted: Float64Array, p: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

async function run(request: LoadRequest): Promise<LoadResult> {
  const options: autocannon.Options = {
    url: request.url,
    method: request.method,
    headers: request.headers,
    body: request.body,
    connections: request.connections,
    ...(request.check === 'mcp-tool' && { verifyBody: isToolSuccess }),
  };
  if (request.warmupSeconds > 0) await autocannon({ ...options, duration: request.warmupSeconds });

  // autocannon's own histogram keeps whole milliseconds; at these latencies that is too coarse for a ratio.
  const latencies: number[] = [];
  const pid = request.answeringPid;
  const cpuBefore = pid === undefined ? undefined : sampleCpu(pid);
  const instance = autocannon({ ...options, duration: request.durationSeconds });
  instance.on('response', (_client, _status, _bytes, responseTime) => void latencies.push(responseTime));
  const result = await instance;
  const cpuMsPerRequest = cpuBefore && cpuPerRequest(cpuBefore, sampleCpu(pid!), latencies.length);

  const sorted = Float64Array.from(latencies).sort();
  const countOf = (wanted: (status: number) => boolean) =>
    Object.entries(result.statusCodeStats)
      .filter(([status]) => wanted(Number(status)))
      .reduce((sum, [, { count }]) => sum + Number(count), 0);
  const { expectedStatus } = request;
  return {
    requestsPerSecond: result.requests.average,
    latencyP50Ms: percentile(sorted, 50),
    latencyP99Ms: percentile(sorted, 99),
    responses: latencies.length,
    wrongStatus: expectedStatus === undefined ? result.non2xx : countOf((status) => status !== expectedStatus),
    status5xx: countOf((status) => status >= 500),
    toolErrors: result.mismatches,
    connectionErrors: result.errors,
    ...(cpuMsPerRequest && { cpuMsPerRequest }),
  };
}

process.once('message', (request) => {
  run(request as LoadRequest).then(
    (result) => process.send!(result, () => process.exit(0)),
    (error: unknown) => {
      console.error('load generator failed:', error);
      process.exit(1);
    },
  );
});
// Nothing to report to once the bench is gone (Ctrl-C, a crash): stop loading the service.
process.once('disconnect', () => process.exit(1));
