/**
 * Loaded into a worker process the tests start (NODE_OPTIONS=--import URL), to put a fault where the Bluesky client's
 * requests really go: the global fetch. POSTWISE_TEST_FAULT says what happens to com.atproto.repo.createRecord, and
 * a line on stderr says when it happened, for the test to act then (kill the process, send SIGTERM):
 * - accept-then-hang: the PDS performs it, its answer never reaches the worker ("FAULT createRecord accepted");
 * - never-answer: nothing is sent and no answer comes until the request's signal ends it ("FAULT createRecord held");
 * - slow: sent after 1.5 s, answered as usual ("FAULT createRecord held").
 */
const fault = process.env.POSTWISE_TEST_FAULT;
const realFetch = globalThis.fetch;

globalThis.fetch = async (input, init) => {
  const url = typeof input === 'string' ? input : input instanceof URL ? input.href : input.url;
  if (!fault || !url.includes('/xrpc/com.atproto.repo.createRecord')) return realFetch(input, init);
  const signal = init?.signal ?? (input instanceof globalThis.Request ? input.signal : undefined);
  if (fault === 'accept-then-hang') {
    await realFetch(input, { ...init, signal: undefined });
    process.stderr.write('FAULT createRecord accepted\n');
    return new Promise(() => {});
  }
  process.stderr.write('FAULT createRecord held\n');
  if (fault === 'slow') {
    await new Promise((resolve) => setTimeout(resolve, 1500));
    return realFetch(input, init);
  }
  return new Promise((_, reject) => {
    if (signal?.aborted) reject(signal.reason);
    signal?.addEventListener('abort', () => reject(signal.reason));
  });
};
