/** Starts and stops bench/baseline-server.ts. */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { freePort, hasExited, waitForExit, waitUntil } from './procs.js';
import { projectRoot } from './service.js';

export interface Baseline {
  url: string;
  pid: number;
  stop(): Promise<void>;
}

/** `routes`: each path with the exact bytes it answers. */
export async function startBaseline(routes: Record<string, Buffer>): Promise<Baseline> {
  const port = await freePort();
  const entry = fileURLToPath(new URL('./baseline-server.ts', import.meta.url));
  // node with the tsx loader, not the tsx wrapper: the pid we get is the server itself.
  const child = spawn(process.execPath, ['--import', 'tsx', entry, String(port)], {
    cwd: projectRoot,
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  child.stdin!.end(JSON.stringify(Object.fromEntries(Object.entries(routes).map(([path, body]) => [path, body.toString('base64')]))));
  const stop = async () => {
    if (hasExited(child)) return;
    child.kill('SIGTERM');
    if (!(await waitForExit(child, 5_000))) child.kill('SIGKILL');
  };
  let ready = false;
  child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
    if (chunk.includes('ready')) ready = true;
  });
  try {
    await waitUntil('baseline start', 30_000, async () => ready, () => (hasExited(child) ? 'the baseline server exited' : undefined));
    return { url: `http://127.0.0.1:${port}`, pid: child.pid!, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}
