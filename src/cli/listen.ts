import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { Webhook } from 'standardwebhooks';
import { deadline } from '../process/deadline.js';
import { send, succeeded, type ClientOptions } from './client.js';

export interface ListenOptions {
  forwardTo: string;
  /** The event types to forward; all when empty. */
  types: string[];
  /** Signs what is forwarded; a new `whsec_` secret when not given. */
  secret?: string;
  /** How long to wait between two reads of the feed once it is read to the end. */
  intervalMs: number;
  /** Where lines for people go (the secret, one line per forwarded event). */
  note: (line: string) => void;
  signal: AbortSignal;
}

interface FeedEvent {
  id: string;
  type: string;
}

/**
 * `postwise listen --forward-to URL`, as `stripe listen` does: reads the workspace's events from GET /events, from now
 * on, and forwards each to a local URL signed as a webhook delivery is (Standard Webhooks, with a secret of this run's),
 * so a receiver can be built and tested on a developer's machine without a public URL. One event at a time, in order;
 * a receiver that fails is told once, not retried (the feed keeps the event).
 */
export async function listen(client: ClientOptions, options: ListenOptions): Promise<void> {
  const secret = options.secret ?? `whsec_${randomBytes(32).toString('base64')}`;
  const signer = new Webhook(secret);
  const since = new Date().toISOString();
  options.note(`Ready: forwarding ${options.types.length ? options.types.join(', ') : 'every event'} to ${options.forwardTo}`);
  options.note(`Your webhook signing secret for this run is ${secret} (Ctrl-C to stop)`);
  let cursor: string | undefined;
  while (!options.signal.aborted) {
    const query = { limit: 100, ...(cursor ? { cursor } : { since }), ...(options.types.length ? { type: options.types } : {}) };
    const page = succeeded(await send(client, { method: 'GET', path: '/events', query })).json as { items: (FeedEvent & Record<string, unknown>)[]; nextCursor: string | null };
    for (const event of page.items) {
      if (options.signal.aborted) return;
      const body = JSON.stringify(event);
      const timestamp = new Date();
      let outcome: string;
      try {
        const response = await fetch(options.forwardTo, {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            'webhook-id': event.id,
            'webhook-timestamp': String(Math.floor(timestamp.getTime() / 1000)),
            'webhook-signature': signer.sign(event.id, timestamp, body),
          },
          body,
          redirect: 'manual',
          signal: AbortSignal.any([options.signal, deadline(10_000)]),
        });
        await response.arrayBuffer();
        outcome = String(response.status);
      } catch (error) {
        if (options.signal.aborted) return;
        const cause = (error as { cause?: { code?: string } }).cause?.code;
        outcome = `not delivered (${cause ?? (error as Error).message})`;
      }
      options.note(`${timestamp.toISOString()}  ${event.type}  ${event.id}  → ${outcome}`);
      cursor = event.id;
    }
    if (!page.nextCursor) await sleep(options.intervalMs, undefined, { signal: options.signal }).catch(() => undefined);
  }
}
