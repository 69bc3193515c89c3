import { resolve } from 'node:path';
import { parseAllowHost } from '../media/remote.js';
import { StartupError } from './startup.js';

/** Everything the service reads from its environment, read once at start. */
export interface Config {
  host: string;
  port: number;
  /** Where the embedded Postgres keeps its cluster when DATABASE_URL is not set. */
  dataDir: string;
  /** An external Postgres; when set, no embedded one is started. */
  databaseUrl: string | undefined;
  databasePoolSize: number;
  /** How often buffered usage events are written to the database. */
  usageFlushMs: number;
  workerConcurrency: number;
  /** How often an idle worker looks for due jobs: the most a schedule waits past its time when the worker is idle. */
  workerPollIntervalMs: number;
  logLevel: LogLevel;
  /** 32 bytes (base64 or hex) sealing credentials at rest; without it, one is generated into DATA_DIR (src/auth/secrets.ts). */
  encryptionKey: string | undefined;
  /** The externally reachable base URL, for the links this service hands out (the connect pages); without it, http://HOST:PORT as bound. */
  publicUrl: string | undefined;
  /** Origins besides PUBLIC_URL's whose browser pages may call POST /mcp (src/mcp/http.ts); none by default. */
  allowedOrigins: string[];
  /**
   * TRUST_PROXY, Express's `trust proxy`: which proxies' X-Forwarded-* headers to believe, so that a request that reached a
   * TLS-terminating proxy over HTTPS gets a `Secure` session cookie and sign-in limits count the client's address. Off by default.
   */
  trustProxy: boolean | number | string;
  /** How long an OAuth access token of a connected app lasts (src/oauth/provider.ts); its refresh token renews it. */
  oauthAccessTokenSeconds: number;
  /** The PDS a Bluesky account is on when the connect form names none. */
  blueskyServiceUrl: string;
  /** LinkedIn's OAuth client and API (src/platforms/linkedin.ts); LinkedIn cannot be connected while clientId is unset. */
  linkedin: LinkedInConfig;
  /** The operator's Meta app for Threads and Threads' API (src/platforms/threads.ts); Threads cannot be connected while appId is unset. */
  threads: ThreadsConfig;
  /** The GIF provider searchMedia asks (src/media/providers.ts); GIF search is off while apiKey is unset. */
  giphy: { apiKey: string | undefined; apiUrl: string };
  /** A schedule still PUBLISHING this long after its attempt began is taken to be abandoned by a crashed worker. */
  publishStaleMs: number;
  /** How often a worker looks for such schedules. */
  publishRecoveryIntervalMs: number;
  /** Hosts `POST /uploads/from-url` may fetch from although their address is not public (tests, self-hosting); none by default. */
  mediaFetchAllowHosts: string[];
  /** A platform request without an answer by then is abandoned (for a write, its outcome is looked up before a retry). */
  platformTimeoutMs: number;
  /** An S3-compatible store (AWS S3, MinIO); undefined: the embedded one under DATA_DIR (src/storage/embedded.ts). */
  s3: S3Config | undefined;
  /** How long a signed upload URL (and the storage it reserves) lasts. */
  uploadUrlTtlSeconds: number;
  /** A webhook delivery without a 2xx answer by then has failed (docs/events.md#webhooks). */
  webhookTimeoutMs: number;
  /** The waits before each retry of a failed webhook delivery (each ±20%); a delivery fails for good after the last. */
  webhookRetryDelaysMs: number[];
  /** An endpoint whose every delivery has failed for this long is disabled. */
  webhookDisableAfterMs: number;
}

/** Standard Webhooks' schedule: 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h (about 27 hours in all). */
export const WEBHOOK_RETRY_DELAYS_MS = [5_000, 300_000, 1_800_000, 7_200_000, 18_000_000, 36_000_000, 36_000_000];

export interface S3Config {
  /** Unset for AWS itself; MinIO and other stores are addressed by path (http://host:port/bucket/key). */
  endpoint: string | undefined;
  bucket: string;
  region: string;
  /** Unset: the AWS SDK's default credential chain (an instance role, AWS_* variables). */
  credentials: { accessKeyId: string; secretAccessKey: string } | undefined;
  /** Where objects are read publicly (a CDN or the bucket's public URL); default endpoint/bucket. */
  publicUrl: string;
}

export interface ThreadsConfig {
  /** THREADS_APP_ID and THREADS_APP_SECRET: the Threads app ID and secret of the operator's Meta app. */
  appId: string | undefined;
  appSecret: string | undefined;
  /** THREADS_AUTH_URL: where a member consents (`/oauth/authorize` below it); https://threads.net. */
  authUrl: string;
  /** THREADS_API_URL: the Graph API (tokens at `/oauth/access_token`, `/access_token`, `/refresh_access_token`); https://graph.threads.net. */
  apiUrl: string;
  /** THREADS_API_VERSION: the Graph API version in each path; v1.0. */
  version: string;
  /** THREADS_SCOPES: what the member is asked for. */
  scopes: string[];
}

export interface LinkedInConfig {
  clientId: string | undefined;
  clientSecret: string | undefined;
  /** LINKEDIN_AUTH_URL: the authorization, token and revocation endpoints are `/authorization`, `/accessToken` and `/revoke` below it. */
  authUrl: string;
  /** LINKEDIN_API_URL: `/v2/userinfo` and `/rest/...` below it. */
  apiUrl: string;
  /** LINKEDIN_VERSION: the `LinkedIn-Version` header, YYYYMM. */
  version: string;
  scopes: string[];
}

/** A recent LinkedIn API version; LinkedIn serves each monthly version for about a year. */
export const DEFAULT_LINKEDIN_VERSION = '202610';

export type LogLevel = 'debug' | 'info' | 'warn' | 'error' | 'silent';

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  return {
    host: env.HOST ?? '127.0.0.1',
    port: integer(env, 'PORT', 3000),
    dataDir: resolve(env.DATA_DIR ?? '.data'),
    databaseUrl: env.DATABASE_URL || undefined,
    databasePoolSize: integer(env, 'DATABASE_POOL_SIZE', 10),
    usageFlushMs: integer(env, 'USAGE_FLUSH_MS', 1000),
    workerConcurrency: integer(env, 'WORKER_CONCURRENCY', 200),
    workerPollIntervalMs: integer(env, 'WORKER_POLL_INTERVAL_MS', 250),
    logLevel: logLevel(env.LOG_LEVEL ?? 'info'),
    encryptionKey: env.ENCRYPTION_KEY || undefined,
    publicUrl: env.PUBLIC_URL ? baseUrl(env, 'PUBLIC_URL', '') : undefined,
    allowedOrigins: originList(env, 'ALLOWED_ORIGINS'),
    trustProxy: trustProxy(env.TRUST_PROXY),
    oauthAccessTokenSeconds: integer(env, 'OAUTH_ACCESS_TOKEN_SECONDS', 3600),
    blueskyServiceUrl: baseUrl(env, 'BLUESKY_SERVICE_URL', 'https://bsky.social'),
    linkedin: {
      clientId: env.LINKEDIN_CLIENT_ID || undefined,
      clientSecret: env.LINKEDIN_CLIENT_SECRET || undefined,
      authUrl: baseUrl(env, 'LINKEDIN_AUTH_URL', 'https://www.linkedin.com/oauth/v2'),
      apiUrl: baseUrl(env, 'LINKEDIN_API_URL', 'https://api.linkedin.com'),
      version: linkedinVersion(env.LINKEDIN_VERSION || DEFAULT_LINKEDIN_VERSION),
      scopes: (env.LINKEDIN_SCOPES || 'openid profile w_member_social r_organization_admin w_organization_social').split(/[\s,]+/).filter(Boolean),
    },
    threads: {
      appId: env.THREADS_APP_ID || undefined,
      appSecret: env.THREADS_APP_SECRET || undefined,
      authUrl: baseUrl(env, 'THREADS_AUTH_URL', 'https://threads.net'),
      apiUrl: baseUrl(env, 'THREADS_API_URL', 'https://graph.threads.net'),
      version: env.THREADS_API_VERSION || 'v1.0',
      scopes: (env.THREADS_SCOPES || 'threads_basic threads_content_publish threads_manage_replies threads_read_replies threads_delete').split(/[\s,]+/).filter(Boolean),
    },
    giphy: { apiKey: env.GIPHY_API_KEY || undefined, apiUrl: baseUrl(env, 'GIPHY_API_URL', 'https://api.giphy.com') },
    publishStaleMs: integer(env, 'PUBLISH_STALE_MS', 5 * 60_000),
    publishRecoveryIntervalMs: integer(env, 'PUBLISH_RECOVERY_INTERVAL_MS', 60_000),
    mediaFetchAllowHosts: hostList(env, 'MEDIA_FETCH_ALLOW_HOSTS'),
    platformTimeoutMs: integer(env, 'PLATFORM_TIMEOUT_MS', 30_000),
    s3: s3Config(env),
    uploadUrlTtlSeconds: integer(env, 'UPLOAD_URL_TTL_SECONDS', 900),
    webhookTimeoutMs: integer(env, 'WEBHOOK_TIMEOUT_MS', 10_000),
    webhookRetryDelaysMs: WEBHOOK_RETRY_DELAYS_MS,
    webhookDisableAfterMs: integer(env, 'WEBHOOK_DISABLE_AFTER_MS', 3 * 86_400_000),
  };
}

const S3_VARIABLES = ['S3_ENDPOINT', 'S3_BUCKET', 'S3_REGION', 'S3_ACCESS_KEY_ID', 'S3_SECRET_ACCESS_KEY', 'S3_PUBLIC_URL'] as const;

/** None of the S3_* variables set: undefined (the embedded store). Any set: S3_BUCKET is required, the rest as documented. */
function s3Config(env: NodeJS.ProcessEnv): S3Config | undefined {
  if (!S3_VARIABLES.some((name) => env[name])) return undefined;
  const bucket = env.S3_BUCKET;
  if (!bucket) throw new StartupError('S3_BUCKET is required when any S3_* variable is set (leave them all unset for the embedded store)');
  if (Boolean(env.S3_ACCESS_KEY_ID) !== Boolean(env.S3_SECRET_ACCESS_KEY)) {
    throw new StartupError('S3_ACCESS_KEY_ID and S3_SECRET_ACCESS_KEY go together: set both, or neither for the AWS default credentials');
  }
  const endpoint = env.S3_ENDPOINT ? baseUrl(env, 'S3_ENDPOINT', '') : undefined;
  const region = env.S3_REGION || 'us-east-1';
  return {
    endpoint,
    bucket,
    region,
    credentials: env.S3_ACCESS_KEY_ID ? { accessKeyId: env.S3_ACCESS_KEY_ID, secretAccessKey: env.S3_SECRET_ACCESS_KEY! } : undefined,
    publicUrl: env.S3_PUBLIC_URL
      ? baseUrl(env, 'S3_PUBLIC_URL', '')
      : endpoint
        ? `${endpoint}/${bucket}`
        : `https://${bucket}.s3.${region}.amazonaws.com`,
  };
}

function integer(env: NodeJS.ProcessEnv, name: string, fallback: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 0) throw new StartupError(`${name} must be a non-negative integer, got "${raw}"`);
  return value;
}

/** An http(s) URL without its trailing slash. */
function baseUrl(env: NodeJS.ProcessEnv, name: string, fallback: string): string {
  const raw = env[name] || fallback;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new StartupError(`${name} must be an http(s) URL, got "${raw}"`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new StartupError(`${name} must be an http(s) URL, got "${raw}"`);
  return raw.replace(/\/+$/, '');
}

/** Comma-separated `host` or `host:port` entries (src/media/remote.ts). */
function hostList(env: NodeJS.ProcessEnv, name: string): string[] {
  const entries = (env[name] ?? '').split(',').map((entry) => entry.trim()).filter(Boolean);
  for (const entry of entries) {
    try {
      parseAllowHost(entry);
    } catch {
      throw new StartupError(`${name} must list hosts as host or host:port, separated by commas; got "${entry}"`);
    }
  }
  return entries;
}

/** Comma-separated origins (`https://app.example.com`, `http://localhost:5173`): a scheme, a host and an optional port. */
function originList(env: NodeJS.ProcessEnv, name: string): string[] {
  const entries = (env[name] ?? '').split(',').map((entry) => entry.trim()).filter(Boolean);
  return entries.map((entry) => {
    let url: URL | undefined;
    try {
      url = new URL(entry);
    } catch {
      // refused below
    }
    if (!url || !/^https?:$/.test(url.protocol) || url.pathname !== '/' || url.search || url.hash || url.username) {
      throw new StartupError(`${name} must list origins such as https://app.example.com (scheme, host, optional port; no path), separated by commas; got "${entry}"`);
    }
    return url.origin;
  });
}

function linkedinVersion(raw: string): string {
  if (/^\d{6}(\.\d{2})?$/.test(raw)) return raw;
  throw new StartupError(`LINKEDIN_VERSION must be a LinkedIn API version such as 202610 (YYYYMM), got "${raw}"`);
}

function logLevel(raw: string): LogLevel {
  if (['debug', 'info', 'warn', 'error', 'silent'].includes(raw)) return raw as LogLevel;
  throw new StartupError(`LOG_LEVEL must be one of debug, info, warn, error, silent; got "${raw}"`);
}

/** `true`/`false`, a number of hops, or addresses and subnets (`loopback`, `10.0.0.0/8`, …), as Express takes them. */
function trustProxy(value: string | undefined): boolean | number | string {
  const text = (value ?? '').trim();
  if (text === '' || text === 'false') return false;
  if (text === 'true') return true;
  return /^\d+$/.test(text) ? Number(text) : text;
}
