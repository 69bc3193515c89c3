import { randomBytes } from 'node:crypto';
import { AtpAgent } from '@atproto/api';
import { inject } from 'vitest';

export interface TestAccount {
  pdsUrl: string;
  did: string;
  handle: string;
  /** The account's own password: for the test's own agent, never given to the service. */
  password: string;
  /** What a user gives the service. */
  appPassword: string;
  /** Logged in with the account's own password, to read records back and revoke app passwords. */
  agent: AtpAgent;
}

/** A fresh account on the run's PDS (test/support/pds.ts), with an app password named `postwise`. */
export async function createAccount(): Promise<TestAccount> {
  const pdsUrl = inject('pdsUrl');
  // Handles on this PDS are `<3 to 18 characters>.test`.
  const handle = `t${randomBytes(6).toString('hex')}.test`;
  const password = randomBytes(12).toString('hex');
  const agent = new AtpAgent({ service: pdsUrl });
  const created = await agent.com.atproto.server.createAccount({ handle, password, email: `${handle}@example.com` });
  await agent.login({ identifier: handle, password });
  const appPassword = (await agent.com.atproto.server.createAppPassword({ name: 'postwise' })).data.password;
  return { pdsUrl, did: created.data.did, handle, password, appPassword, agent };
}

/** The account's posts, newest first, as the PDS holds them. */
export async function postsOf(account: TestAccount) {
  const { data } = await account.agent.com.atproto.repo.listRecords({ repo: account.did, collection: 'app.bsky.feed.post', limit: 100 });
  return data.records;
}

/** Connects `who` through the service's connect page, as a browser posts the form; answers the integration's id. */
export async function connectThroughForm(api: string, apiKey: string, who: TestAccount): Promise<string> {
  const link = await fetch(`${api}/integrations/connect`, {
    method: 'POST',
    headers: { 'x-api-key': apiKey, 'content-type': 'application/json' },
    body: JSON.stringify({ platform: 'BLUESKY' }),
  });
  const { redirectUrl } = (await link.json()) as { redirectUrl: string };
  const done = await fetch(redirectUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ handle: who.handle, appPassword: who.appPassword, serviceUrl: who.pdsUrl }),
  });
  const page = await done.text();
  const id = page.match(/<code>([0-9a-f-]{36})<\/code>/)?.[1];
  if (done.status !== 200 || !id) throw new Error(`connecting ${who.handle} failed: ${done.status} ${page}`);
  return id;
}
