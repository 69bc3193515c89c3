/** Runs one load measurement in a child process (bench/load-worker.ts), so autocannon shares no event loop with us. */
import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { hasExited, waitForExit, type CpuPerRequest } from './procs.js';

export interface LoadRequest {
  url: string;
  method: 'GET' | 'POST';
  headers: Record<string, string>;
  body?: string;
  connections: number;
  warmupSeconds: number;
  durationSeconds: number;
  /** `mcp-tool`: every response body must be a JSON-RPC result that is not a tool error. */
  check: 'status' | 'mcp-tool';
  /** The one status every answer must have (201 for a create); any 2xx when not given. */
  expectedStatus?: number;
  /** The process that answers, whose CPU (beside Postgres's and the rest of the machine's) is measured a request. */
  answeringPid?: number;
}

export interface LoadResult {
  requestsPerSecond: number;
  latencyP50Ms: number;
  latencyP99Ms: number;
  responses: number;
  /** Answers with another status than expected: not 2xx, or not `expectedStatus` when given. */
  wrongStatus: number;
  status5xx: number;
  /** Bodies that failed the `mcp-tool` check. */
  toolErrors: number;
  /** Connection errors and timeouts. */
  connectionErrors: number;
  /** Over the measured seconds, when `answeringPid` was given: `process` is the answering process's. */
  cpuMsPerRequest?: CpuPerRequest;
}

export async function measure(request: LoadRequest): Promise<LoadResult> {
  const child = fork(fileURLToPath(new URL('./load-worker.ts', import.meta.url)), {
    execArgv: ['--import', 'tsx'],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const limitMs = (request.warmupSeconds + request.durationSeconds + 60) * 1000;
  try {
    return await new Promise<LoadResult>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`load generator gave no result within ${limitMs / 1000} s`)), limitMs);
      child.once('message', (result) => {
        clearTimeout(timer);
        resolve(result as LoadResult);
      });
      child.once('exit', (code, signal) => {
        clearTimeout(timer);
        reject(new Error(`load generator exited without a result (code ${code}, signal ${signal})`));
      });
      child.send(request);
    });
  } finally {
    if (!(await waitForExit(child, 5_000)) && !hasExited(child)) child.kill('SIGKILL');
  }
}
