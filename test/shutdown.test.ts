import { connect } from 'node:net';
import postgres from 'postgres';
import { expect, it } from 'vitest';
import { call, eventually, startTestService, waitingOnLocks } from './support/service.js';

it('lets an in-flight request finish on stop, and refuses new connections meanwhile', async () => {
  const service = await startTestService();
  const ws = await service.workspace();
  const blocker = postgres(service.databaseUrl, { max: 1, onnotice: () => {} });
  const watcher = postgres(service.databaseUrl, { max: 1, onnotice: () => {} });
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  let locked!: () => void;
  const lockTaken = new Promise<void>((resolve) => (locked = resolve));
  // Hold a lock that GET /users/me must wait for, so the request is in flight when the stop begins.
  const holding = blocker.begin(async (tx) => {
    await tx`LOCK TABLE users IN ACCESS EXCLUSIVE MODE`;
    locked();
    await released;
  });
  await lockTaken;

  const inFlight = call(`${service.api}/users/me`, { key: ws.apiKey });
  // In flight: waiting for the lock, however long this machine took to get it there.
  await waitingOnLocks(watcher, { timeoutMs: 20_000 });
  let stopped = false;
  const stopping = service.stop().then(() => (stopped = true));
  // Waited for as the state, not for a moment (a busy machine may take longer than any fixed wait to get there): the
  // listener closed, a new connection refused. A bare TCP connection, as a request accepted before would wait for the lock.
  const { hostname, port } = new URL(service.api);
  const refusesConnections = () =>
    new Promise<boolean>((resolve) => {
      const socket = connect(Number(port), hostname);
      socket.once('connect', () => {
        socket.destroy();
        resolve(false);
      });
      socket.once('error', () => resolve(true));
    });
  expect(await eventually(refusesConnections, (refused) => refused, 20_000)).toBe(true);

  expect(stopped).toBe(false);
  await expect(call(`${service.api}/users/me`, { key: ws.apiKey })).rejects.toThrow();
  release();
  await holding;
  const answer = await inFlight;
  expect(answer.status).toBe(200);
  expect(answer.json.id).toBe(ws.userId);
  await stopping;
  expect(stopped).toBe(true);
  await blocker.end();
  await watcher.end();
});
