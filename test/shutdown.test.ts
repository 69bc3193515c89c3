import postgres from 'postgres';
import { expect, it } from 'vitest';
import { call, startTestService, waitingOnLocks } from './support/service.js';

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
  await new Promise((resolve) => setTimeout(resolve, 200));

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
