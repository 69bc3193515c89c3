/**
 * TODO(issue 15, lead): a placeholder for the guarded URL fetcher written in another branch (SSRF guard checked at
 * connect time, a few re-checked redirects, the size cap while streaming). It refuses every URL, so nothing is
 * fetched until the real module replaces this file with the same exports.
 */

/** A URL the fetcher will not fetch, or whose answer it refuses; the message says why (answered as 400). */
export class RemoteFileRefused extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'RemoteFileRefused';
  }
}

export interface RemoteFile {
  bytes: Buffer;
  /** The Content-Type the server answered, if any (the bytes decide the real type). */
  contentType: string | null;
}

/** Fetches `url` (http/https to public addresses only), at most `maxBytes`, ended by `signal`; throws RemoteFileRefused. */
export async function fetchRemoteFile(url: string, options: { maxBytes: number; signal: AbortSignal }): Promise<RemoteFile> {
  void url;
  void options;
  throw new RemoteFileRefused('Importing from a URL is not enabled on this server yet');
}
