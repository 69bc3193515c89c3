/**
 * The minimal platform the publishing benchmark measures the engine against: an HTTP server on loopback that
 * answers the few XRPC methods the Bluesky adapter calls, in their shapes, at once, and keeps nothing but the
 * time each record says it was sent. The service connects to it as to a self-hosted PDS (`connect-bluesky
 * --service-url`), so the engine runs unchanged, with the real client; only the platform's own work is left out.
 */
import events from 'node:events';
import http from 'node:http';

const DID = 'did:plc:ewvi7nxzyoun6zhxrhs64oiz';
const HANDLE = 'bench.test';
/** Any valid CID will do: nothing reads the record back by it. */
const CID = 'bafyreidfayvfuwqa7qlnopdjiqrxzs6blmoeu4rujcjtnci5beludirz2a';

export interface LoopbackPlatform {
  url: string;
  handle: string;
  appPassword: string;
  /** For each record key created: the record's `createdAt`, set by the adapter right before it sends the record. */
  sentAt: Map<string, number>;
  stop(): Promise<void>;
}

/**
 * `latencyMs`: how long each record takes to be answered, as a real platform takes 100–500 ms (0: at once). The
 * record's `createdAt` is still when the engine sent it.
 */
export async function startLoopbackPlatform({ latencyMs = 0 }: { latencyMs?: number } = {}): Promise<LoopbackPlatform> {
  const sentAt = new Map<string, number>();
  let url = '';
  let sessions = 0;
  const session = () => {
    sessions++;
    return {
      did: DID,
      handle: HANDLE,
      accessJwt: `access-${sessions}`,
      refreshJwt: `refresh-${sessions}`,
      active: true,
      emailConfirmed: true,
      // The client sends its later calls where the DID document says the account lives: here.
      didDoc: {
        '@context': ['https://www.w3.org/ns/did/v1'],
        id: DID,
        alsoKnownAs: [`at://${HANDLE}`],
        service: [{ id: '#atproto_pds', type: 'AtprotoPersonalDataServer', serviceEndpoint: url }],
      },
    };
  };
  const server = http.createServer(async (request, response) => {
    let body = '';
    for await (const chunk of request) body += chunk;
    const send = (status: number, value: unknown) => {
      response.writeHead(status, { 'content-type': 'application/json' });
      response.end(JSON.stringify(value));
    };
    const method = new URL(request.url ?? '/', 'http://localhost').pathname.replace('/xrpc/', '');
    switch (method) {
      case 'com.atproto.server.createSession':
      case 'com.atproto.server.refreshSession':
      case 'com.atproto.server.getSession':
        return send(200, session());
      case 'com.atproto.repo.createRecord': {
        const { collection, rkey, record } = JSON.parse(body) as { collection: string; rkey: string; record: { createdAt: string } };
        sentAt.set(rkey, Date.parse(record.createdAt));
        if (latencyMs) await new Promise((resolve) => setTimeout(resolve, latencyMs));
        return send(200, { uri: `at://${DID}/${collection}/${rkey}`, cid: CID });
      }
      case 'com.atproto.repo.getRecord':
        return send(400, { error: 'RecordNotFound', message: 'Could not locate record' });
      default:
        return send(501, { error: 'MethodNotImplemented', message: `${method} is not served here` });
    }
  });
  server.keepAliveTimeout = 60_000;
  server.listen(0, '127.0.0.1');
  await events.once(server, 'listening');
  url = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  return {
    url,
    handle: HANDLE,
    appPassword: 'bench-app-password',
    sentAt,
    stop: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
