import { deadline } from '../process/deadline.js';
import * as oauth from 'oauth4webapi';
import type { LinkedInConfig } from '../process/config.js';
import { LINKEDIN_HASHTAG, LINKEDIN_IMAGE_TYPES, linkedinRules } from './rules.js';
import {
  noDetail,
  PlatformError,
  type AccountChoice,
  type ConnectionFailure,
  type FailureDetail,
  type ImageVersion,
  type OAuthConnect,
  type OutgoingImage,
  type PlatformRules,
  type PublishedPost,
  type Publisher,
  type PublishingAccount,
} from './publishing.js';

/**
 * LinkedIn: OAuth 2.0 (authorization code, client secret in the body) with oauth4webapi, the member from
 * `/v2/userinfo`, its pages from `/rest/organizationAcls`, and posts through the versioned REST API (`/rest/posts`,
 * `LinkedIn-Version`, `X-Restli-Protocol-Version: 2.0.0`). Text posts, images (`/rest/images?action=initializeUpload`,
 * the bytes PUT to the upload URL, then `content.media` or `content.multiImage` on the post) and first comments.
 */

/** Administrator roles asked for at a time, and the most organization pages a member's picker lists. */
const ACL_PAGE = 100;
const MAX_ORGANIZATIONS = 1000;
/** A token this close to its expiry is refreshed (or reported expired) before a call rather than sent. */
const EXPIRY_MARGIN_MS = 60_000;

/** What is stored, sealed, for a connected LinkedIn account. */
interface LinkedInCredentials {
  accessToken: string;
  /** ISO time, or null when LinkedIn gave no expires_in. */
  expiresAt: string | null;
  refreshToken?: string;
  /** The member who connected, `urn:li:person:{sub}`. */
  member: string;
  /** The author posts are made as: the member or one of its pages. Set once chosen. */
  account?: string;
  /** While the member has not chosen: what it may choose from. */
  choices?: AccountChoice[];
}

/** A hashtag (the composer's preview highlights the same ones: src/platforms/facets.ts), or a reserved character. */
const LITTLE_TEXT = new RegExp(`${LINKEDIN_HASHTAG}|([\\\\|{}@[\\]()<>#*_~])`, 'gu');

/**
 * `text` as LinkedIn's "little text": every reserved character escaped with a backslash (LinkedIn cuts a commentary short
 * at an unescaped one), except `#word`, kept a hashtag through the hashtag template.
 */
export function toLittleText(text: string): string {
  return text.replace(LITTLE_TEXT, (_match, tag: string | undefined, reserved: string | undefined) =>
    reserved ? `\\${reserved}` : `{hashtag|#|${tag}}`,
  );
}

export const releaseUrl = (urn: string) => `https://www.linkedin.com/feed/update/${urn}/`;


/** The authorization server as oauth4webapi takes it, from LINKEDIN_AUTH_URL (issuer as in LinkedIn's discovery document). */
function authorizationServer(config: LinkedInConfig): oauth.AuthorizationServer {
  return {
    issuer: `${new URL(config.authUrl).origin}/oauth`,
    authorization_endpoint: `${config.authUrl}/authorization`,
    token_endpoint: `${config.authUrl}/accessToken`,
    revocation_endpoint: `${config.authUrl}/revoke`,
  };
}

/** Options for oauth4webapi's requests: plain http only when the operator configured an http URL (a local fake). */
function requestOptions(config: LinkedInConfig, signal: AbortSignal, send: typeof fetch = fetch, timeoutMs: number) {
  return {
    signal: AbortSignal.any([signal, deadline(timeoutMs)]),
    [oauth.allowInsecureRequests]: config.authUrl.startsWith('http:'),
    [oauth.customFetch]: (url: string, init: RequestInit) => send(url, init),
  };
}

function clientOf(config: LinkedInConfig) {
  return { client: { client_id: config.clientId! }, auth: oauth.ClientSecretPost(config.clientSecret!) };
}

/** An OAuth failure of the token endpoint as the engine needs it: invalid_grant is a revoked or expired grant. */
function classifyOAuth(error: unknown, what: string): PlatformError {
  if (error instanceof PlatformError) return error;
  if (error instanceof oauth.ResponseBodyError) {
    const detail = { status: error.status, platformMessage: error.error_description ?? null, platformCode: error.error, traceId: null, raw: error.cause };
    if (error.error === 'invalid_grant') {
      return new PlatformError('credentials', 'LinkedIn no longer accepts this channel\'s refresh token (revoked or expired): reconnect the channel', detail, undefined, {
        tokenStatus: 'REVOKED',
        code: 'REFRESH_TOKEN_REVOKED',
      });
    }
    if (error.status >= 500) return new PlatformError('transient', `LinkedIn answered ${error.status} to ${what}`, detail);
    return new PlatformError('permanent', `LinkedIn refused ${what}: ${error.error_description ?? error.error}`, detail);
  }
  const message = error instanceof Error ? error.message : String(error);
  return new PlatformError('transient', `LinkedIn could not be reached for ${what}`, { ...noDetail, platformMessage: message, raw: { message } });
}

/** How a 401 leaves the channel, from LinkedIn's message or service error code. */
function tokenFailure(body: { message?: string; serviceErrorCode?: number }): ConnectionFailure {
  const message = body.message ?? '';
  if (/expired/i.test(message) || body.serviceErrorCode === 65602) return { tokenStatus: 'EXPIRED', code: 'ACCESS_TOKEN_EXPIRED' };
  if (/revoked/i.test(message) || body.serviceErrorCode === 65601) return { tokenStatus: 'REVOKED', code: 'ACCESS_TOKEN_REVOKED' };
  return { tokenStatus: 'REVOKED', code: 'ACCESS_TOKEN_INVALID' };
}

interface CallOptions {
  config: LinkedInConfig;
  token: string;
  signal: AbortSignal;
  /** How long a call may go unanswered (PLATFORM_TIMEOUT_MS). */
  timeoutMs: number;
  send?: typeof fetch;
  /** Whether the call may change something (then an unanswered call has an unknown outcome). */
  write: boolean;
  /** Read 422 "duplicate" as the retry of a post that may be live already (see OutgoingPost.mayExist). */
  mayExist?: boolean;
  body?: unknown;
  /** Raw bytes instead of a JSON body (an image PUT to its upload URL). */
  bytes?: Uint8Array<ArrayBuffer>;
}

/**
 * One call to LinkedIn's API, its failures classified (see FailureKind); answers the response when 2xx. `path` is under
 * LINKEDIN_API_URL, or a full URL LinkedIn gave (an image's upload URL, which takes the same bearer token).
 */
async function call(method: string, path: string, { config, token, signal, timeoutMs, send = fetch, write, mayExist, body, bytes }: CallOptions): Promise<Response> {
  let response: Response;
  try {
    response = await send(/^https?:\/\//.test(path) ? path : `${config.apiUrl}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${token}`,
        'linkedin-version': config.version,
        'x-restli-protocol-version': '2.0.0',
        // Rest.li names the method of a delete in a header too (the Posts API's "Delete Posts").
        ...(method === 'DELETE' ? { 'x-restli-method': 'DELETE' } : {}),
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        ...(bytes === undefined ? {} : { 'content-type': 'application/octet-stream' }),
      },
      body: bytes ?? (body === undefined ? undefined : JSON.stringify(body)),
      signal: AbortSignal.any([signal, deadline(timeoutMs)]),
    });
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    const detail = { ...noDetail, platformMessage: message, raw: { message } };
    return Promise.reject(new PlatformError(write ? 'unknown' : 'transient', write ? 'LinkedIn did not answer' : 'LinkedIn could not be reached', detail));
  }
  if (response.ok) return response;
  const text = await response.text().catch(() => '');
  let parsed: { message?: string; code?: string; serviceErrorCode?: number };
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = { message: text.slice(0, 500) };
  }
  const detail: FailureDetail = {
    status: response.status,
    platformMessage: parsed.message ?? null,
    platformCode: parsed.code ?? (parsed.serviceErrorCode === undefined ? null : String(parsed.serviceErrorCode)),
    traceId: response.headers.get('x-li-uuid') ?? response.headers.get('x-restli-id') ?? null,
    raw: parsed,
  };
  const status = response.status;
  if (status === 429) {
    const seconds = Number(response.headers.get('retry-after'));
    return Promise.reject(new PlatformError('transient', 'LinkedIn is rate limiting this application or member', detail, Number.isFinite(seconds) && seconds > 0 ? seconds * 1000 : undefined));
  }
  if (status >= 500) return Promise.reject(new PlatformError(write ? 'unknown' : 'transient', `LinkedIn answered ${status}`, detail));
  if (status === 401) {
    const failure = tokenFailure(parsed);
    const what = failure.tokenStatus === 'EXPIRED' ? 'has expired' : 'was revoked or is no longer valid';
    return Promise.reject(new PlatformError('credentials', `LinkedIn's access token for this channel ${what}: reconnect the channel`, detail, undefined, failure));
  }
  if (status === 426) {
    // LinkedIn serves each monthly version about a year: this server's LINKEDIN_VERSION is no longer (or not yet) served.
    const message = `LinkedIn does not serve API version ${config.version} (LINKEDIN_VERSION): the operator must set a recent one (YYYYMM); ${parsed.message ?? ''}`;
    return Promise.reject(new PlatformError('permanent', message.replace(/; $/, ''), detail));
  }
  if (status === 422 && (parsed.code === 'DUPLICATE_POST' || /duplicate/i.test(parsed.message ?? ''))) {
    const message = mayExist
      ? 'LinkedIn refused it as a duplicate of a post already there: the earlier attempt, whose answer was lost, probably published it; check the page before retrying'
      : 'LinkedIn refused it as a duplicate of a post already on this account: change the text to post it again';
    return Promise.reject(new PlatformError('permanent', message, detail));
  }
  return Promise.reject(new PlatformError('permanent', `LinkedIn refused it: ${parsed.message ?? `status ${status}`}`, detail));
}

const encodeUrn = (urn: string) => encodeURIComponent(urn);

/** An uploaded image as a post's content names it. */
interface PostImage {
  id: string;
  altText: string;
}

/**
 * The JSON of a post by `author`. `settings.visibility` CONNECTIONS keeps a member's post to its connections (a page's
 * posts are always PUBLIC). Images are `content.media` (one) or `content.multiImage` (2 to 20), each with its alt text.
 */
function postBody(author: string, text: string, settings: Record<string, unknown>, images: PostImage[] = []) {
  const connectionsOnly = settings.visibility === 'CONNECTIONS' && author.startsWith('urn:li:person:');
  const content = images.length === 0 ? undefined : images.length === 1 ? { media: images[0] } : { multiImage: { images } };
  return {
    author,
    commentary: toLittleText(text),
    visibility: connectionsOnly ? 'CONNECTIONS' : 'PUBLIC',
    distribution: { feedDistribution: 'MAIN_FEED', targetEntities: [], thirdPartyDistributionChannels: [] },
    lifecycleState: 'PUBLISHED',
    isReshareDisabledByAuthor: false,
    ...(content ? { content } : {}),
  };
}

/**
 * The version of an image LinkedIn takes: JPEG, PNG or GIF of fewer than MAX_PIXELS, the best first (the `source`
 * variant, then the upload itself: a variant made WebP for its transparency gives way to the PNG it came from). A GIF
 * upload is taken as it is, its animation kept, where LinkedIn takes it.
 */
function versionFor(image: OutgoingImage): ImageVersion | undefined {
  const fits = image.versions.filter((version) => IMAGE_TYPES.includes(version.mimeType) && version.width * version.height < MAX_PIXELS);
  return fits.find((version) => version.mimeType === 'image/gif') ?? fits[0];
}

const oauthConnect: OAuthConnect = {
  settings: ['LINKEDIN_CLIENT_ID', 'LINKEDIN_CLIENT_SECRET'],
  unavailable: ({ linkedin }) =>
    linkedin.clientId && linkedin.clientSecret
      ? null
      : 'LinkedIn is not configured on this server: set LINKEDIN_CLIENT_ID and LINKEDIN_CLIENT_SECRET (a LinkedIn app\'s client) to connect LinkedIn channels',

  authorizationUrl({ linkedin }, { redirectUri, state }) {
    const url = new URL(authorizationServer(linkedin).authorization_endpoint!);
    url.search = new URLSearchParams({ response_type: 'code', client_id: linkedin.clientId!, redirect_uri: redirectUri, state, scope: linkedin.scopes.join(' ') }).toString();
    return url.toString();
  },

  async complete({ linkedin, platformTimeoutMs: timeoutMs }, callback, { signal, fetch: send }) {
    const as = authorizationServer(linkedin);
    const { client, auth } = clientOf(linkedin);
    let tokens: oauth.TokenEndpointResponse;
    try {
      const params = oauth.validateAuthResponse(as, client, callback.url, callback.state);
      const response = await oauth.authorizationCodeGrantRequest(as, client, auth, params, callback.redirectUri, oauth.nopkce, requestOptions(linkedin, signal, send, timeoutMs));
      tokens = await oauth.processAuthorizationCodeResponse(as, client, response);
    } catch (error) {
      if (error instanceof oauth.AuthorizationResponseError) {
        const cancelled = /cancel|denied/i.test(error.error);
        const message = cancelled ? 'The LinkedIn consent was cancelled: nothing was connected' : `LinkedIn did not authorize the connection (${error.error_description ?? error.error})`;
        throw new PlatformError('permanent', message, { ...noDetail, platformCode: error.error, platformMessage: error.error_description ?? null });
      }
      throw classifyOAuth(error, 'the authorization code');
    }
    const options = { config: linkedin, token: tokens.access_token, signal, timeoutMs, send, write: false };
    const me = (await (await call('GET', '/v2/userinfo', options)).json()) as { sub: string; name?: string; picture?: string };
    const member = `urn:li:person:${me.sub}`;
    const choices: AccountChoice[] = [{ accountId: member, name: me.name ?? 'LinkedIn member', image: me.picture ?? null }];
    // The granted scopes come back comma-separated; pages are listed only where the member granted reading them.
    const granted = new Set((tokens.scope ?? linkedin.scopes.join(' ')).split(/[\s,]+/));
    if (granted.has('r_organization_admin') && granted.has('w_organization_social')) {
      // Paged as Rest.li pages (10 unless `count` says more): a page shorter than asked for is the last.
      const organizations: string[] = [];
      for (let start = 0; start < MAX_ORGANIZATIONS; start += ACL_PAGE) {
        const path = `/rest/organizationAcls?q=roleAssignee&role=ADMINISTRATOR&state=APPROVED&start=${start}&count=${ACL_PAGE}`;
        const { elements } = (await (await call('GET', path, options)).json()) as { elements: { organization: string }[] };
        organizations.push(...elements.map((acl) => acl.organization));
        if (elements.length < ACL_PAGE) break;
      }
      for (const organization of organizations) {
        const id = organization.split(':').at(-1)!;
        const page = (await (await call('GET', `/rest/organizations/${encodeURIComponent(id)}`, options)).json()) as { localizedName?: string };
        choices.push({ accountId: organization, name: page.localizedName ?? organization, image: null });
      }
    }
    const expiresAt = typeof tokens.expires_in === 'number' ? new Date(Date.now() + tokens.expires_in * 1000) : null;
    const credentials: LinkedInCredentials = {
      accessToken: tokens.access_token,
      expiresAt: expiresAt?.toISOString() ?? null,
      ...(tokens.refresh_token ? { refreshToken: tokens.refresh_token } : {}),
      member,
    };
    return { choices, credentials, expiresAt, refreshable: Boolean(tokens.refresh_token) };
  },
};

const publisher: Publisher = {
  oauth: oauthConnect,

  /**
   * `POST {LINKEDIN_AUTH_URL}/revoke`, form-encoded `client_id`, `client_secret` and `token`, once for the access token
   * and once for the refresh token where there is one, at the same time and under one deadline.
   */
  async revoke(stored, { signal, timeoutMs, config: { linkedin }, fetch: send }) {
    if (!linkedin.clientId || !linkedin.clientSecret) throw new PlatformError('permanent', 'LinkedIn is not configured on this server (LINKEDIN_CLIENT_ID)', noDetail);
    const { accessToken, refreshToken } = stored as LinkedInCredentials;
    const as = authorizationServer(linkedin);
    const { client, auth } = clientOf(linkedin);
    const options = requestOptions(linkedin, signal, send, timeoutMs);
    const outcomes = await Promise.allSettled(
      [accessToken, refreshToken]
        .filter((token): token is string => Boolean(token))
        .map(async (token) => oauth.processRevocationResponse(await oauth.revocationRequest(as, client, auth, token, options))),
    );
    const failed = outcomes.find((outcome) => outcome.status === 'rejected');
    if (failed) throw classifyOAuth(failed.reason, 'the token revocation');
  },

  open(stored, { signal, timeoutMs, saveCredentials, fetch: send, config }): PublishingAccount {
    if (!config) throw new Error('LinkedIn needs the configuration to act (its API URL and version)');
    let credentials = stored as LinkedInCredentials;
    const linkedin = config.linkedin;
    const author = credentials.account ?? credentials.member;

    const refresh = async () => {
      if (!linkedin.clientId || !linkedin.clientSecret) throw new PlatformError('transient', 'LinkedIn is not configured on this server (LINKEDIN_CLIENT_ID)', noDetail);
      const as = authorizationServer(linkedin);
      const { client, auth } = clientOf(linkedin);
      let tokens: oauth.TokenEndpointResponse;
      try {
        const response = await oauth.refreshTokenGrantRequest(as, client, auth, credentials.refreshToken!, requestOptions(linkedin, signal, send, timeoutMs));
        tokens = await oauth.processRefreshTokenResponse(as, client, response);
      } catch (error) {
        throw classifyOAuth(error, 'the refresh token');
      }
      const expiresAt = typeof tokens.expires_in === 'number' ? new Date(Date.now() + tokens.expires_in * 1000) : null;
      credentials = { ...credentials, accessToken: tokens.access_token, expiresAt: expiresAt?.toISOString() ?? null, refreshToken: tokens.refresh_token ?? credentials.refreshToken };
      await saveCredentials(credentials, expiresAt);
    };

    /** A token that works for the next call: refreshed first when about to expire; an expired one without a refresh token fails. */
    const token = async () => {
      const expiresAt = credentials.expiresAt ? Date.parse(credentials.expiresAt) : Infinity;
      if (expiresAt - EXPIRY_MARGIN_MS > Date.now()) return credentials.accessToken;
      if (credentials.refreshToken) {
        await refresh();
        return credentials.accessToken;
      }
      throw new PlatformError('credentials', 'LinkedIn\'s access token for this channel has expired and LinkedIn gave no refresh token: reconnect the channel', noDetail, undefined, {
        tokenStatus: 'EXPIRED',
        code: 'ACCESS_TOKEN_EXPIRED',
      });
    };

    /**
     * One call with a working token. A token LinkedIn says has expired before its time is refreshed and the call sent
     * once more, where a refresh token exists: a 401 means LinkedIn did nothing, so even a write is safe to repeat.
     */
    const request = async (method: string, path: string, write: boolean, extra: Partial<CallOptions> = {}): Promise<Response> => {
      const attempt = async () => call(method, path, { config: linkedin, token: await token(), signal, timeoutMs, send, write, ...extra });
      try {
        return await attempt();
      } catch (error) {
        if (!(error instanceof PlatformError && error.connection?.tokenStatus === 'EXPIRED' && credentials.refreshToken)) throw error;
        await refresh();
        return attempt();
      }
    };

    /**
     * Uploads each image through the Images API, owned by the author (LinkedIn refuses images of another owner in a
     * post). An image left unused by a failed post is LinkedIn's to expire: nothing is posted until all are uploaded.
     */
    const uploadImages = async (images: OutgoingImage[]): Promise<PostImage[]> => {
      const uploaded: PostImage[] = [];
      for (const [index, image] of images.entries()) {
        const version = versionFor(image);
        if (!version) throw new PlatformError('permanent', `Image ${index + 1} has no JPEG, PNG or GIF version of fewer than ${MAX_PIXELS} pixels for LinkedIn`, noDetail);
        // Nothing is published by these calls: an unanswered one is safe to repeat, so it is transient, not unknown.
        const initialized = await request('POST', '/rest/images?action=initializeUpload', false, { body: { initializeUploadRequest: { owner: author } } });
        const { value } = (await initialized.json()) as { value: { uploadUrl: string; image: string } };
        await request('PUT', value.uploadUrl, false, { bytes: new Uint8Array(await version.read()) });
        uploaded.push({ id: value.image, altText: image.altText });
      }
      return uploaded;
    };

    return {
      async publish(post): Promise<PublishedPost> {
        if (post.key.kind === 'firstComment') {
          const target = post.replyTo!.parent.id;
          const response = await request('POST', `/rest/socialActions/${encodeUrn(target)}/comments`, true, {
            body: { actor: author, object: target, message: { text: post.text } },
          });
          const id = response.headers.get('x-restli-id') ?? target;
          return { id, url: releaseUrl(target), ref: id };
        }
        if (post.replyTo) throw new PlatformError('permanent', 'LinkedIn posts cannot be threaded: publish this part as a post of its own', noDetail);
        const images = post.images?.length ? await uploadImages(post.images) : [];
        const response = await request('POST', '/rest/posts', true, { body: postBody(author, post.text, post.settings, images), mayExist: post.mayExist });
        const urn = response.headers.get('x-restli-id');
        if (!urn) throw new PlatformError('unknown', 'LinkedIn accepted the post without saying its id (x-restli-id)', { ...noDetail, status: response.status });
        return { id: urn, url: releaseUrl(urn), ref: urn };
      },
      async delete(postId) {
        try {
          await request('DELETE', `/rest/posts/${encodeUrn(postId)}`, true);
        } catch (error) {
          // Already gone (deleted on LinkedIn by the member): what was asked is done.
          if (error instanceof PlatformError && error.detail.status === 404) return;
          throw error;
        }
      },
      async refreshCredentials() {
        if (credentials.refreshToken) return refresh();
        await request('GET', '/v2/userinfo', false);
      },
    };
  },
};
// The Images API takes JPEG, PNG and GIF (the rules, shared with the composer, are in ./rules.ts).
const IMAGE_TYPES = LINKEDIN_IMAGE_TYPES;
/** The Images API refuses an image of this many pixels or more. */
const MAX_PIXELS = 36_152_320;

export const linkedin: PlatformRules = { ...linkedinRules, publisher };
