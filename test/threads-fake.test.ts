import { createHash } from 'node:crypto';
import events from 'node:events';
import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { photo } from './support/images.js';
import { followThreadsLinks, startFakeThreads, threadsLength, threadsLinks, type FakeThreads } from './support/threads.js';

/**
 * The fake Threads API (test/support/threads.ts) refuses what Meta's documentation says Meta refuses and answers as
 * it answers, proved through plain fetch: the Authorization Window and the code exchange, long-lived tokens and their
 * refresh on the fake clock, the checks every request meets, containers (processing, ERROR, EXPIRED, fetched images,
 * carousels), publishing exactly once, replies, quotas, deletion, and the faults other tests inject.
 */

const CALLBACK = 'http://127.0.0.1:9/oauth/threads/callback';
const HOUR = 3600_000;
const DAY = 24 * HOUR;

let fake: FakeThreads;
let media: http.Server;
let mediaUrl: string;
let png: Buffer;
let jpeg: Buffer;
let slowRequests = 0;

beforeAll(async () => {
  fake = await startFakeThreads({
    app: { appId: '990602627938098', appSecret: 'a1b2c3d4e5f6', redirectUri: CALLBACK },
    accounts: [{ username: 'threads_ann', name: 'Ann Example' }, { username: 'threads_bob', name: 'Bob Sample' }],
    // Long, so that a container is still processing whatever the machine's load; tests move on with advance/finish.
    processingMs: 60_000,
  });
  png = await photo(16, 12, 'png');
  jpeg = await photo(16, 12);
  // The service's media store, as Meta's crawler meets it.
  media = http.createServer((req, res) => {
    if (req.url === '/tiny.png') return void res.writeHead(200, { 'content-type': 'image/png' }).end(png);
    if (req.url === '/photo.jpg') return void res.writeHead(200, { 'content-type': 'image/jpeg' }).end(jpeg);
    if (req.url === '/page.png') return void res.writeHead(200, { 'content-type': 'image/png' }).end('<html>not an image</html>');
    if (req.url === '/slow.png') return void slowRequests++;
    res.writeHead(404).end();
  });
  media.listen(0, '127.0.0.1');
  await events.once(media, 'listening');
  mediaUrl = `http://127.0.0.1:${(media.address() as { port: number }).port}`;
});
afterAll(async () => {
  await fake?.close();
  media?.closeAllConnections();
  await new Promise((resolve) => media?.close(resolve));
});

interface Answer {
  status: number;
  headers: Headers;
  text: string;
  json: any;
}

async function send(target: FakeThreads, path: string, init: { method?: string; token?: string; bearer?: string; query?: Record<string, string>; form?: Record<string, string>; json?: unknown } = {}): Promise<Answer> {
  const query = new URLSearchParams(init.query);
  if (init.token) query.set('access_token', init.token);
  const headers: Record<string, string> = {};
  if (init.bearer) headers.authorization = `Bearer ${init.bearer}`;
  let body: string | undefined;
  if (init.form) {
    headers['content-type'] = 'application/x-www-form-urlencoded';
    body = new URLSearchParams(init.form).toString();
  } else if (init.json !== undefined) {
    headers['content-type'] = 'application/json';
    body = JSON.stringify(init.json);
  }
  const response = await fetch(`${target.url}${path}${query.size ? `?${query}` : ''}`, { method: init.method ?? (body ? 'POST' : 'GET'), headers, body, redirect: 'manual' });
  const text = await response.text();
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: response.status, headers: response.headers, text, json };
}
const api = (path: string, init: Parameters<typeof send>[2] = {}) => send(fake, `/v1.0${path}`, init);

/** The error object, its fbtrace_id checked and left out. */
function graphError(answer: Answer) {
  expect(answer.json?.error?.fbtrace_id, answer.text).toMatch(/^[\w-]{10,}$/);
  const { fbtrace_id: _trace, ...rest } = answer.json.error;
  return { status: answer.status, ...rest };
}

const authorizePath = (params: Record<string, string> = {}) =>
  `/oauth/authorize?${new URLSearchParams({ client_id: fake.app.appId, redirect_uri: CALLBACK, scope: 'threads_basic,threads_content_publish,threads_manage_replies', response_type: 'code', state: 'st-1', ...params })}`;

/** The code the Authorization Window sends back when the fake consents as `account`. */
async function codeFor(account = 'threads_ann', params: Record<string, string> = {}) {
  fake.autoConsent(account);
  try {
    const answer = await send(fake, authorizePath(params));
    expect(answer.status, answer.text).toBe(302);
    return new URL(answer.headers.get('location')!).searchParams.get('code')!;
  } finally {
    fake.autoConsent(null);
  }
}

const exchangeCode = (code: string, fields: Record<string, string> = {}) =>
  send(fake, '/oauth/access_token', { form: { client_id: fake.app.appId, client_secret: fake.app.appSecret, grant_type: 'authorization_code', redirect_uri: CALLBACK, code, ...fields } });

const longLived = (token: string, secret = fake.app.appSecret) => send(fake, '/access_token', { query: { grant_type: 'th_exchange_token', client_secret: secret }, token });
const refresh = (token: string) => send(fake, '/refresh_access_token', { query: { grant_type: 'th_refresh_token' }, token });

async function createContainer(token: string, fields: Record<string, string>, target = fake) {
  return send(target, `/v1.0/me/threads`, { method: 'POST', query: fields, token });
}
async function ready(id: string, target = fake) {
  await target.settled();
  target.finish(id);
  return target.statusOf(id);
}
/** A published post: container, processing, publish. */
async function post(token: string, fields: Record<string, string>, target = fake) {
  const made = await createContainer(token, fields, target);
  expect(made.status, made.text).toBe(200);
  expect(await ready(made.json.id, target)).toBe('FINISHED');
  const published = await send(target, '/v1.0/me/threads_publish', { method: 'POST', query: { creation_id: made.json.id }, token });
  expect(published.status, published.text).toBe(200);
  return { container: made.json.id as string, id: published.json.id as string };
}

describe('the Authorization Window', () => {
  it('an unknown app, a redirect URI not registered, a bad scope or response_type, PKCE: an error page, never a redirect', async () => {
    const cases: [Record<string, string>, RegExp][] = [
      [{ client_id: '123' }, /Invalid App ID/],
      [{ redirect_uri: 'https://evil.example/cb' }, /URL Blocked/],
      [{ redirect_uri: `${CALLBACK}/` }, /URL Blocked/], // compared exactly: the trailing slash the dashboard may add matters
      [{ scope: 'threads_basic,threads_everything' }, /Invalid Scopes: threads_everything/],
      [{ scope: 'threads_content_publish' }, /threads_basic is required/],
      [{ response_type: 'token' }, /response_type must be code/],
      [{ code_challenge: 'abc' }, /Unknown parameter code_challenge/],
    ];
    for (const [params, message] of cases) {
      const answer = await send(fake, authorizePath(params));
      expect(answer.status, JSON.stringify(params)).toBe(400);
      expect(answer.headers.get('location')).toBeNull();
      expect(answer.text).toMatch(message);
    }
  });

  it('shows a consent page with Allow and Cancel; Cancel goes back with user_denied, Allow with a code, both with the state and #_', async () => {
    const consent = async () => {
      const page = await send(fake, authorizePath({ scope: 'threads_basic threads_content_publish' }));
      expect(page.status).toBe(200);
      expect(page.headers.get('content-type')).toMatch(/^text\/html/);
      expect(page.text).toContain('Signed in as <strong>@threads_ann</strong>');
      expect(page.text).toContain('<code>threads_content_publish</code>');
      const forms = [...page.text.matchAll(/<form method="post" action="\/oauth\/authorize">(.*?)<\/form>/g)].map((match) => ({
        fields: Object.fromEntries([...match[1]!.matchAll(/name="([^"]+)" value="([^"]*)"/g)].map((field) => [field[1]!, field[2]!.replace(/&amp;/g, '&')])),
        button: /<button[^>]*>([^<]+)<\/button>/.exec(match[1]!)![1],
      }));
      expect(forms.map((form) => form.button)).toEqual(['Allow', 'Cancel']);
      return forms;
    };
    const [, cancelForm] = await consent();
    const cancelled = await send(fake, '/oauth/authorize', { form: cancelForm!.fields });
    const cancelledTo = new URL(cancelled.headers.get('location')!);
    expect(`${cancelledTo.origin}${cancelledTo.pathname}`).toBe(CALLBACK);
    expect(Object.fromEntries(cancelledTo.searchParams)).toEqual({ error: 'access_denied', error_reason: 'user_denied', error_description: 'The user denied your request.', state: 'st-1' });
    expect(cancelledTo.hash).toBe('#_');
    // A form is good once.
    expect((await send(fake, '/oauth/authorize', { form: cancelForm!.fields })).status).toBe(400);
    const [allowForm] = await consent();
    const allowed = new URL((await send(fake, '/oauth/authorize', { form: allowForm!.fields })).headers.get('location')!);
    expect(allowed.searchParams.get('code')).toMatch(/^AQ[\w-]{40,}$/);
    expect(allowed.searchParams.get('state')).toBe('st-1');
    expect(allowed.hash).toBe('#_');
    expect(fake.codes.get(allowed.searchParams.get('code')!)?.scopes).toEqual(['threads_basic', 'threads_content_publish']);
  });

  it('followThreadsLinks goes through the window to the service as a browser would, the #_ left behind', async () => {
    const callback = `${mediaUrl}/oauth/threads/callback`;
    fake.app.redirectUris.push(callback);
    fake.autoConsent('threads_bob');
    try {
      const landed = await followThreadsLinks(`${fake.url}${authorizePath({ redirect_uri: callback })}`);
      const at = new URL(landed.url);
      expect(`${at.origin}${at.pathname}`).toBe(callback);
      expect(at.hash).toBe('#_');
      expect(fake.codes.get(at.searchParams.get('code')!)?.accountId).toBe(fake.account('threads_bob').id);
    } finally {
      fake.autoConsent(null);
      fake.app.redirectUris.pop();
    }
  });

  it('autoConsent answers at once; deny goes back with access_denied; withheld permissions are not granted', async () => {
    fake.autoConsent('deny');
    const denied = await send(fake, authorizePath());
    fake.autoConsent(null);
    expect(new URL(denied.headers.get('location')!).searchParams.get('error')).toBe('access_denied');
    fake.withheldScopes.add('threads_manage_replies');
    try {
      const code = await codeFor();
      expect(fake.codes.get(code)!.scopes).toEqual(['threads_basic', 'threads_content_publish']);
    } finally {
      fake.withheldScopes.clear();
    }
  });
});

describe('the code exchange', () => {
  it('refuses an unknown app (101), a wrong secret (1), another redirect URI (36008); answers a short-lived token and user_id as a JSON number', async () => {
    const code = await codeFor();
    expect(graphError(await exchangeCode(code, { client_id: '1' }))).toMatchObject({ status: 400, type: 'OAuthException', code: 101 });
    expect(graphError(await exchangeCode(code, { client_secret: 'wrong' }))).toMatchObject({ code: 1, message: 'Error validating client secret.' });
    expect(graphError(await exchangeCode(code, { redirect_uri: 'https://postwise.example/cb' }))).toMatchObject({ code: 100, error_subcode: 36008 });
    expect(graphError(await exchangeCode(code, { scope: 'x' }))).toMatchObject({ code: 100, message: expect.stringContaining('Unknown parameter: scope') });
    const answer = await exchangeCode(code);
    expect(answer.status, answer.text).toBe(200);
    const account = fake.account('threads_ann');
    // The id digit for digit in the text; JSON.parse rounds it (17 digits, beyond 2^53): read it from GET /me.
    expect(answer.text).toBe(`{"access_token":${JSON.stringify(answer.json.access_token)},"user_id":${account.id}}`);
    expect(String(answer.json.user_id)).not.toBe(account.id);
    const token = fake.tokens.get(answer.json.access_token)!;
    expect(token).toMatchObject({ kind: 'short', accountId: account.id, scopes: ['threads_basic', 'threads_content_publish', 'threads_manage_replies'] });
    expect(token.expiresAt - token.issuedAt).toBe(HOUR);
    // Single use; the code also lives an hour only.
    expect(graphError(await exchangeCode(code))).toMatchObject({ code: 100, error_subcode: 36009, message: 'This authorization code has been used.' });
    const late = await codeFor();
    fake.advance(HOUR);
    expect(graphError(await exchangeCode(late))).toMatchObject({ code: 100, error_subcode: 36007 });
    expect(graphError(await exchangeCode('AQnever'))).toMatchObject({ code: 100, message: 'Invalid verification code format.' });
    expect((await send(fake, '/oauth/access_token', { query: { client_id: fake.app.appId } })).status).toBe(400); // GET is not the exchange
  });
});

describe('long-lived tokens on the fake clock', () => {
  it('th_exchange_token: the app secret, a short-lived unexpired token; answers bearer for 60 days', async () => {
    const short = (await exchangeCode(await codeFor())).json.access_token as string;
    expect(graphError(await longLived(short, 'wrong'))).toMatchObject({ code: 1, message: 'Error validating client secret.' });
    expect(graphError(await send(fake, '/access_token', { query: { grant_type: 'fb_exchange_token', client_secret: fake.app.appSecret }, token: short }))).toMatchObject({ code: 100 });
    const long = await longLived(short);
    expect(long.status, long.text).toBe(200);
    // expires_in counts down the seconds left (Meta's example: 5183944).
    expect(long.json).toEqual({ access_token: expect.stringMatching(/^TH/), token_type: 'bearer', expires_in: expect.any(Number) });
    expect(60 * 86_400 - long.json.expires_in).toBeLessThanOrEqual(1);
    expect(graphError(await longLived(long.json.access_token))).toMatchObject({ code: 100, message: expect.stringContaining('already long-lived') });
    // An expired short-lived token cannot be exchanged.
    const other = (await exchangeCode(await codeFor())).json.access_token as string;
    fake.advance(HOUR + 1000);
    expect(graphError(await longLived(other))).toMatchObject({ status: 400, type: 'OAuthException', code: 190, error_subcode: 463, message: expect.stringMatching(/^Error validating access token: Session has expired on /) });
    expect((await api('/me', { token: long.json.access_token })).status).toBe(200);
  });

  it('th_refresh_token: refused before 24 hours and for a short-lived token; then 60 days again; an expired one cannot be refreshed', async () => {
    const long = fake.issueToken('threads_ann');
    expect(graphError(await refresh(long))).toMatchObject({ code: 100, message: expect.stringContaining('at least 24 hours old') });
    expect(graphError(await refresh(fake.issueToken('threads_ann', { kind: 'short' })))).toMatchObject({ code: 100, message: expect.stringContaining('long-lived') });
    fake.advance(DAY + 1000);
    const refreshed = await refresh(long);
    expect(refreshed.status, refreshed.text).toBe(200);
    expect(refreshed.json).toEqual({ access_token: expect.any(String), token_type: 'bearer', expires_in: expect.any(Number) });
    expect(60 * 86_400 - refreshed.json.expires_in).toBeLessThanOrEqual(1);
    expect(refreshed.json.access_token).not.toBe(long);
    // The new token is a day old only after a day; the old one lasts to its own end.
    expect(graphError(await refresh(refreshed.json.access_token))).toMatchObject({ code: 100 });
    fake.advance(59 * DAY);
    expect(graphError(await refresh(long))).toMatchObject({ code: 190, error_subcode: 463 });
    expect(graphError(await api('/me', { token: long }))).toMatchObject({ code: 190, error_subcode: 463 });
    expect((await refresh(refreshed.json.access_token)).status).toBe(200);
  });
});

describe('every request is checked', () => {
  it('the version, the token (query or Bearer, not two), its validity, revocation, permissions and unknown parameters', async () => {
    const token = fake.issueToken('threads_ann');
    expect(graphError(await send(fake, '/me', { token }))).toMatchObject({ code: 2500, message: expect.stringContaining('the fake requires /v1.0/') });
    expect(graphError(await send(fake, '/v19.0/me', { token }))).toMatchObject({ code: 2500 });
    expect(graphError(await api('/me'))).toMatchObject({ code: 2500, type: 'OAuthException' });
    expect(graphError(await api(`/${fake.account('threads_ann').id}/threads_publishing_limit`))).toMatchObject({ code: 104 });
    expect(graphError(await api('/me', { token: 'THnot-a-token' }))).toEqual({ status: 400, message: 'Invalid OAuth access token - Cannot parse access token', type: 'OAuthException', code: 190 });
    expect((await api('/me', { bearer: token })).json).toEqual({ id: fake.account('threads_ann').id });
    expect(graphError(await api('/me', { bearer: token, token: fake.issueToken('threads_ann') }))).toMatchObject({ code: 100, message: expect.stringContaining('Two different access tokens') });
    expect(graphError(await api('/me', { token, query: { locale: 'en_US' } }))).toMatchObject({ code: 100, message: expect.stringContaining('Unknown parameter: locale') });
    const readOnly = fake.issueToken('threads_ann', { scopes: 'threads_basic' });
    expect(graphError(await createContainer(readOnly, { media_type: 'TEXT', text: 'hi' }))).toMatchObject({ status: 403, code: 10, error_user_msg: expect.stringContaining('threads_content_publish') });
    // Another account's id in the path is no object of the caller's.
    const bob = fake.account('threads_bob');
    expect(graphError(await api(`/${bob.id}/threads`, { method: 'POST', token, query: { media_type: 'TEXT', text: 'x' } }))).toMatchObject({ code: 100, error_subcode: 33 });
    fake.revoke(token);
    expect(graphError(await api('/me', { token }))).toMatchObject({ code: 190, error_subcode: 458, message: expect.stringContaining('has not authorized application') });
    const other = fake.issueToken('threads_ann');
    fake.revoke(other, 'password');
    expect(graphError(await api('/me', { token: other }))).toMatchObject({ code: 190, error_subcode: 460 });
  });

  it('GET /me answers the documented profile fields and refuses others; the picture is served', async () => {
    const token = fake.issueToken('threads_ann');
    const me = await api('/me', { token, query: { fields: 'id,username,name,threads_profile_picture_url,threads_biography' } });
    const ann = fake.account('threads_ann');
    expect(me.json).toEqual({ id: ann.id, username: 'threads_ann', name: 'Ann Example', threads_profile_picture_url: ann.pictureUrl, threads_biography: '' });
    expect((await fetch(ann.pictureUrl)).headers.get('content-type')).toBe('image/png');
    expect(graphError(await api('/me', { token, query: { fields: 'id,email' } }))).toMatchObject({ code: 100, message: 'Tried accessing nonexisting field (email)' });
    expect((await api(`/${ann.id}`, { token, query: { fields: 'username' } })).json).toEqual({ username: 'threads_ann' });
  });
});

describe('containers', () => {
  let token: string;
  beforeAll(() => void (token = fake.issueToken('threads_ann', { scopes: 'threads_basic,threads_content_publish,threads_manage_replies,threads_delete' })));

  it('IN_PROGRESS, then FINISHED; publishing too soon is Media Not Found; then the post, PUBLISHED, and never twice', async () => {
    const made = await createContainer(token, { media_type: 'TEXT', text: 'Hello from Postwise', topic_tag: 'Scheduling' });
    expect(made.json).toEqual({ id: expect.stringMatching(/^\d{17,}$/) });
    const id = made.json.id as string;
    const status = (fields = 'status,error_message,id') => api(`/${id}`, { token, query: { fields } });
    expect((await status()).json).toEqual({ id, status: 'IN_PROGRESS' });
    const tooSoon = await api('/me/threads_publish', { method: 'POST', token, query: { creation_id: id } });
    expect(graphError(tooSoon)).toEqual({
      status: 400, message: 'The requested resource does not exist', type: 'OAuthException', code: 24, error_subcode: 4279009, is_transient: false,
      error_user_title: 'Media Not Found', error_user_msg: `The media with id ${id} cannot be found.`,
    });
    fake.advance(fake.processingMs);
    expect((await status()).json).toEqual({ id, status: 'FINISHED' });
    // creation_id in a form body works as in the query string.
    const published = await api(`/${fake.account('threads_ann').id}/threads_publish`, { token, form: { creation_id: id } });
    expect(published.status, published.text).toBe(200);
    const postId = published.json.id as string;
    expect(postId).not.toBe(id);
    expect((await status('status')).json).toEqual({ status: 'PUBLISHED' });
    expect(fake.containers.get(id)!.postId).toBe(postId);
    expect(graphError(await api('/me/threads_publish', { method: 'POST', token, query: { creation_id: id } }))).toMatchObject({ code: 24, error_subcode: 4279009 });
    expect(fake.postsOf('threads_ann').filter((post) => post.containerId === id)).toHaveLength(1);
    // The post: its permalink, and no `status` field.
    const read = await api(`/${postId}`, { token, query: { fields: 'id,permalink,media_type,text,topic_tag,timestamp,owner' } });
    expect(read.json).toEqual({
      id: postId, permalink: expect.stringMatching(new RegExp(`^${fake.url}/@threads_ann/post/[\\w-]{11}$`)), media_type: 'TEXT_POST', text: 'Hello from Postwise',
      topic_tag: 'Scheduling', timestamp: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+0000$/), owner: { id: fake.account('threads_ann').id },
    });
    expect((await fetch(read.json.permalink)).status).toBe(200);
    expect(graphError(await api(`/${postId}`, { token, query: { fields: 'status' } }))).toMatchObject({ type: 'THApiException', code: 100, message: 'Tried accessing nonexisting field (status)' });
    expect(graphError(await api(`/${id}`, { token, query: { fields: 'permalink' } }))).toMatchObject({ message: 'Tried accessing nonexisting field (permalink)' });
    // The list of the account's threads, newest first.
    const list = await api('/me/threads', { token, query: { fields: 'id,text', limit: '1' } });
    expect(list.json.data).toEqual([{ id: postId, text: 'Hello from Postwise' }]);
    expect(list.json.paging.cursors.after).toEqual(expect.any(String));
  });

  it('what each media type takes: required fields, alt text for media only, link_attachment for text only, unknown and unmodelled parameters', async () => {
    const refused = async (fields: Record<string, string>, message: RegExp | string) =>
      expect(graphError(await createContainer(token, fields)), JSON.stringify(fields)).toMatchObject({ status: 400, type: 'THApiException', code: 100, message: expect.stringMatching(message) });
    await refused({ text: 'no type' }, 'The parameter media_type is required');
    await refused({ media_type: 'REELS' }, 'media_type must be one of the following values: TEXT, IMAGE, VIDEO, CAROUSEL');
    await refused({ media_type: 'TEXT' }, 'text is required');
    await refused({ media_type: 'IMAGE', text: 'x' }, 'The parameter image_url is required');
    await refused({ media_type: 'TEXT', text: 'x', alt_text: 'a' }, /alt_text is taken for images and videos only/);
    await refused({ media_type: 'TEXT', text: 'x', image_url: `${mediaUrl}/tiny.png` }, /image_url is taken with media_type=IMAGE only/);
    await refused({ media_type: 'IMAGE', image_url: `${mediaUrl}/tiny.png`, link_attachment: 'https://postwise.example' }, /link_attachment is only available for text posts/);
    await refused({ media_type: 'IMAGE', image_url: 'ftp://example.com/a.png' }, /image_url must be an http or https URL/);
    await refused({ media_type: 'TEXT', text: 'x', caption: 'y' }, /Unknown parameter: caption \(Meta would ignore it: the fake refuses it\)/);
    await refused({ media_type: 'TEXT', text: 'x', auto_publish_text: 'true' }, /auto_publish_text is not modelled/);
    await refused({ media_type: 'TEXT', text: 'x', topic_tag: 'a.b' }, /topic_tag must be 1 to 50 characters/);
    await refused({ media_type: 'TEXT', text: 'x', topic_tag: 'x'.repeat(51) }, /topic_tag/);
    await refused({ media_type: 'TEXT', text: 'x', reply_control: 'nobody' }, /reply_control must be one of/);
    await refused({ media_type: 'IMAGE', image_url: `${mediaUrl}/tiny.png`, is_carousel_item: 'true', text: 'x' }, /text is taken by the CAROUSEL container/);
    await refused({ media_type: 'TEXT', text: 'x', is_carousel_item: 'yes' }, /is_carousel_item must be a boolean/);
    const linkOnly = await createContainer(token, { media_type: 'TEXT', link_attachment: 'https://postwise.example/post' });
    expect(linkOnly.status, linkOnly.text).toBe(200);
    expect(fake.containers.get(linkOnly.json.id)!.linkAttachment).toBe('https://postwise.example/post');
  });

  it('500 characters with emojis counted as UTF-8 bytes; at most 5 unique links', async () => {
    expect(threadsLength('héllo')).toBe(5);
    expect(threadsLength('😀')).toBe(4);
    expect(threadsLength('👍🏽')).toBe(8);
    expect(threadsLength('🇫🇷')).toBe(8);
    expect((await createContainer(token, { media_type: 'TEXT', text: `${'a'.repeat(496)}😀` })).status).toBe(200);
    expect(graphError(await createContainer(token, { media_type: 'TEXT', text: `${'a'.repeat(497)}😀` }))).toMatchObject({ code: 100, message: expect.stringContaining('it counts 501') });
    expect(threadsLinks('www.facebook.com and https://www.facebook.com/ again', 'https://WWW.facebook.com')).toEqual(['www.facebook.com']);
    const five = ['a', 'b', 'c', 'd', 'e'].map((name) => `https://${name}.example/x`).join(' ');
    expect((await createContainer(token, { media_type: 'TEXT', text: `${five} https://a.example/x.` })).status).toBe(200);
    expect(graphError(await createContainer(token, { media_type: 'TEXT', text: five, link_attachment: 'https://f.example' }))).toMatchObject({
      code: 100, message: expect.stringMatching(/^THREADS_API__LINK_LIMIT_EXCEEDED/), error_user_msg: 'THREADS_API__LINK_LIMIT_EXCEEDED',
    });
  });

  it('an image is fetched from its URL: the bytes Meta received are kept, and the container finishes', async () => {
    const made = await createContainer(token, { media_type: 'IMAGE', image_url: `${mediaUrl}/tiny.png`, alt_text: 'A gradient', text: 'An image' });
    const id = made.json.id as string;
    expect(await ready(id)).toBe('FINISHED');
    const fetched = fake.containers.get(id)!.fetch!;
    expect(fetched).toMatchObject({ state: 'done', httpStatus: 200, mimeType: 'image/png', size: png.length, sha256: createHash('sha256').update(png).digest('hex') });
    const published = await api('/me/threads_publish', { method: 'POST', token, query: { creation_id: id } });
    const read = await api(`/${published.json.id}`, { token, query: { fields: 'media_type,alt_text,media_url' } });
    expect(read.json).toMatchObject({ media_type: 'IMAGE', alt_text: 'A gradient' });
    expect(Buffer.from(await (await fetch(read.json.media_url)).arrayBuffer()).equals(png)).toBe(true);
  });

  it('an image Meta cannot use ends in ERROR (UNKNOWN): unreachable, not 200, not JPEG/PNG; the reason is kept', async () => {
    const cases: [string, string][] = [
      ['http://127.0.0.1:9/unreachable.png', 'unreachable'],
      [`${mediaUrl}/missing.png`, 'status'],
      [`${mediaUrl}/page.png`, 'type'],
    ];
    for (const [imageUrl, reason] of cases) {
      const made = await createContainer(token, { media_type: 'IMAGE', image_url: imageUrl });
      expect(made.status, made.text).toBe(200);
      await fake.settled();
      expect(fake.containers.get(made.json.id)!.fetch!.failure?.reason, imageUrl).toBe(reason);
      expect((await api(`/${made.json.id}`, { token, query: { fields: 'id,status,error_message' } })).json).toEqual({ id: made.json.id, status: 'ERROR', error_message: 'UNKNOWN' });
      expect(graphError(await api('/me/threads_publish', { method: 'POST', token, query: { creation_id: made.json.id } }))).toMatchObject({ code: 24 });
    }
  });

  it('too large, too slow, or refused at creation (mediaFailure: request) with Meta media errors', async () => {
    const strict = await startFakeThreads({ maxImageBytes: 100, fetchTimeoutMs: 150, mediaFailure: 'request' });
    try {
      const strictToken = strict.issueToken('threads_ann');
      expect(graphError(await createContainer(strictToken, { media_type: 'IMAGE', image_url: `${mediaUrl}/tiny.png` }, strict))).toMatchObject({ code: 36000, error_subcode: 2207004, error_user_title: 'Image size too large' });
      expect(graphError(await createContainer(strictToken, { media_type: 'IMAGE', image_url: `${mediaUrl}/missing.png` }, strict))).toMatchObject({ code: 1, error_subcode: 2207052 });
      expect(graphError(await createContainer(strictToken, { media_type: 'IMAGE', image_url: `${mediaUrl}/slow.png` }, strict))).toMatchObject({ code: -2, error_subcode: 2207003 });
      expect(slowRequests).toBe(1);
      expect(strict.containers.size).toBe(0);
      strict.mediaFailure = 'container';
      const big = await createContainer(strictToken, { media_type: 'IMAGE', image_url: `${mediaUrl}/photo.jpg` }, strict);
      await strict.settled();
      expect(strict.containers.get(big.json.id)!.fetch!.failure).toMatchObject({ reason: 'size' });
      expect(strict.statusOf(big.json.id)).toBe('ERROR');
    } finally {
      await strict.close();
    }
  });

  it('a video is fetched too: FAILED_DOWNLOADING_VIDEO when it cannot be, FAILED_PROCESSING_VIDEO when it is not MP4/MOV', async () => {
    const unreachable = await createContainer(token, { media_type: 'VIDEO', video_url: `${mediaUrl}/missing.mp4`, alt_text: 'A clip' });
    const notVideo = await createContainer(token, { media_type: 'VIDEO', video_url: `${mediaUrl}/tiny.png` });
    await fake.settled();
    expect((await api(`/${unreachable.json.id}`, { token, query: { fields: 'status,error_message' } })).json).toEqual({ status: 'ERROR', error_message: 'FAILED_DOWNLOADING_VIDEO' });
    expect((await api(`/${notVideo.json.id}`, { token, query: { fields: 'status,error_message' } })).json).toEqual({ status: 'ERROR', error_message: 'FAILED_PROCESSING_VIDEO' });
  });

  it('failContainers and failContainer end containers in ERROR with the message given; 24 hours unpublished is EXPIRED', async () => {
    fake.failContainers(1, 'FAILED_PROCESSING_VIDEO');
    const failing = (await createContainer(token, { media_type: 'TEXT', text: 'will fail' })).json.id as string;
    expect(fake.statusOf(failing)).toBe('IN_PROGRESS');
    fake.finish(failing);
    expect((await api(`/${failing}`, { token, query: { fields: 'status,error_message' } })).json).toEqual({ status: 'ERROR', error_message: 'FAILED_PROCESSING_VIDEO' });
    const other = (await createContainer(token, { media_type: 'TEXT', text: 'fails too' })).json.id as string;
    fake.failContainer(other);
    expect(await ready(other)).toBe('ERROR');
    const stale = (await createContainer(token, { media_type: 'TEXT', text: 'too late' })).json.id as string;
    fake.advance(DAY);
    expect((await api(`/${stale}`, { token, query: { fields: 'status' } })).json).toEqual({ status: 'EXPIRED' });
    expect(graphError(await api('/me/threads_publish', { method: 'POST', token, query: { creation_id: stale } }))).toMatchObject({ code: -2, error_subcode: 2207020 });
  });

  it('carousels: 2 to 20 items of this account made as carousel items, finished with them, published once as CAROUSEL_ALBUM', async () => {
    const item = async (fields: Record<string, string> = {}, who = token) => (await createContainer(who, { media_type: 'IMAGE', image_url: `${mediaUrl}/tiny.png`, is_carousel_item: 'true', ...fields })).json.id as string;
    const [a, b] = [await item({ alt_text: 'first' }), await item()];
    const carousel = (children: string | string[], fields: Record<string, string> = {}) =>
      Array.isArray(children) ? api('/me/threads', { token, json: { media_type: 'CAROUSEL', children, ...fields } }) : createContainer(token, { media_type: 'CAROUSEL', children, ...fields });
    expect(graphError(await carousel(a!))).toMatchObject({ code: 100, message: expect.stringContaining('2 to 20 containers; it names 1') });
    expect(graphError(await carousel(Array.from({ length: 21 }, () => a!)))).toMatchObject({ message: expect.stringContaining('it names 21') });
    expect(graphError(await carousel(`${a},${a}`))).toMatchObject({ message: expect.stringContaining('twice') });
    const single = (await createContainer(token, { media_type: 'IMAGE', image_url: `${mediaUrl}/tiny.png` })).json.id as string;
    expect(graphError(await carousel(`${a},${single}`))).toMatchObject({ message: expect.stringContaining('is_carousel_item=true') });
    const bobs = await item({}, fake.issueToken('threads_bob'));
    expect(graphError(await carousel(`${a},${bobs}`))).toMatchObject({ message: expect.stringContaining('not a container of this account') });
    expect(graphError(await carousel(`${a},${b}`, { alt_text: 'x' }))).toMatchObject({ message: expect.stringContaining('alt_text') });
    expect(graphError(await api('/me/threads_publish', { method: 'POST', token, query: { creation_id: a! } }))).toMatchObject({ code: 24 }); // an item is not published alone
    const made = await carousel([a!, b!], { text: 'Two pictures' });
    expect(made.status, made.text).toBe(200);
    expect(graphError(await carousel(`${a},${b}`))).toMatchObject({ message: expect.stringContaining('already in carousel') });
    await fake.settled();
    fake.finish(made.json.id);
    expect(fake.statusOf(made.json.id)).toBe('IN_PROGRESS'); // its items are still processing
    fake.advance(fake.processingMs);
    expect(fake.statusOf(made.json.id)).toBe('FINISHED');
    const published = await api('/me/threads_publish', { method: 'POST', token, query: { creation_id: made.json.id } });
    const read = await api(`/${published.json.id}`, { token, query: { fields: 'media_type,text,children' } });
    expect(read.json).toMatchObject({ media_type: 'CAROUSEL_ALBUM', text: 'Two pictures', children: { data: [{ id: expect.any(String) }, { id: expect.any(String) }] } });
    expect((await api(`/${read.json.children.data[0].id}`, { token, query: { fields: 'media_type,alt_text' } })).json).toEqual({ media_type: 'IMAGE', alt_text: 'first' });
    expect(fake.statusOf(a!)).toBe('PUBLISHED');
  });

  it('replies need an existing post and threads_manage_replies; they count against the reply quota; deleting needs threads_delete', async () => {
    const root = await post(token, { media_type: 'TEXT', text: 'root' });
    expect(graphError(await createContainer(token, { media_type: 'TEXT', text: 'reply', reply_to_id: '123' }))).toMatchObject({ code: 100, message: expect.stringContaining('reply_to_id 123') });
    const noReplies = fake.issueToken('threads_ann', { scopes: 'threads_basic,threads_content_publish' });
    expect(graphError(await createContainer(noReplies, { media_type: 'TEXT', text: 'reply', reply_to_id: root.id }))).toMatchObject({ status: 403, code: 10 });
    const theirs = fake.postAs('threads_bob', 'a post of Bob’s');
    const before = fake.quotaUsage('threads_ann');
    const reply = await post(token, { media_type: 'TEXT', text: 'first comment', reply_to_id: root.id });
    await post(token, { media_type: 'TEXT', text: 'hello Bob', reply_to_id: theirs.id });
    expect(fake.quotaUsage('threads_ann')).toMatchObject({ posts: before.posts, replies: before.replies + 2 });
    expect((await api(`/${reply.id}`, { token, query: { fields: 'is_reply,replied_to,root_post' } })).json).toEqual({ is_reply: true, replied_to: { id: root.id }, root_post: { id: root.id } });
    expect((await api(`/${root.id}`, { token, query: { fields: 'has_replies' } })).json).toEqual({ has_replies: true });
    const limit = await api('/me/threads_publishing_limit', { token, query: { fields: 'quota_usage,config,reply_quota_usage,reply_config' } });
    expect(limit.json).toEqual({ data: [{ quota_usage: before.posts, config: { quota_total: 250, quota_duration: 86400 }, reply_quota_usage: before.replies + 2, reply_config: { quota_total: 1000, quota_duration: 86400 } }] });
    expect(graphError(await api('/me/threads_publishing_limit', { token: noReplies, query: { fields: 'reply_quota_usage' } }))).toMatchObject({ code: 10 });
    expect(graphError(await api(`/${root.id}`, { method: 'DELETE', token: noReplies }))).toMatchObject({ code: 10 });
    expect((await api(`/${root.id}`, { method: 'DELETE', token })).json).toEqual({ success: true, deleted_id: root.id });
    expect(graphError(await api(`/${root.id}`, { token }))).toMatchObject({ code: 100, error_subcode: 33 });
    expect(graphError(await api(`/${theirs.id}`, { method: 'DELETE', token }))).toMatchObject({ error_subcode: 33 });
    // A reply to a post deleted since its container was made is refused at publishing.
    const orphan = (await createContainer(token, { media_type: 'TEXT', text: 'late reply', reply_to_id: reply.id })).json.id as string;
    await api(`/${reply.id}`, { method: 'DELETE', token });
    fake.finish(orphan);
    expect(graphError(await api('/me/threads_publish', { method: 'POST', token, query: { creation_id: orphan } }))).toMatchObject({ code: 100, message: expect.stringContaining('no longer exists') });
  });
});

describe('the publishing quota', () => {
  it('counts API posts (a carousel once) in a moving 24 hours; beyond it threads_publish is refused; the window moves on', async () => {
    const small = await startFakeThreads({ quotas: { posts: 3 }, processingMs: 0 });
    try {
      const token = small.issueToken('threads_ann');
      small.postAs('threads_ann', 'written in the app: not counted');
      await post(token, { media_type: 'TEXT', text: 'one' }, small);
      small.advance(HOUR);
      const items = [];
      for (let i = 0; i < 2; i++) items.push((await createContainer(token, { media_type: 'IMAGE', image_url: `${mediaUrl}/tiny.png`, is_carousel_item: 'true' }, small)).json.id);
      await small.settled();
      await post(token, { media_type: 'CAROUSEL', children: items.join(',') }, small);
      expect(small.quotaUsage('threads_ann').posts).toBe(2);
      await post(token, { media_type: 'TEXT', text: 'three' }, small);
      const fourth = (await createContainer(token, { media_type: 'TEXT', text: 'four' }, small)).json.id as string;
      const refused = await send(small, '/v1.0/me/threads_publish', { method: 'POST', token, query: { creation_id: fourth } });
      expect(graphError(refused)).toMatchObject({ status: 400, code: 9, error_subcode: 2207042, error_user_title: 'Publishing limit reached' });
      expect((await send(small, '/v1.0/me/threads_publishing_limit', { token, query: { fields: 'quota_usage,config' } })).json.data[0]).toEqual({ quota_usage: 3, config: { quota_total: 3, quota_duration: 86400 } });
      expect((await send(small, '/v1.0/me/threads_publishing_limit', { token })).json.data[0]).toEqual({ quota_usage: 3, config: { quota_total: 3, quota_duration: 86400 } });
      small.advance(23 * HOUR);
      expect(small.quotaUsage('threads_ann').posts).toBe(2);
      expect((await send(small, '/v1.0/me/threads_publish', { method: 'POST', token, query: { creation_id: fourth } })).status).toBe(200);
    } finally {
      await small.close();
    }
  });
});

describe('faults', () => {
  it('a dropped publish publishes and answers nothing; the container then says PUBLISHED', async () => {
    const token = fake.issueToken('threads_ann');
    const id = (await createContainer(token, { media_type: 'TEXT', text: 'lost answer' })).json.id as string;
    fake.finish(id);
    const before = fake.postsOf('threads_ann').length;
    fake.failNext('publish', 'drop');
    await expect(api('/me/threads_publish', { method: 'POST', token, query: { creation_id: id } })).rejects.toThrow();
    expect(fake.postsOf('threads_ann')).toHaveLength(before + 1);
    expect((await api(`/${id}`, { token, query: { fields: 'status' } })).json).toEqual({ status: 'PUBLISHED' });
    expect(fake.requests.filter((request) => request.path === '/v1.0/me/threads_publish' && request.query.creation_id === id).map((request) => request.status)).toEqual([undefined]);
  });

  it('Graph errors with their codes, let through with answer; token faults and dropped tokens', async () => {
    const token = fake.issueToken('threads_ann');
    fake.failNext('containers', 'answer');
    fake.failNext('containers', { status: 400, code: 4, isTransient: true });
    expect((await createContainer(token, { media_type: 'TEXT', text: 'through' })).status).toBe(200);
    expect(graphError(await createContainer(token, { media_type: 'TEXT', text: 'limited' }))).toEqual({ status: 400, message: '(#4) Application request limit reached', type: 'OAuthException', code: 4, is_transient: true });
    fake.failNext('status', { status: 500, code: 2, message: 'Service temporarily unavailable' });
    const id = (await createContainer(token, { media_type: 'TEXT', text: 'x' })).json.id as string;
    expect(graphError(await api(`/${id}`, { token, query: { fields: 'status' } }))).toMatchObject({ status: 500, code: 2, type: 'THApiException', message: 'Service temporarily unavailable' });
    fake.failNext('publish', { status: 400, code: 190, subcode: 463 });
    expect(graphError(await api('/me/threads_publish', { method: 'POST', token, query: { creation_id: id } }))).toMatchObject({ code: 190, error_subcode: 463, type: 'OAuthException' });
    fake.failNext('token', 'drop');
    const tokensBefore = fake.tokens.size;
    await expect(exchangeCode(await codeFor())).rejects.toThrow();
    expect(fake.tokens.size).toBe(tokensBefore + 1);
    fake.failNext('token', { status: 400, code: 613 });
    expect(graphError(await refresh(token))).toMatchObject({ code: 613 });
  });
});
