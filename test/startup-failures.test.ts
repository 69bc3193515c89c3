import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { chmod, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { freePort } from '../src/process/free-port.js';
import { postmasterOf, removeDataDir, run } from './support/processes.js';

/**
 * Every failure to start is one line on stderr that names what failed and what to do, and exit code 1: never
 * an unhandled error or a stack (a stack only at LOG_LEVEL=debug). Each case runs the real npm script.
 */

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'postwise-failures-'));
  await chmod(dir, 0o755); // reachable by the postgres user, as a DATA_DIR's parent should be
});
afterAll(() => rm(dir, { recursive: true, force: true }));

/**
 * Runs `npm run <script>` to its end: its exit code, its output, and its lines that are neither JSON log
 * lines nor npm's own warnings about the machine's npm configuration.
 */
async function failedStart(script: string, env: Record<string, string>, args: string[] = []) {
  const running = run(['run', '--silent', script, '--', ...args], { HOST: '127.0.0.1', PORT: '0', DATABASE_URL: '', LOG_LEVEL: 'info', ...env });
  const code = await running.exited;
  const lines = running.output().trim().split('\n');
  return { code, line: lines.filter((line) => !line.startsWith('{') && !line.startsWith('npm warn')), output: running.output() };
}

const noStack = (output: string) => expect(output).not.toMatch(/^\s+at /m);

describe.concurrent('a start that cannot succeed', () => {
  it('says which PORT is in use, and leaves no embedded Postgres running', async () => {
    const taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    const port = (taken.address() as { port: number }).port;
    const dataDir = join(dir, 'port');
    try {
      const result = await failedStart('api', { PORT: String(port), DATA_DIR: dataDir });
      expect(result.code).toBe(1);
      expect(result.line).toEqual([`postwise: PORT ${port} is in use on 127.0.0.1; set PORT to a free port (or 0 for any)`]);
      noStack(result.output);
      expect(result.output).toContain('embedded Postgres stopped');
      expect(await postmasterOf(dataDir)).toBeUndefined();
    } finally {
      taken.close();
      await removeDataDir(dataDir);
    }
  });

  it('says DATA_DIR is not writable; with LOG_LEVEL=debug, the stack follows', async () => {
    await writeFile(join(dir, 'a-file'), '');
    const dataDir = join(dir, 'a-file', 'data');
    const result = await failedStart('start', { DATA_DIR: dataDir });
    expect(result.code).toBe(1);
    expect(result.line).toEqual([
      `postwise: DATA_DIR ${dataDir} is not writable (a part of the path is not a directory); make it writable for this user or set DATA_DIR to a directory that is`,
    ]);
    const debug = await failedStart('start', { DATA_DIR: dataDir, LOG_LEVEL: 'debug' });
    expect(debug.code).toBe(1);
    expect(debug.line[0]).toBe(result.line[0]);
    expect(debug.output).toMatch(/^\s+at /m);
  });

  it('says a cluster is of another Postgres version', async () => {
    const dataDir = join(dir, 'old-cluster');
    await mkdir(join(dataDir, 'postgres'), { recursive: true, mode: 0o700 });
    await writeFile(join(dataDir, 'postgres', 'PG_VERSION'), '16\n');
    const result = await failedStart('admin', { DATA_DIR: dataDir }, ['bootstrap']);
    expect(result.code).toBe(1);
    expect(result.line).toEqual([
      `postwise: ${join(dataDir, 'postgres')} holds a cluster of Postgres 16, and the embedded Postgres is 18; ` +
        'move that directory away (or set DATA_DIR to another one) to start afresh, or upgrade it with pg_upgrade',
    ]);
    noStack(result.output);
  });

  it('says a configuration value is wrong', async () => {
    const result = await failedStart('worker', { PORT: 'eighty' });
    expect(result.code).toBe(1);
    expect(result.line).toEqual(['postwise: PORT must be a non-negative integer, got "eighty"']);
  });

  it('waits a bounded time for a DATABASE_URL that refuses connections, then says so', async () => {
    const url = `postgres://postwise:secret@127.0.0.1:${await freePort()}/postwise`;
    const started = Date.now();
    const result = await failedStart('api', { DATABASE_URL: url });
    expect(result.code).toBe(1);
    expect(Date.now() - started).toBeGreaterThan(20_000);
    expect(result.output).toContain('"message":"waiting up to 20 s for the database"');
    expect(result.output).not.toContain('secret');
    expect(result.line).toEqual([
      expect.stringMatching(/^postwise: DATABASE_URL \(postwise@127\.0\.0\.1:\d+\/postwise\) refused the connection after 20 s of retries; check that Postgres runs there/),
    ]);
    noStack(result.output);
  }, 60_000);

  it('waits a bounded time for a DATABASE_URL that refuses the password, then says so', async () => {
    const url = new URL(inject('postgresUrl'));
    url.password = 'not-the-password';
    const result = await failedStart('start', { DATABASE_URL: url.toString() });
    expect(result.code).toBe(1);
    expect(result.output).not.toContain('not-the-password');
    expect(result.line).toEqual([
      expect.stringMatching(/^postwise: DATABASE_URL \(.+\) refused the user name or password after 20 s of retries; check DATABASE_URL's user and password$/),
    ]);
    noStack(result.output);
  }, 60_000);

  it('says the Node version is too old, before anything else runs; every script checks it first', async () => {
    const olderNode = `data:text/javascript,Object.defineProperty(process,"versions",{value:{...process.versions,node:"18.20.4"}})`;
    const result = await promisify(execFile)(process.execPath, ['--import', olderNode, 'src/process/check-node.mjs']).catch((error) => error);
    expect(result.code).toBe(1);
    expect(result.stderr).toBe('postwise: Node 18.20.4 is too old; Postwise needs Node >=20.19 (install a newer Node, e.g. the current LTS)\n');
    const { scripts } = JSON.parse(readFileSync('package.json', 'utf8'));
    for (const name of ['start', 'api', 'worker', 'admin', 'mcp:stdio', 'bench', 'test']) {
      expect(scripts[name], name).toMatch(/^node src\/process\/check-node\.mjs && /);
    }
  });
});
