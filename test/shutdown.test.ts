import postgres from 'postgres';
import { expect, it } from 'vitest';
import { call, startTestService } from './support/service.js';

it('lets an in-flight request finish on stop, and refuses new connections meanwhile', async () => {
  const service = await startTestService();
  const ws = await service.workspace();
  const blocker = postgres(service.databaseUrl, { max: 1, onnotice: () => {} });
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  // Hold a lock that GET /users/me must wait for, so the request is in flight when the stop begins.
  const holding = blocker.begin(async (tx) => {
    await tx`LOCK TABLE users IN ACCESS EXCLUSIVE MODE`;
    await released;
  });
  await new Promise((resolve) => setTimeout(resolve, 100));

  const inFlight = call(`${service.api}/users/me`, { key: ws.apiKey });
  await new Promise((resolve) => setTimeout(resolve, 200));
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
});
