import { spawn } from 'node:child_process';
import { chmod, lstat, mkdtemp, readdir, readFile, readlink, rename, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { freePort } from '../src/process/free-port.js';
import { admin, alive, cleanUp, gone, postmasterOf, run, stop, waitFor, type Running } from './support/processes.js';
import { call } from './support/service.js';

/**
 * Run as root under a directory closed to the postgres user (a 0700 home), the embedded cluster lives in
 * CLUSTERS_DIR, linked from DATA_DIR; deleting DATA_DIR leaves it there. `npm run admin -- prune-clusters`
 * lists those whose DATA_DIR is provably gone and removes them with --yes, and only those. Each test has a
 * CLUSTERS_DIR of its own under the temporary directory: the real /var/lib/postwise is never touched.
 */

const isRoot = process.getuid?.() === 0;

/** Each test starts processes, several at once: generous, as the machine may be busy. */
const TIMEOUT_MS = 180_000;

async function directories() {
  const clusters = await mkdtemp(join(tmpdir(), 'postwise-clusters-'));
  await chmod(clusters, 0o755); // the postgres user goes through it to its cluster
  const home = await mkdtemp(join(tmpdir(), 'postwise-prune-home-')); // mode 0700, closed to the postgres user
  return { clusters, home };
}

function environment(clusters: string, dataDir: string) {
  return { CLUSTERS_DIR: clusters, DATA_DIR: dataDir, DATABASE_URL: '', HOST: '127.0.0.1', LOG_LEVEL: 'info' };
}

/**
 * `npm run admin -- prune-clusters`, with a DATA_DIR that does not exist and a DATABASE_URL nothing answers
 * on: it must need neither (the test checks that DATA_DIR was not made).
 */
async function pruneClusters(clusters: string, home: string, ...args: string[]) {
  const env = { CLUSTERS_DIR: clusters, DATA_DIR: join(home, 'no data dir'), DATABASE_URL: 'postgres://postwise:x@127.0.0.1:1/postwise' };
  return admin(['prune-clusters', ...args], env);
}

/** The home in CLUSTERS_DIR of a DATA_DIR's cluster, which DATA_DIR/postgres links to. */
async function homeOf(dataDir: string) {
  return dirname(await readlink(join(dataDir, 'postgres')));
}

const exists = (path: string) =>
  lstat(path).then(
    () => true,
    () => false,
  );

/**
 * Stops the Postgres a test left running whose DATA_DIR it deleted: `pid`, known to be still the test's, and any
 * other a cluster in CLUSTERS_DIR names (had a faulty prune removed its cluster, only `pid` would be left).
 */
async function stopPostmasters(clusters: string, pid: number | undefined) {
  const pids = new Set(pid ? [pid] : []);
  for (const name of await readdir(clusters).catch(() => [])) {
    pids.add(Number((await readFile(join(clusters, name, 'postgres', 'postmaster.pid'), 'utf8').catch(() => '')).split('\n')[0]));
  }
  for (const found of pids) {
    if (found > 0 && alive(found)) {
      process.kill(found, 'SIGQUIT');
      await gone(found);
    }
  }
}

/** Run as an ordinary user: the cluster of a DATA_DIR under a 0700 home stays in it (no link), and nothing is pruned. */
async function expectNothingRelocated() {
  const { clusters, home } = await directories();
  const dataDir = join(home, '.data');
  try {
    const created = await admin(['bootstrap', '--json'], environment(clusters, dataDir));
    expect(created.code).toBe(0);
    expect((await lstat(join(dataDir, 'postgres'))).isDirectory()).toBe(true);
    expect(await readdir(clusters)).toEqual([]);
    expect((await pruneClusters(clusters, home, '--yes')).json).toEqual({ clustersDir: clusters, orphaned: [], kept: [], orphanedBytes: 0 });
  } finally {
    await rm(clusters, { recursive: true, force: true });
    await rm(home, { recursive: true, force: true });
  }
}

describe.concurrent('prune-clusters: the clusters root placed outside DATA_DIR', () => {
  it('needs no database: it neither starts nor joins a cluster, and finds nothing in a CLUSTERS_DIR that does not exist', async () => {
    const { clusters, home } = await directories();
    try {
      const missing = join(clusters, 'not made');
      const pruned = await pruneClusters(missing, home, '--yes');
      expect(pruned.code).toBe(0);
      expect(pruned.json).toEqual({ clustersDir: missing, orphaned: [], kept: [], orphanedBytes: 0 });
      expect(await exists(join(home, 'no data dir'))).toBe(false);
      expect(await exists(missing)).toBe(false);

      // Not a directory: an error as every admin command reports one.
      await writeFile(join(clusters, 'a file'), '');
      const failed = await pruneClusters(join(clusters, 'a file'), home);
      expect(failed.code).toBe(1);
      expect(failed.json).toEqual({ code: 'CLUSTERS_DIR_UNREADABLE', message: expect.stringContaining(join(clusters, 'a file')) });
    } finally {
      await rm(clusters, { recursive: true, force: true });
      await rm(home, { recursive: true, force: true });
    }
  }, TIMEOUT_MS);

  // Clusters are placed outside DATA_DIR only as root (Postgres runs as the postgres user then); run as an ordinary
  // user, each test checks that instead: the cluster stays in DATA_DIR, and there is nothing to prune.
  describe('run as root', () => {
    it('lists the clusters of deleted or relinked DATA_DIRs with their sizes and removes them with --yes; keeps the ones in use, owned, or whose owner is not provably gone', async () => {
      if (!isRoot) return expectNothingRelocated();
      const { clusters, home } = await directories();
      const dataDir = (name: string) => join(home, name, '.data');
      const started: Running[] = [];
      let runningPostmaster: number | undefined;
      const dataDirs = ['deleted', 'relinked', 'running', 'vanished/parent', 'unrecorded', 'unreadable', 'moved'].map(dataDir);
      try {
        // npm start on one, and the admin command (which starts the cluster and stops it again) on the others, at once.
        const env = { ...environment(clusters, dataDir('running')), PORT: String(await freePort()) };
        const server = run(['start'], env);
        started.push(server);
        const made = await Promise.all(dataDirs.filter((path) => path !== env.DATA_DIR).map((path) => admin(['bootstrap'], environment(clusters, path))));
        for (const { code, json } of made) expect(code, JSON.stringify(json)).toBe(0);
        const [, apiKey] = await waitFor(server, /apiKey\s+(pw_\S+)/);
        const homes: Record<string, string> = Object.fromEntries(await Promise.all(dataDirs.map(async (path) => [path, await homeOf(path)])));
        const homeFor = (name: string) => homes[dataDir(name)]!;
        for (const path of Object.values(homes)) expect(dirname(path)).toBe(clusters);
        // The banner says where the cluster lives, as it is not in DATA_DIR.
        expect(server.output()).toContain(`  cluster    ${homeFor('running')}/postgres (linked from ${env.DATA_DIR}/postgres)`);

        // Deleted outright, as a CI machine does between runs.
        await rm(dataDir('deleted'), { recursive: true });
        // Only the link removed, and started again: a new cluster, the old one is nobody's.
        await rm(join(dataDir('relinked'), 'postgres'));
        expect((await admin(['bootstrap'], environment(clusters, dataDir('relinked')))).code).toBe(0);
        const relinkedNow = await homeOf(dataDir('relinked'));
        expect(relinkedNow).not.toBe(homeFor('relinked'));
        // The running server's DATA_DIR deleted under it: its Postgres runs on.
        runningPostmaster = (await postmasterOf(dataDir('running')))!.pid;
        await rm(dataDir('running'), { recursive: true });
        // DATA_DIR gone with its parent: what a disk not mounted looks like.
        await rm(join(home, 'vanished'), { recursive: true });
        // A cluster made before clusters recorded their DATA_DIR.
        await rm(join(homeFor('unrecorded'), 'owners'), { recursive: true });
        await rm(dataDir('unrecorded'), { recursive: true });
        // A record that cannot be read.
        const [record] = await readdir(join(homeFor('unreadable'), 'owners'));
        await writeFile(join(homeFor('unreadable'), 'owners', record!), '{"dataDir":');
        await rm(dataDir('unreadable'), { recursive: true });
        // Moved, and started from where it is now: it records itself, so the old path being gone proves nothing.
        await rename(dataDir('moved'), join(home, 'moved', 'elsewhere'));
        expect((await admin(['bootstrap'], environment(clusters, join(home, 'moved', 'elsewhere')))).code).toBe(0);

        const listed = await pruneClusters(clusters, home);
        expect(listed.code).toBe(0);
        const orphaned = [
          { path: homeFor('deleted'), dataDirs: [dataDir('deleted')], reason: `${dataDir('deleted')} no longer exists` },
          {
            path: homeFor('relinked'),
            dataDirs: [dataDir('relinked')],
            reason: `${dataDir('relinked')}/postgres links to ${relinkedNow}/postgres instead`,
          },
        ];
        expect(listed.json.orphaned).toEqual(
          expect.arrayContaining(orphaned.map((cluster) => ({ ...cluster, bytes: expect.any(Number), size: expect.stringMatching(/ MB$/), removed: false }))),
        );
        expect(listed.json.orphaned).toHaveLength(2);
        for (const cluster of listed.json.orphaned) expect(cluster.bytes).toBeGreaterThan(10_000_000); // a whole cluster, about 40 MB
        expect(listed.json.orphanedBytes).toBe(listed.json.orphaned[0].bytes + listed.json.orphaned[1].bytes);
        const kept = Object.fromEntries(listed.json.kept.map((cluster: any) => [cluster.path, cluster]));
        expect(Object.keys(kept).sort()).toEqual(
          [relinkedNow, ...['running', 'vanished/parent', 'unrecorded', 'unreadable', 'moved'].map(homeFor)].sort(),
        );
        expect(kept[relinkedNow]).toMatchObject({ status: 'OWNER_ALIVE', dataDirs: [dataDir('relinked')] });
        expect(kept[homeFor('running')]).toMatchObject({ status: 'IN_USE', reason: expect.stringMatching(/^its Postgres runs/) });
        expect(kept[homeFor('vanished/parent')]).toMatchObject({ status: 'OWNER_NOT_PROVEN_GONE', reason: expect.stringContaining('nor its parent directory exists') });
        expect(kept[homeFor('unrecorded')]).toMatchObject({ status: 'OWNER_UNKNOWN', dataDirs: [], bytes: expect.any(Number) });
        expect(kept[homeFor('unreadable')]).toMatchObject({ status: 'OWNER_NOT_PROVEN_GONE', reason: expect.stringContaining('cannot be read') });
        expect(kept[homeFor('moved')].status).toBe('OWNER_ALIVE');
        expect(kept[homeFor('moved')].dataDirs.sort()).toEqual([dataDir('moved'), join(home, 'moved', 'elsewhere')].sort());
        // Listing removes nothing.
        for (const path of Object.values(homes)) expect(await exists(path)).toBe(true);

        const pruned = await pruneClusters(clusters, home, '--yes');
        expect(pruned.code).toBe(0);
        expect(pruned.json.orphaned.map((cluster: any) => [cluster.path, cluster.removed]).sort()).toEqual(orphaned.map((cluster) => [cluster.path, true]).sort());
        expect(pruned.json.kept.map((cluster: any) => cluster.path).sort()).toEqual(Object.keys(kept).sort());
        for (const { path } of orphaned) expect(await exists(path)).toBe(false);
        for (const path of Object.keys(kept)) expect(await exists(join(path, 'postgres', 'PG_VERSION'))).toBe(true);
        // The server whose DATA_DIR was deleted still serves from its cluster.
        expect((await call(`http://127.0.0.1:${env.PORT}/api/v1/users/me`, { key: apiKey })).status).toBe(200);
        expect((await pruneClusters(clusters, home, '--yes')).json.orphaned).toEqual([]);
        expect(await exists(join(home, 'no data dir'))).toBe(false);
      } finally {
        for (const path of dataDirs) await cleanUp(started, path);
        await stopPostmasters(clusters, runningPostmaster);
        await rm(clusters, { recursive: true, force: true });
        await rm(home, { recursive: true, force: true });
      }
    }, TIMEOUT_MS);

    it('a worker killed outright and its DATA_DIR deleted: its cluster is in use while its Postgres runs, and removed once that is gone', async () => {
      if (!isRoot) return expectNothingRelocated();
      const { clusters, home } = await directories();
      const env = environment(clusters, join(home, 'ci', '.data'));
      const started: Running[] = [];
      let stranger: ReturnType<typeof spawn> | undefined;
      let runningPostmaster: number | undefined;
      try {
        const worker = run(['run', 'worker'], env);
        started.push(worker);
        await waitFor(worker, /worker running/);
        const clusterHome = await homeOf(env.DATA_DIR);
        expect(worker.output()).toContain(`Postwise worker running\n  cluster    ${clusterHome}/postgres (linked from ${env.DATA_DIR}/postgres)`);
        const pidFile = join(clusterHome, 'postgres', 'postmaster.pid');
        const postmaster = Number((await readFile(pidFile, 'utf8')).split('\n')[0]);
        runningPostmaster = postmaster;
        expect(await stop(worker, { signal: 'SIGKILL' })).toBe(true);
        await rm(env.DATA_DIR, { recursive: true });
        expect(alive(postmaster)).toBe(true);

        const whileRunning = await pruneClusters(clusters, home, '--yes');
        expect(whileRunning.code).toBe(0);
        expect(whileRunning.json.orphaned).toEqual([]);
        expect(whileRunning.json.kept).toEqual([expect.objectContaining({ path: clusterHome, status: 'IN_USE', reason: `its Postgres runs (pid ${postmaster})` })]);
        expect(alive(postmaster)).toBe(true);

        // Power loss: Postgres dies without removing its postmaster.pid, whose pid is then another process's.
        process.kill(postmaster, 'SIGKILL');
        runningPostmaster = undefined;
        expect(await gone(postmaster)).toBe(true);
        stranger = spawn('sleep', ['60'], { stdio: 'ignore' });
        const lines = (await readFile(pidFile, 'utf8')).split('\n');
        await writeFile(pidFile, [String(stranger.pid), ...lines.slice(1)].join('\n'));

        const afterwards = await pruneClusters(clusters, home, '--yes');
        expect(afterwards.code).toBe(0);
        expect(afterwards.json.orphaned).toEqual([expect.objectContaining({ path: clusterHome, reason: `${env.DATA_DIR} no longer exists`, removed: true })]);
        expect(afterwards.json.kept).toEqual([]);
        expect(await exists(clusterHome)).toBe(false);
        expect(alive(stranger.pid!)).toBe(true);
      } finally {
        stranger?.kill();
        await cleanUp(started, env.DATA_DIR);
        await stopPostmasters(clusters, runningPostmaster);
        await rm(clusters, { recursive: true, force: true });
        await rm(home, { recursive: true, force: true });
      }
    }, TIMEOUT_MS);
  });
});
