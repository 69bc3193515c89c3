import { createHash, randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { photo } from './support/images.js';
import { mastodonLength, startFakeMastodon, type FakeMastodon } from './support/mastodon.js';

/**
 * The fake Mastodon (test/support/mastodon.ts) refuses what Mastodon refuses and answers as it answers, proved through
 * plain fetch: registration, the authorization page, PKCE and codes, tokens and scopes, the length rule, media
 * processing, the Idempotency-Key, revocation, and the faults other tests inject.
 */

let fake: FakeMastodon;
beforeAll(async () => void (fake = await startFakeMastodon()));
afterAll(() => fake?.close());

const CALLBACK = 'http://127.0.0.1:9/oauth/mastodon/callback';
const SCOPES = 'read:accounts read:statuses write:statuses write:media';

interface Answer {
  status: number;
  headers: Headers;
  text: string;
  json: any;
}

async function send(path: string, init: { method?: string; token?: string; json?: unknown; form?: Record<string, string>; body?: FormData; headers?: Record<string, string> } = {}): Promise<Answer> {
  const headers: Record<string, string> = { ...init.headers };
  if (init.token) headers.authorization = `Bearer ${init.token}`;
  let body: string | FormData | undefined = init.body;
  if (init.json !== undefined) {
    headers['content-type'] = 'application/json';
    body = JSON.stringify(init.json);
  } else if (init.form) {
    headers['content-type'] = 'application/x-www-form-urlencoded';
    body = new URLSearchParams(init.form).toString();
  }
  const response = await fetch(`${fake.url}${path}`, { method: init.method ?? (body ? 'POST' : 'GET'), headers, body, redirect: 'manual' });
  const text = await response.text();
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: response.status, headers: response.headers, text, json };
}

const register = (body: Record<string, unknown>) => send('/api/v1/apps', { json: body });

async function registerApp(scopes = SCOPES) {
  const answer = await register({ client_name: 'Postwise', redirect_uris: [CALLBACK], scopes, website: 'https://postwise.example' });
  expect(answer.status, answer.text).toBe(200);
  return answer.json as { client_id: string; client_secret: string };
}

const authorizePath = (app: { client_id: string }, params: Record<string, string> = {}) =>
  `/oauth/authorize?${new URLSearchParams({ response_type: 'code', client_id: app.client_id, redirect_uri: CALLBACK, scope: SCOPES, state: 'st-1', ...params })}`;

const pkcePair = () => {
  const verifier = randomBytes(32).toString('base64url');
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') };
};

/** The redirect GET /oauth/authorize answers at once when the fake consents as `account`. */
async function codeFor(app: { client_id: string }, account: string, params: Record<string, string> = {}) {
  fake.autoConsent(account);
  try {
    const answer = await send(authorizePath(app, params));
    expect(answer.status, answer.text).toBe(302);
    return new URL(answer.headers.get('location')!);
  } finally {
    fake.autoConsent(null);
  }
}

const exchange = (app: { client_id: string; client_secret: string }, fields: Record<string, string>) =>
  send('/oauth/token', { form: { client_id: app.client_id, client_secret: app.client_secret, redirect_uri: CALLBACK, ...fields } });

/** A user token for `account`, through registration, the authorization (PKCE) and the exchange. */
async function connect(account = 'ann', scopes = SCOPES) {
  const app = await registerApp(scopes);
  const { verifier, challenge } = pkcePair();
  const back = await codeFor(app, account, { scope: scopes, code_challenge: challenge, code_challenge_method: 'S256' });
  const token = await exchange(app, { grant_type: 'authorization_code', code: back.searchParams.get('code')!, code_verifier: verifier });
  expect(token.status, token.text).toBe(200);
  return { app, token: token.json.access_token as string };
}

async function upload(token: string, image: Buffer, fields: Record<string, string> = {}, type = 'image/jpeg') {
  const form = new FormData();
  form.set('file', new File([new Uint8Array(image)], 'image-1.jpg', { type }));
  for (const [name, value] of Object.entries(fields)) form.set(name, value);
  return send('/api/v2/media', { token, body: form });
}

describe('the instance documents', () => {
  it('answer the limits, the OAuth metadata with S256, and the software', async () => {
    const v2 = await send('/api/v2/instance');
    expect(v2.json.configuration.statuses).toEqual({ max_characters: 500, max_media_attachments: 4, characters_reserved_per_url: 23 });
    expect(v2.json.configuration.media_attachments).toMatchObject({ description_limit: 1500, image_size_limit: 16_777_216, image_matrix_limit: 33_177_600 });
    expect(v2.json.domain).toBe(fake.host);
    const metadata = await send('/.well-known/oauth-authorization-server');
    expect(metadata.json).toMatchObject({
      issuer: `${fake.url}/`,
      authorization_endpoint: `${fake.url}/oauth/authorize`,
      token_endpoint: `${fake.url}/oauth/token`,
      revocation_endpoint: `${fake.url}/oauth/revoke`,
      code_challenge_methods_supported: ['S256'],
      token_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post'],
    });
    const links = await send('/.well-known/nodeinfo');
    const nodeinfo = await fetch(links.json.links[0].href).then((r) => r.json());
    expect(nodeinfo.software).toEqual({ name: 'mastodon', version: '4.4.3' });
  });

  it('an older server: no metadata (404), no v2 instance, its own limits on v1', async () => {
    const old = await startFakeMastodon({ pkce: false, instanceV2: false, limits: { max_characters: 11_000, max_media_attachments: 6 }, software: 'akkoma', version: '3.15.2' });
    try {
      expect((await fetch(`${old.url}/.well-known/oauth-authorization-server`)).status).toBe(404);
      expect((await fetch(`${old.url}/api/v2/instance`)).status).toBe(404);
      const v1 = await fetch(`${old.url}/api/v1/instance`).then((r) => r.json());
      expect(v1.configuration.statuses).toEqual({ max_characters: 11_000, max_media_attachments: 6, characters_reserved_per_url: 23 });
      expect(v1.max_toot_chars).toBe(11_000);
      // Before 4.3, redirect_uris is one string: an array is dropped by Rails, so the URI is blank.
      const array = await fetch(`${old.url}/api/v1/apps`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ client_name: 'P', redirect_uris: [CALLBACK] }) });
      expect(await array.json()).toEqual({ error: "Validation failed: Redirect URI can't be blank" });
    } finally {
      await old.close();
    }
  });
});

describe('registering an app', () => {
  it('refuses a relative, fragment or javascript redirect URI, a missing name and an unknown scope, as Mastodon words it', async () => {
    expect(await register({ client_name: 'Postwise', redirect_uris: ['/oauth/callback'] })).toMatchObject({
      status: 422,
      json: { error: 'Validation failed: Redirect URI must be an absolute URI.' },
    });
    expect((await register({ client_name: 'Postwise', redirect_uris: `${CALLBACK}#x` })).json.error).toBe('Validation failed: Redirect URI cannot contain a fragment.');
    expect((await register({ client_name: 'Postwise', redirect_uris: 'javascript:alert(1)' })).json.error).toBe('Validation failed: Redirect URI is forbidden by the server.');
    expect((await register({ redirect_uris: [CALLBACK] })).json.error).toBe("Validation failed: Application name can't be blank");
    expect((await register({ client_name: 'Postwise', redirect_uris: [CALLBACK], scopes: 'read:statuses write:everything' })).json.error).toBe(
      "Validation failed: Scopes doesn't match configured on the server.",
    );
    expect((await register({ client_name: 'Postwise', redirect_uri: CALLBACK })).status).toBe(422); // the singular is not a parameter
  });

  it('answers a CredentialApplication, from JSON or a form, counted', async () => {
    const before = fake.registrations;
    const json = await register({ client_name: 'Postwise', redirect_uris: [CALLBACK, 'https://postwise.example/cb'], scopes: SCOPES });
    expect(json.json).toEqual({
      id: expect.any(String),
      name: 'Postwise',
      website: null,
      scopes: SCOPES.split(' '),
      redirect_uris: [CALLBACK, 'https://postwise.example/cb'],
      redirect_uri: `${CALLBACK}\nhttps://postwise.example/cb`,
      client_id: expect.any(String),
      client_secret: expect.any(String),
      client_secret_expires_at: 0,
    });
    const form = await send('/api/v1/apps', { form: { client_name: 'Postwise', redirect_uris: CALLBACK, scopes: 'read' } });
    expect(form.json).toMatchObject({ redirect_uris: [CALLBACK], scopes: ['read'] });
    expect(fake.registrations).toBe(before + 2);
  });
});

describe('the authorization page', () => {
  it('an unknown client or an unregistered redirect URI gets an error page, never a redirect', async () => {
    const unknown = await send(authorizePath({ client_id: 'nobody' }));
    expect(unknown.status).toBe(401);
    expect(unknown.headers.get('location')).toBeNull();
    expect(unknown.text).toContain('invalid_client');
    const app = await registerApp();
    const elsewhere = await send(authorizePath(app, { redirect_uri: 'https://evil.example/cb' }));
    expect(elsewhere.status).toBe(400);
    expect(elsewhere.headers.get('location')).toBeNull();
    expect(elsewhere.text).toContain('invalid_redirect_uri');
  });

  it('a scope beyond the app\'s, or a challenge method other than S256, goes back with the error and the state', async () => {
    const app = await registerApp('read:accounts write:statuses');
    const scope = await send(authorizePath(app, { scope: 'read:accounts write:media' }));
    expect(scope.status).toBe(302);
    expect(Object.fromEntries(new URL(scope.headers.get('location')!).searchParams)).toMatchObject({ error: 'invalid_scope', state: 'st-1' });
    // Scopes are compared as registered: `read` is not granted by registering `read:accounts`, nor the reverse.
    expect(new URL((await send(authorizePath(app, { scope: 'read' }))).headers.get('location')!).searchParams.get('error')).toBe('invalid_scope');
    const plain = await send(authorizePath(app, { scope: 'read:accounts', code_challenge: 'abc', code_challenge_method: 'plain' }));
    expect(new URL(plain.headers.get('location')!).searchParams.get('error')).toBe('invalid_request');
  });

  it('shows a consent page with Authorize and Deny; Deny goes back with access_denied, Authorize with a code', async () => {
    const app = await registerApp();
    const consent = async () => {
      const page = await send(authorizePath(app));
      expect(page.status).toBe(200);
      expect(page.headers.get('content-type')).toMatch(/^text\/html/);
      expect(page.text).toContain('Signed in as <strong>@ann@');
      const forms = [...page.text.matchAll(/<form method="post" action="\/oauth\/authorize">(.*?)<\/form>/g)].map((match) => ({
        fields: Object.fromEntries([...match[1]!.matchAll(/name="([^"]+)" value="([^"]*)"/g)].map((field) => [field[1]!, field[2]!.replace(/&amp;/g, '&')])),
        button: /<button[^>]*>([^<]+)<\/button>/.exec(match[1]!)![1],
      }));
      expect(forms.map((form) => form.button)).toEqual(['Authorize', 'Deny']);
      return forms;
    };
    const [, denyForm] = await consent();
    const denied = await send('/oauth/authorize', { form: denyForm!.fields });
    expect(Object.fromEntries(new URL(denied.headers.get('location')!).searchParams)).toEqual({ error: 'access_denied', error_description: expect.any(String), state: 'st-1' });
    // A form is good once (Rails' authenticity token).
    expect((await send('/oauth/authorize', { form: denyForm!.fields })).status).toBe(422);
    const [authorizeForm] = await consent();
    const approved = new URL((await send('/oauth/authorize', { form: authorizeForm!.fields })).headers.get('location')!);
    expect(`${approved.origin}${approved.pathname}`).toBe(CALLBACK);
    expect(approved.searchParams.get('code')).toMatch(/^[\w-]{43}$/);
    expect(approved.searchParams.get('state')).toBe('st-1');
  });
});

describe('the token endpoint', () => {
  it('checks the PKCE verifier (invalid_grant), spends a code once, and answers a token that does not expire', async () => {
    const app = await registerApp();
    const { verifier, challenge } = pkcePair();
    const code = (await codeFor(app, 'ann', { code_challenge: challenge, code_challenge_method: 'S256' })).searchParams.get('code')!;
    expect(await exchange(app, { grant_type: 'authorization_code', code })).toMatchObject({ status: 400, json: { error: 'invalid_request' } });
    expect(await exchange(app, { grant_type: 'authorization_code', code, code_verifier: pkcePair().verifier })).toMatchObject({ status: 400, json: { error: 'invalid_grant' } });
    expect(await exchange(app, { grant_type: 'authorization_code', code, code_verifier: verifier, redirect_uri: 'https://postwise.example/cb' })).toMatchObject({ status: 400, json: { error: 'invalid_grant' } });
    // A failed exchange leaves the code; the right one spends it.
    const token = await exchange(app, { grant_type: 'authorization_code', code, code_verifier: verifier });
    expect(token.status).toBe(200);
    expect(token.json).toEqual({ access_token: expect.any(String), token_type: 'Bearer', scope: SCOPES, created_at: expect.any(Number) });
    expect(token.headers.get('cache-control')).toBe('no-store');
    expect(await exchange(app, { grant_type: 'authorization_code', code, code_verifier: verifier })).toMatchObject({ status: 400, json: { error: 'invalid_grant' } });
    // A verifier for a code that had no challenge is refused too.
    const plainCode = (await codeFor(app, 'ann')).searchParams.get('code')!;
    expect((await exchange(app, { grant_type: 'authorization_code', code: plainCode, code_verifier: verifier })).json.error).toBe('invalid_grant');
  });

  it('authenticates the client by the body or by Basic, not both; a wrong secret is invalid_client', async () => {
    const app = await registerApp();
    const code = (await codeFor(app, 'bob')).searchParams.get('code')!;
    expect(await exchange({ ...app, client_secret: 'wrong' }, { grant_type: 'authorization_code', code })).toMatchObject({ status: 401, json: { error: 'invalid_client' } });
    const basic = `Basic ${Buffer.from(`${app.client_id}:${app.client_secret}`).toString('base64')}`;
    const both = await send('/oauth/token', { headers: { authorization: basic }, form: { grant_type: 'authorization_code', code, redirect_uri: CALLBACK, client_secret: app.client_secret } });
    expect(both.json.error).toBe('invalid_request');
    const viaBasic = await send('/oauth/token', { headers: { authorization: basic }, form: { grant_type: 'authorization_code', code, redirect_uri: CALLBACK } });
    expect(viaBasic.status, viaBasic.text).toBe(200);
    // reuse_access_token: the same account, app and scopes get their live token back.
    const again = await exchange(app, { grant_type: 'authorization_code', code: (await codeFor(app, 'bob')).searchParams.get('code')! });
    expect(again.json.access_token).toBe(viaBasic.json.access_token);
  });

  it('client_credentials: the scope must be the app\'s, and `read` is what none means', async () => {
    const app = await registerApp();
    expect(await exchange(app, { grant_type: 'client_credentials' })).toMatchObject({ status: 400, json: { error: 'invalid_scope' } });
    const token = await exchange(app, { grant_type: 'client_credentials', scope: 'read:accounts' });
    expect(token.json.scope).toBe('read:accounts');
    expect((await send('/api/v1/apps/verify_credentials', { token: token.json.access_token })).json).toMatchObject({ name: 'Postwise', scopes: SCOPES.split(' ') });
    // An app token is not a user.
    expect(await send('/api/v1/accounts/verify_credentials', { token: token.json.access_token })).toMatchObject({ status: 422, json: { error: 'This method requires an authenticated user' } });
    fake.forgetApps();
    expect((await send('/api/v1/apps/verify_credentials', { token: token.json.access_token })).status).toBe(401);
  });
});

describe('tokens and scopes on the API', () => {
  it('no token is 401, a token without the scope is 403, verify_credentials answers the account', async () => {
    expect(await send('/api/v1/statuses', { json: { status: 'hello' } })).toMatchObject({ status: 401, json: { error: 'The access token is invalid' } });
    expect((await send('/api/v1/accounts/verify_credentials', { token: 'made-up' })).status).toBe(401);
    const reader = await connect('ann', 'read:accounts');
    expect(await send('/api/v1/statuses', { token: reader.token, json: { status: 'hello' } })).toMatchObject({ status: 403, json: { error: 'This action is outside the authorized scopes' } });
    expect((await send(`/api/v1/accounts/${fake.accounts.get('ann')!.id}/statuses`, { token: reader.token })).status).toBe(403);
    const me = await send('/api/v1/accounts/verify_credentials', { token: reader.token });
    expect(me.json).toMatchObject({ id: fake.accounts.get('ann')!.id, username: 'ann', acct: 'ann', display_name: 'Ann Example', url: `${fake.url}/@ann`, source: { privacy: 'public' } });
    expect(me.headers.get('x-ratelimit-limit')).toBe('300');
    expect(me.headers.get('x-ratelimit-reset')).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/);
    // `read` covers `read:*`.
    const broad = await connect('bob', 'read write');
    expect((await send(`/api/v1/accounts/${fake.accounts.get('bob')!.id}/statuses`, { token: broad.token })).status).toBe(200);
  });
});

describe('statuses', () => {
  let token: string;
  beforeAll(async () => ({ token } = await connect('ann')));
  const post = (json: Record<string, unknown>, headers: Record<string, string> = {}) => send('/api/v1/statuses', { token, json, headers });

  it('counts as Mastodon: a URL is 23 whatever its length, @user@domain is @user, the content warning counts', async () => {
    const longUrl = `https://example.com/${'a'.repeat(60)}`;
    expect(mastodonLength(`${longUrl} and http://a.co`, '', 23)).toBe(23 + 5 + 23);
    expect(mastodonLength('hi @bob@mastodon.example', '', 23)).toBe('hi @bob'.length);
    expect(mastodonLength('👩‍👩‍👧 é', 'CW', 23)).toBe(5);
    const fits = `${'x'.repeat(500 - 23 - 1)} ${longUrl}`;
    const made = await post({ status: fits });
    expect(made.status, made.text).toBe(200);
    expect(made.json.content).toContain('<span class="invisible">https://</span><span class="ellipsis">example.com/');
    expect(await post({ status: `${fits}!` })).toMatchObject({ status: 422, json: { error: 'Validation failed: Text character limit of 500 exceeded' } });
    expect(await post({ status: 'x'.repeat(495), spoiler_text: 'spoiler' })).toMatchObject({ status: 422, json: { error: 'Validation failed: Text character limit of 500 exceeded' } });
    expect((await post({ status: `${'x'.repeat(480)} @bob@far.away.example` })).status).toBe(200);
  });

  it('refuses a blank text, an unknown visibility, a parent that is not there, and parameters Mastodon would drop', async () => {
    expect((await post({ status: '   ' })).json.error).toBe("Validation failed: Text can't be blank");
    expect((await post({ status: 'hi', visibility: 'friends' })).json.error).toBe('Validation failed: Visibility is not included in the list');
    expect(await post({ status: 'hi', in_reply_to_id: '1' })).toMatchObject({ status: 404, json: { error: 'The post you are trying to reply to does not appear to exist.' } });
    expect((await post({ status: 'hi', content_warning: 'x' })).json.error).toMatch(/^Unknown parameter content_warning/);
    expect((await post({ status: 'hi', media_ids: '123' })).status).toBe(422);
    const made = await send('/api/v1/statuses', { token, form: { status: 'from a form', visibility: 'unlisted', spoiler_text: 'cw', language: 'en-US' } });
    expect(made.json).toMatchObject({ visibility: 'unlisted', spoiler_text: 'cw', sensitive: true, language: 'en', application: { name: 'Postwise' } });
    expect(made.json.url).toBe(`${fake.url}/@ann/${made.json.id}`);
  });

  it('an Idempotency-Key replay answers the same status, whatever the body; the key is the account\'s', async () => {
    const key = `postwise-${randomBytes(8).toString('hex')}`;
    const first = await post({ status: 'once only' }, { 'Idempotency-Key': key });
    const replay = await post({ status: 'something else entirely', visibility: 'direct' }, { 'Idempotency-Key': key });
    expect(replay.status).toBe(200);
    expect(replay.json).toEqual(first.json);
    expect(fake.statusesOf('ann').filter((status) => status.idempotencyKey === key)).toHaveLength(1);
    const other = await connect('bob');
    const bobs = await send('/api/v1/statuses', { token: other.token, json: { status: 'once only' }, headers: { 'Idempotency-Key': key } });
    expect(bobs.json.id).not.toBe(first.json.id);
    expect(fake.requests.filter((request) => request.headers['idempotency-key'] === key && request.method === 'POST')).toHaveLength(3);
  });

  it('a key is kept for the TTL only, and a replay of a deleted status is 404', async () => {
    const short = await startFakeMastodon({ idempotencyTtlMs: 50 });
    try {
      const token = short.issueToken('ann');
      const make = () => fetch(`${short.url}/api/v1/statuses`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', 'idempotency-key': 'k' }, body: '{"status":"hi"}' }).then((r) => r.json());
      const first = await make();
      expect((await make()).id).toBe(first.id);
      await new Promise((resolve) => setTimeout(resolve, 80));
      const second = await make();
      expect(second.id).not.toBe(first.id);
      await fetch(`${short.url}/api/v1/statuses/${second.id}`, { method: 'DELETE', headers: { authorization: `Bearer ${token}` } });
      expect(await make()).toEqual({ error: 'Record not found' });
    } finally {
      await short.close();
    }
  });

  it('replies, the source, paging newest first with a Link header, and delete by the owner only (replies stay)', async () => {
    const root = (await post({ status: 'root #Thread' })).json;
    const reply = (await post({ status: 'reply', in_reply_to_id: root.id })).json;
    expect(reply).toMatchObject({ in_reply_to_id: root.id, in_reply_to_account_id: root.account.id });
    expect(root.tags).toEqual([{ name: 'thread', url: `${fake.url}/tags/thread` }]);
    expect((await send(`/api/v1/statuses/${root.id}/source`, { token })).json).toEqual({ id: root.id, text: 'root #Thread', spoiler_text: '' });
    const page = await send(`/api/v1/accounts/${root.account.id}/statuses?limit=2`, { token });
    expect(page.json.map((status: any) => status.id)).toEqual([reply.id, root.id]);
    expect(page.headers.get('link')).toContain(`max_id=${root.id}>; rel="next"`);
    const since = await send(`/api/v1/accounts/${root.account.id}/statuses?min_id=${root.id}`, { token });
    expect(since.json.map((status: any) => status.id)).toEqual([reply.id]);
    const bob = await connect('bob');
    expect((await send(`/api/v1/statuses/${root.id}`, { token: bob.token, method: 'DELETE' })).status).toBe(404);
    const deleted = await send(`/api/v1/statuses/${root.id}`, { token, method: 'DELETE' });
    expect(deleted.json).toMatchObject({ id: root.id, text: 'root #Thread' });
    expect((await send(`/api/v1/statuses/${root.id}`)).status).toBe(404);
    expect((await send(`/api/v1/statuses/${reply.id}`)).json.in_reply_to_id).toBe(root.id);
  });
});

describe('media', () => {
  let token: string;
  beforeAll(async () => ({ token } = await connect('ann')));

  it('202 while processing, 206 on GET until ready, then 200; a status refuses it until then; attached, it cannot be changed', async () => {
    fake.processingMs = 400;
    try {
      const uploaded = await upload(token, await photo(64, 48), { description: 'A gradient', focus: '-0.5,0.25', skip_polling: 'true' });
      expect(uploaded.status, uploaded.text).toBe(202);
      expect(uploaded.json).toMatchObject({ type: 'image', url: null, description: 'A gradient', meta: { focus: { x: -0.5, y: 0.25 }, original: { width: 64, height: 48 } } });
      const id = uploaded.json.id as string;
      expect(await send('/api/v1/statuses', { token, json: { status: 'too soon', media_ids: [id] } })).toMatchObject({
        status: 422,
        json: { error: 'Cannot attach files that have not finished processing. Try again in a moment!' },
      });
      expect((await send(`/api/v1/media/${id}`, { token })).status).toBe(206);
      let ready: Answer;
      do {
        await new Promise((resolve) => setTimeout(resolve, 100));
        ready = await send(`/api/v1/media/${id}`, { token });
      } while (ready.status === 206);
      expect(ready.status).toBe(200);
      expect(ready.json.url).toMatch(new RegExp(`^${fake.url}/system/media_attachments/files/${id}/original/`));
      expect((await fetch(ready.json.url)).headers.get('content-type')).toBe('image/jpeg');
      expect((await send(`/api/v1/media/${id}`, { token, method: 'PUT', json: { description: 'Changed' } })).json.description).toBe('Changed');
      const made = await send('/api/v1/statuses', { token, json: { status: 'with an image', media_ids: [id] } });
      expect(made.status, made.text).toBe(200);
      expect(made.json.media_attachments).toMatchObject([{ id, description: 'Changed' }]);
      expect((await send(`/api/v1/media/${id}`, { token, method: 'PUT', json: { description: 'Later' } })).status).toBe(404);
      expect((await send('/api/v1/statuses', { token, json: { status: 'again', media_ids: [id] } })).json.error).toBe(`Media ${id} not found or already attached to another post`);
    } finally {
      fake.processingMs = 0;
    }
  });

  it('refuses what is not an image of its type, too long alt text, a focus out of range, too many files; 200 when processed at once', async () => {
    const image = await photo(32, 32);
    expect((await upload(token, Buffer.from('not an image at all'), {}, 'image/jpeg')).json.error).toBe('Validation failed: File content type is invalid, File is invalid');
    expect((await upload(token, image, {}, 'image/png')).json.error).toBe('Validation failed: File has contents that are not what they are reported to be');
    expect((await upload(token, image, { description: 'a'.repeat(1501) })).json.error).toBe('Validation failed: Description is too long (maximum is 1500 characters)');
    expect((await upload(token, image, { focus: '0.5,1.5' })).status).toBe(422);
    expect((await upload(token, image, { alt: 'x' })).json.error).toMatch(/^Unknown parameter alt/);
    expect((await send('/api/v2/media', { token, json: { file: 'x' } })).json.error).toBe("Validation failed: File can't be blank");
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      const answer = await upload(token, image);
      expect(answer.status).toBe(200);
      expect(answer.json.url).not.toBeNull();
      ids.push(answer.json.id);
    }
    expect((await send('/api/v1/statuses', { token, json: { media_ids: ids } })).json.error).toBe('Cannot attach more than 4 files');
    const made = await send('/api/v1/statuses', { token, json: { media_ids: ids.slice(0, 4) } });
    expect(made.status, made.text).toBe(200);
    expect(made.json.media_attachments.map((media: any) => media.id)).toEqual(ids.slice(0, 4));
  });
});

describe('revocation', () => {
  it('another client\'s token is 403; its own is revoked (200 {}, again 200 {}), and the API then answers 401', async () => {
    const { app, token } = await connect('ann');
    const stranger = await registerApp();
    const revoke = (client: { client_id: string; client_secret: string }, value: string) =>
      send('/oauth/revoke', { form: { client_id: client.client_id, client_secret: client.client_secret, token: value } });
    expect(await revoke(stranger, token)).toMatchObject({ status: 403, json: { error: 'unauthorized_client' } });
    expect((await send('/api/v1/accounts/verify_credentials', { token })).status).toBe(200);
    expect(await revoke(app, token)).toMatchObject({ status: 200, json: {} });
    expect(fake.revokedTokens.has(token)).toBe(true);
    expect(await send('/api/v1/accounts/verify_credentials', { token })).toMatchObject({ status: 401, json: { error: 'The access token was revoked' } });
    expect(await send('/api/v1/statuses', { token, json: { status: 'after revocation' } })).toMatchObject({ status: 401 });
    expect(await revoke(app, token)).toMatchObject({ status: 200, json: {} });
    expect(await revoke(app, 'never-issued')).toMatchObject({ status: 200, json: {} });
    expect((await revoke({ ...app, client_secret: 'wrong' }, token)).status).toBe(401);
  });
});

describe('faults', () => {
  it('a dropped send makes the status and answers nothing; a 429 carries the reset; a 503 is JSON, a 502 page HTML', async () => {
    const token = fake.issueToken('bob');
    const before = fake.statusesOf('bob').length;
    fake.failNext('statuses', 'drop');
    await expect(send('/api/v1/statuses', { token, json: { status: 'lost answer' } })).rejects.toThrow();
    expect(fake.statusesOf('bob')).toHaveLength(before + 1);
    const reset = new Date(Date.now() + 90_000);
    fake.failNext('statuses', { status: 429, reset });
    const limited = await send('/api/v1/statuses', { token, json: { status: 'x' } });
    expect(limited).toMatchObject({ status: 429, json: { error: 'Too many requests' } });
    expect(Date.parse(limited.headers.get('x-ratelimit-reset')!)).toBe(reset.getTime());
    expect(limited.headers.get('x-ratelimit-remaining')).toBe('0');
    fake.failNext('media', { status: 503 });
    expect((await upload(token, await photo(8, 8))).json).toEqual({ error: 'There was a temporary problem serving your request, please try again' });
    fake.failNext('token', { status: 502, html: true });
    const page = await send('/oauth/token', { form: { grant_type: 'client_credentials' } });
    expect(page.status).toBe(502);
    expect(page.headers.get('content-type')).toMatch(/^text\/html/);
    expect(fake.statusesOf('bob')).toHaveLength(before + 1);
  });

  it('a held send waits; a second send with the same key meanwhile is not deduplicated, as on Mastodon', async () => {
    const token = fake.issueToken('ann');
    const release = fake.holdNext('statuses');
    const first = send('/api/v1/statuses', { token, json: { status: 'held' }, headers: { 'Idempotency-Key': 'race' } });
    // Once its body is read, the first request runs on to the hold without waiting on anything else.
    while (!fake.requests.some((request) => (request.body as any)?.status === 'held')) await new Promise((resolve) => setTimeout(resolve, 10));
    const second = await send('/api/v1/statuses', { token, json: { status: 'held' }, headers: { 'Idempotency-Key': 'race' } });
    release();
    expect((await first).json.id).not.toBe(second.json.id);
  });
});
