import events from 'node:events';
import { mkdtemp, rm } from 'node:fs/promises';
import http from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';

declare module 'vitest' {
  export interface ProvidedContext {
    /** A real Bluesky Personal Data Server on loopback; each test file makes its own accounts on it (test/support/bluesky.ts). */
    pdsUrl: string;
  }
}

/**
 * One PLC directory (in memory) and one PDS (sqlite and blobs in a temporary directory) for the run, in this
 * process, bound to 127.0.0.1. `@atproto/dev-env`'s TestNetworkNoAppView would also start an AppView we never
 * call; the PDS alone is lighter and is all the publishing engine talks to (no app.bsky reads).
 * Versions are pinned to the last line that runs on Node 20 (see package.json).
 */
export default async function setup(project: TestProject) {
  const pds = await startPds();
  project.provide('pdsUrl', pds.url);
  return pds.stop;
}

/** A PLC directory and a PDS on loopback, as the tests use them; the benchmark (bench/publishing.ts) starts one too. */
export async function startPds(): Promise<{ url: string; stop(): Promise<void> }> {
  const { PDS, envToCfg, envToSecrets } = await import('@atproto/pds');
  const plcServer = await import('@did-plc/server');
  const { Secp256k1Keypair } = await import('@atproto/crypto');

  const plc = plcServer.PlcServer.create({ db: plcServer.Database.mock(), port: 0 });
  const plcHttp = await listenLoopback(plc.app);
  const plcUrl = `http://127.0.0.1:${port(plcHttp)}`;

  // The PDS advertises its URL in every account's DID document (clients follow it after login), so its port is
  // chosen before it starts.
  const probe = await listenLoopback((_req, res) => res.end());
  const pdsPort = port(probe);
  await closeServer(probe);

  const dataDirectory = await mkdtemp(join(tmpdir(), 'postwise-pds-'));
  const rotationKey = await Secp256k1Keypair.create({ exportable: true });
  const env = {
    devMode: true,
    port: pdsPort,
    hostname: 'localhost',
    dataDirectory,
    blobstoreDiskLocation: join(dataDirectory, 'blobs'),
    didPlcUrl: plcUrl,
    jwtSecret: 'test-jwt-secret',
    adminPassword: 'test-admin-password',
    plcRotationKeyK256PrivateKeyHex: Buffer.from(await rotationKey.export()).toString('hex'),
    inviteRequired: false,
    serviceHandleDomains: ['.test'],
    // No AppView nor moderation service: unroutable names (only proxied app.bsky reads would use them).
    bskyAppViewUrl: 'https://appview.invalid',
    bskyAppViewDid: 'did:example:invalid',
    bskyAppViewCdnUrlPattern: 'http://cdn.invalid/%s/%s/%s',
    modServiceUrl: 'https://moderator.invalid',
    modServiceDid: 'did:example:invalid',
    disableSsrfProtection: true,
    crawlers: [],
  };
  const cfg = envToCfg(env);
  (cfg.service as { publicUrl: string }).publicUrl = `http://127.0.0.1:${pdsPort}`;
  const pds = await PDS.create(cfg, envToSecrets(env));
  // PDS.start() listens on every interface; this is the same on loopback only.
  await pds.ctx.sequencer.start();
  const pdsHttp = await listenLoopback(pds.app, pdsPort);

  return {
    url: `http://127.0.0.1:${pdsPort}`,
    async stop() {
      await closeServer(pdsHttp);
      await pds.destroy();
      await closeServer(plcHttp);
      await plc.destroy();
      await rm(dataDirectory, { recursive: true, force: true });
    },
  };
}

function listenLoopback(app: http.RequestListener, listenPort = 0): Promise<http.Server> {
  const server = http.createServer(app);
  server.keepAliveTimeout = 90_000;
  server.listen(listenPort, '127.0.0.1');
  return events.once(server, 'listening').then(() => server);
}

const port = (server: http.Server) => (server.address() as { port: number }).port;

function closeServer(server: http.Server): Promise<void> {
  return new Promise((resolve) => {
    server.close(() => resolve());
    server.closeAllConnections();
  });
}
