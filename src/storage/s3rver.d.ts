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
