/** The little of @20minutes/s3rver (an untyped CommonJS package) that src/storage/embedded.ts uses. */
declare module '@20minutes/s3rver' {
  import type { IncomingMessage, ServerResponse } from 'node:http';

  interface S3rverOptions {
    directory: string;
    silent?: boolean;
    /** Each bucket's configuration documents (a CORSConfiguration's XML, for one). */
    configureBuckets?: { name: string; configs?: string[] }[];
    /** Bucket names in the Host header (bucket.localhost); off, buckets are the first path segment only. */
    vhostBuckets?: boolean;
  }

  export default class S3rver {
    constructor(options: S3rverOptions);
    configureBuckets(): Promise<void>;
    callback(): (req: IncomingMessage, res: ServerResponse) => void;
    logger: { close(): void };
  }
}

declare module '@20minutes/s3rver/lib/models/account.js' {
  interface Account {
    createKeyPair(accessKeyId: string, secretAccessKey: string): void;
    revokeAccessKey(accessKeyId: string): void;
  }
  const AWSAccount: { DUMMY_ACCOUNT: Account };
  export default AWSAccount;
}

/** The Koa context s3rver's middleware sees (what src/storage/embedded-multipart.ts reads of it). */
declare module '@20minutes/s3rver' {
  import type { IncomingMessage } from 'node:http';

  interface S3rverContext {
    path: string;
    method: string;
    href: string;
    query: Record<string, string | string[] | undefined>;
    headers: Record<string, string | string[] | undefined>;
    params: Record<string, string>;
    state: { account?: unknown };
    req: IncomingMessage;
    request: { body?: unknown };
    status: number;
    body: unknown;
    get(header: string): string;
    set(header: string, value: string): void;
    store: {
      getResourcePath(bucket: string, key: string | undefined, resource: string): string;
      putObject(object: unknown): Promise<{ size: number; md5: string }>;
    };
  }

  export default interface S3rver {
    /** Koa's middleware stack: the router last. */
    middleware: ((ctx: S3rverContext, next: () => Promise<void>) => Promise<void>)[];
  }
}

declare module '@20minutes/s3rver/lib/middleware/authentication.js' {
  import type { S3rverContext } from '@20minutes/s3rver';
  export default function authentication(): (ctx: S3rverContext, next: () => Promise<void>) => Promise<void>;
}

declare module '@20minutes/s3rver/lib/models/error.js' {
  export default class S3Error extends Error {
    constructor(code: string, message: string, detail?: Record<string, string>);
  }
}

declare module '@20minutes/s3rver/lib/models/object.js' {
  import type { Readable } from 'node:stream';
  export default class S3Object {
    constructor(bucket: string, key: string, content: Readable, metadata: Record<string, string>);
  }
}

declare module '@20minutes/s3rver/lib/signature/v4.js' {
  import type { S3rverContext } from '@20minutes/s3rver';
  export function aws4SignatureBodyParser(ctx: S3rverContext): void;
}

declare module '@20minutes/s3rver/lib/utils.js' {
  import type { S3rverContext } from '@20minutes/s3rver';
  export function xmlBodyParser(ctx: S3rverContext): Promise<void>;
}
