/**
 * The list operations alone: each run in the bench's own process through the one pipeline (`Core.runAs`, as the
 * admin command runs operations), on the service's database, `concurrency` calls at once, with no HTTP, no socket
 * and no key check in front. What a list costs the service beyond users/me is its queries and the JSON they build;
 * this measures that part on its own. When it alone answers fewer lists a second than a target asks of the whole
 * request, no work on the HTTP side can meet that target.
 */
import { performance } from 'node:perf_hooks';
import { loadConfig } from '../src/process/config.js';
import { openCore } from '../src/service/core.js';
import { createLogger } from '../src/process/logger.js';
import { cpuPerRequest, sampleCpu, type CpuPerRequest } from './procs.js';

export interface InProcessCase {
  id: 'posts' | 'schedules';
  operationId: string;
  /** The exact bytes the service answered over HTTP: every in-process answer must serialise to them. */
  bytes: Buffer;
}

export interface InProcessFigure {
  id: InProcessCase['id'];
  operationId: string;
  callsPerSecond: number;
  /**
   * CPU per call while measured: this process's (`process`: Node's share of a call, the pipeline, query building, JSON
   * parsing, output check), Postgres's, the rest of the machine's, and idle.
   */
  cpuMsPerCall: CpuPerRequest;
  /** Calls that failed, or answered other bytes than the service did over HTTP. */
  wrongAnswers: number;
}

export async function measureInProcess(
  env: NodeJS.ProcessEnv,
  member: { userId: string; workspaceId: string },
  cases: InProcessCase[],
  options: { concurrency: number; warmupSeconds: number; durationSeconds: number },
): Promise<InProcessFigure[]> {
  const core = await openCore(loadConfig(env), createLogger('warn'));
  try {
    const figures: InProcessFigure[] = [];
    for (const { id, operationId, bytes } of cases) {
      // The garbage this process left making the fixture (a million schedules' rows, the load runs' figures) is collected
      // first: collected during the measure, it cost the lists half their calls a second (npm run bench passes
      // --expose-gc).
      (globalThis as { gc?: () => void }).gc?.();
      const expected = bytes.toString('utf8');
      let wrongAnswers = 0;
      let answered = 0;
      const call = async () => {
        const outcome = await core.runAs(member, operationId, {});
        // Every call must succeed; every 16th answer is compared whole, so the check costs little of what is measured.
        if (!outcome.ok || (answered++ % 16 === 0 && JSON.stringify(outcome.body) !== expected)) wrongAnswers++;
      };
      const loop = async (until: number) => {
        let calls = 0;
        while (performance.now() < until) {
          await call();
          calls++;
        }
        return calls;
      };
      const during = (seconds: number) => {
        const until = performance.now() + seconds * 1000;
        return Promise.all(Array.from({ length: options.concurrency }, () => loop(until)));
      };
      await during(options.warmupSeconds);
      wrongAnswers = 0;
      const started = performance.now();
      const cpuBefore = sampleCpu(process.pid);
      const calls = (await during(options.durationSeconds)).reduce((sum, n) => sum + n, 0);
      const cpuMsPerCall = cpuPerRequest(cpuBefore, sampleCpu(process.pid), calls);
      figures.push({
        id,
        operationId,
        callsPerSecond: calls / ((performance.now() - started) / 1000),
        cpuMsPerCall,
        wrongAnswers,
      });
    }
    return figures;
  } finally {
    await core.close();
  }
}
