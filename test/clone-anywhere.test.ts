import { execFile } from 'node:child_process';
import { chmod, chown, cp, lstat, mkdir, mkdtemp, readdir, readlink, rm, stat } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { freePort } from '../src/process/free-port.js';
import { admin, checkout, cleanUp, gone, postmasterOf, run, stop, waitFor, type Running } from './support/processes.js';
import { call } from './support/service.js';

/**
 * The README's commands from a checkout anywhere, as root or as an ordinary user: they work, and change the
 * permissions of no directory the user did not hand over.
 */

const exec = promisify(execFile);
const isRoot = process.getuid?.() === 0;

/** The modes of every directory from / down to `path`. */
async function modesOnTheWay(path: string) {
  const modes: Record<string, string> = {};
  for (let dir = path; dir !== dirname(dir); dir = dirname(dir)) modes[dir] = ((await stat(dir)).mode & 0o7777).toString(8);
  return modes;
}

describe.concurrent('a checkout anywhere', () => {
  it('in a directory only its owner may enter (0700, as a home is), under a path with spaces: npm test and npm start work, as root or not', async () => {
    const home = await mkdtemp(join(tmpdir(), 'postwise-root-home-')); // mode 0700
    const project = join(home, 'my projects', 'postwise');
    const started: Running[] = [];
    try {
      await checkout(project);
      const modes = await modesOnTheWay(project);

      // npm test's start-up: the suite's own embedded Postgres, from binaries under the 0700 directory.
      const test = run(['test', '--', 'test/shutdown.test.ts'], {}, { cwd: project });
      started.push(test);
      expect(await test.exited, test.output()).toBe(0);
      expect(test.output()).toMatch(/1 passed/);

      const env = { PORT: String(await freePort()), HOST: '127.0.0.1', DATABASE_URL: '', LOG_LEVEL: 'info' };
      const first = run(['start'], env, { cwd: project });
      started.push(first);
      const [, apiKey] = await waitFor(first, /apiKey\s+(pw_\S+)/);
      const { pid } = (await postmasterOf(join(project, '.data')))!;
      if (isRoot) {
        // Postgres runs as the postgres user, who meets the 0700 directory: cluster and binaries go where it can reach.
        expect(first.output()).toContain('the postgres user cannot reach DATA_DIR, so the cluster lives where it can, linked from DATA_DIR');
        expect(first.output()).toContain(`"reason":"${home} is mode 0700"`);
        expect(await readlink(join(project, '.data', 'postgres'))).toMatch(/^\/var\/lib\/postwise\//);
        expect(await readlink(`/proc/${pid}/exe`)).toMatch(new RegExp(`^${tmpdir()}/postwise-postgres-`));
      } else {
        // Postgres runs as the user who owns the directory: everything stays where it is.
        expect(first.output()).not.toContain('postgres user');
        expect((await lstat(join(project, '.data', 'postgres'))).isDirectory()).toBe(true);
        expect(await readlink(`/proc/${pid}/exe`)).toMatch(new RegExp(`^${project}/node_modules/`));
      }
      expect((await call(`http://127.0.0.1:${env.PORT}/api/v1/users/me`, { key: apiKey })).status).toBe(200);
      expect(await stop(first)).toBe(true);
      expect(first.output()).not.toContain('"level":"error"');
      expect(await gone(pid)).toBe(true);

      // The second start finds its cluster and changes nothing, so it says nothing of changes.
      const second = run(['start'], env, { cwd: project });
      started.push(second);
      await waitFor(second, /MCP\s+http/);
      expect(second.output()).not.toMatch(/cannot reach|initialising|copied|traverse/);
      expect((await call(`http://127.0.0.1:${env.PORT}/api/v1/users/me`, { key: apiKey })).status).toBe(200);
      expect(await stop(second)).toBe(true);

      expect(await modesOnTheWay(project)).toEqual(modes);
    } finally {
      await cleanUp(started, join(project, '.data'));
      await rm(home, { recursive: true, force: true });
    }
  }, 180_000);

  it('as an ordinary user, from a checkout it cannot write (under a path with a space), with DATA_DIR in its own 0700 home: npm start and the admin command work', async () => {
    // Run as root, the test acts as `nobody` (every Linux has it; nothing to create or remove), with a 0700 home
    // of its own; run as an ordinary user already, it acts as itself.
    let user: { name: string; uid: number; gid: number; home: string } | undefined;
    const readOnly = await mkdtemp(join(tmpdir(), 'postwise-read-only-'));
    if (isRoot) {
      const [uid, gid] = await Promise.all([exec('id', ['-u', 'nobody']), exec('id', ['-g', 'nobody'])]);
      user = { name: 'nobody', uid: Number(uid.stdout), gid: Number(gid.stdout), home: join(readOnly, 'home') };
      await mkdir(user.home);
      await chown(user.home, user.uid, user.gid);
      await chmod(user.home, 0o700);
    }
    const project = join(readOnly, 'my project');
    const dataDir = join(user?.home ?? readOnly, 'postwise data');
    const started: Running[] = [];
    try {
      await checkout(project);
      // Root's and readable by the user; run as an ordinary user already, the checkout is made read-only.
      await chmod(user ? readOnly : project, user ? 0o755 : 0o555);
      const env = { PORT: String(await freePort()), HOST: '127.0.0.1', DATABASE_URL: '', LOG_LEVEL: 'info', DATA_DIR: dataDir };
      const server = run(['start'], env, { cwd: project, user });
      started.push(server);
      const [, apiKey] = await waitFor(server, /apiKey\s+(pw_\S+)/);
      expect(server.output()).not.toContain('postgres user');
      if (user) expect((await stat(join(dataDir, 'postgres'))).uid).toBe(user.uid);
      const boot = await admin(['bootstrap'], env, { cwd: project, user });
      expect(boot.code).toBe(0);
      expect((await call(`http://127.0.0.1:${env.PORT}/api/v1/users/me`, { key: boot.json.apiKey })).status).toBe(200);
      expect((await call(`http://127.0.0.1:${env.PORT}/api/v1/users/me`, { key: apiKey })).status).toBe(200);
      const { pid } = (await postmasterOf(dataDir))!;
      expect(await stop(server)).toBe(true);
      expect(server.output()).not.toContain('"level":"error"');
      expect(await gone(pid)).toBe(true);
    } finally {
      await cleanUp(started, dataDir);
      await chmod(project, 0o755).catch(() => {});
      await rm(readOnly, { recursive: true, force: true });
      if (!user) await rm(dataDir, { recursive: true, force: true });
    }
  }, 120_000);

  it("under a path with a space, tools/build-native.mjs (postinstall's build of better-sqlite3) builds a native dependency from source and makes nothing outside it", async () => {
    // gyp's Makefile runs `mkdir -p <absolute path>` unquoted: unfixed, this made `my` beside `my project`.
    const parent = await mkdtemp(join(tmpdir(), 'postwise-native-'));
    const project = join(parent, 'my project');
    const addon = join(project, 'node_modules', 'native-addon');
    try {
      await cp('tools', join(project, 'tools'), { recursive: true });
      await cp('test/support/native-addon', addon, { recursive: true });
      const build = () => run(['exec', '--', 'node', 'tools/build-native.mjs', 'node_modules/native-addon'], {}, { cwd: project });

      const first = build();
      expect(await first.exited, first.output()).toBe(0);
      expect(first.output()).toContain('postwise: building native-addon from source with node-gyp');
      const binary = join(addon, 'build', 'Release', 'addon.node');
      expect(createRequire(import.meta.url)(binary)).toEqual({ answer: 42 });
      expect(await readdir(parent)).toEqual(['my project']);
      expect((await readdir(addon)).sort()).toEqual(['addon.c', 'binding.gyp', 'build', 'package.json']);

      // Every npm install runs postinstall: a binary that loads is kept.
      const builtAt = (await stat(binary)).mtimeMs;
      const second = build();
      expect(await second.exited, second.output()).toBe(0);
      expect(second.output()).not.toContain('building');
      expect((await stat(binary)).mtimeMs).toBe(builtAt);
    } finally {
      await rm(parent, { recursive: true, force: true });
    }
  }, 60_000);
});
