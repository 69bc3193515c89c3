import { fetchRemoteFile } from '../media/remote.js';

/** The most a client metadata document may weigh (the library's own bound). */
const DOCUMENT_BYTES = 5120;

/**
 * oidc-provider's outgoing requests (Client ID Metadata Documents: a client named by an https URL) through the guard
 * import from URL uses (src/media/remote.ts): public addresses only unless MEDIA_FETCH_ALLOW_HOSTS names the host, no
 * redirect followed, the body capped, the library's deadline. A refusal rejects, and the library then refuses the client.
 */
export function guardedClientFetch(allowHosts: readonly string[]) {
  return async (input: URL | string | Request, init: RequestInit = {}): Promise<Response> => {
    const file = await fetchRemoteFile(input instanceof Request ? input.url : String(input), {
      maxBytes: DOCUMENT_BYTES,
      maxRedirects: 0,
      timeoutMs: 5000,
      ...(init.signal ? { signal: init.signal } : {}),
      allowHosts,
      accept: 'application/json',
    });
    const headers = new Headers();
    for (const [name, value] of Object.entries(file.headers)) {
      if (typeof value === 'string') headers.set(name, value);
    }
    return new Response(new Uint8Array(file.bytes), { status: 200, headers });
  };
}
