import dc from 'node:diagnostics_channel';
import { once } from 'node:events';
import { createServer as createHttpServer, type Server as HttpServer } from 'node:http';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../src/process/config.js';
import {
  detectImageType,
  fetchRemoteFile,
  fetchRemoteImage,
  isPublicAddress,
  parseAllowHost,
  RemoteFetchError,
  type RemoteFetchOptions,
  type RemoteFetchReason,
} from '../src/media/remote.js';
import { freePort } from '../src/process/free-port.js';
import { StartupError } from '../src/process/startup.js';

// A real 1×1 PNG and GIF; a JPEG and a WebP are recognized by their first bytes.
const PNG = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==', 'base64');
const GIF = Buffer.from('R0lGODlhAQABAIAAAAAAAP///yH5BAEAAAAALAAAAAABAAEAAAIBRAA7', 'base64');
const JPEG = Buffer.concat([Buffer.from([0xff, 0xd8, 0xff, 0xe0, 0x00, 0x10]), Buffer.from('JFIF\0'), Buffer.alloc(32)]);
const WEBP = Buffer.concat([Buffer.from('RIFF'), Buffer.from([0x24, 0, 0, 0]), Buffer.from('WEBPVP8 '), Buffer.alloc(32)]);
const HTML = Buffer.from('<!doctype html><title>not an image</title>');
const MAX_BYTES = 1000;

/**
 * The trap: listeners on 127.0.0.1 and [::1] at one port, counting every connection they accept. The refused
 * URLs below aim at it; a guard that let one through would show up here.
 */
let trap: { port: number; servers: Server[]; connections: number };
/** The allowed server: a loopback HTTP server the tests reach through the allow-list. */
let origin: { port: number; server: HttpServer; sockets: Set<Socket>; requests: string[] };

beforeAll(async () => {
  trap = await listenTrap();
  origin = await listenOrigin();
});

afterAll(async () => {
  for (const server of trap.servers) server.close();
  origin.server.closeAllConnections();
  origin.server.close();
});

beforeEach(() => {
  trap.connections = 0;
  origin.requests = [];
});

const originUrl = (path: string) => `http://127.0.0.1:${origin.port}${path}`;
const trapUrl = (host: string) => `http://${host}:${trap.port}/image.png`;
const allowed = (more: Partial<RemoteFetchOptions> = {}): RemoteFetchOptions => ({
  maxBytes: MAX_BYTES,
  timeoutMs: 5000,
  allowHosts: [`127.0.0.1:${origin.port}`],
  ...more,
});

async function refusal(promise: Promise<unknown>): Promise<RemoteFetchError> {
  const error = await promise.then(
    () => undefined,
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(RemoteFetchError);
  return error as RemoteFetchError;
}

async function expectRefused(promise: Promise<unknown>, reason: RemoteFetchReason): Promise<RemoteFetchError> {
  const error = await refusal(promise);
  expect(error.reason, error.message).toBe(reason);
  return error;
}

/**
 * Runs `act` while watching every client socket this process creates (node publishes each on the
 * `net.client.socket` diagnostics channel before connecting it). With `disarm`, such a socket is also destroyed
 * before it can connect: the refusals of non-loopback addresses must open none, and even a broken guard must
 * not send a packet off this machine.
 */
async function clientSocketsDuring(act: () => Promise<unknown>, { disarm }: { disarm: boolean }): Promise<number> {
  let opened = 0;
  const watch = (message: unknown) => {
    opened++;
    if (!disarm) return;
    const { socket } = message as { socket: Socket };
    socket.connect = (() => {
      setImmediate(() => socket.destroy());
      return socket;
    }) as Socket['connect'];
  };
  dc.subscribe('net.client.socket', watch);
  try {
    await act();
  } finally {
    dc.unsubscribe('net.client.socket', watch);
  }
  return opened;
}

describe('fetchRemoteFile', () => {
  it('fetches a file from an allow-listed loopback server, and the trap counts connections on 127.0.0.1 and [::1]', async () => {
    const file = await fetchRemoteFile(originUrl('/image.png'), allowed());
    expect(file.bytes.equals(PNG)).toBe(true);
    expect(file.contentType).toBe('image/png');
    expect(file.finalUrl).toBe(originUrl('/image.png'));

    // The zero counts below mean something only if the trap sees what reaches it.
    for (const host of ['127.0.0.1', '::1']) {
      const socket = connect(trap.port, host);
      await once(socket, 'connect');
      socket.destroy();
    }
    await expect.poll(() => trap.connections).toBe(2);
  });

  it.each([
    ['127.0.0.1', '127.0.0.1'],
    ['127.1', '127.0.0.1'],
    ['0x7f000001', '127.0.0.1'],
    ['2130706433', '127.0.0.1'],
    ['0177.0.0.1', '127.0.0.1'],
    ['0.0.0.0', '0.0.0.0'],
    ['[::1]', '[::1]'],
    ['[::ffff:127.0.0.1]', '[::ffff:7f00:1]'],
    ['[::]', '[::]'],
  ])('refuses %s before opening a socket; the loopback trap gets no connection', async (host, shown) => {
    let error: RemoteFetchError | undefined;
    const sockets = await clientSocketsDuring(async () => {
      error = await expectRefused(fetchRemoteFile(trapUrl(host), { maxBytes: MAX_BYTES }), 'ADDRESS_NOT_PUBLIC');
    }, { disarm: false });
    expect(error!.message).toContain(shown);
    expect(sockets).toBe(0);
    expect(trap.connections).toBe(0);
  });

  it.each([
    '169.254.169.254',
    '10.0.0.1',
    '172.16.0.1',
    '192.168.1.1',
    '100.64.0.1',
    '224.0.0.1',
    '255.255.255.255',
    '[fe80::1]',
    '[fc00::1]',
    '[::ffff:10.0.0.1]',
    '[64:ff9b::a00:1]',
    '[::127.0.0.1]', // IPv4-compatible: not loopback on Linux, and not public either
  ])(
    'refuses %s before any connection is attempted',
    async (host) => {
      const sockets = await clientSocketsDuring(
        () => expectRefused(fetchRemoteFile(`http://${host}/latest/meta-data/`, { maxBytes: MAX_BYTES }), 'ADDRESS_NOT_PUBLIC'),
        { disarm: true },
      );
      expect(sockets).toBe(0);
    },
  );

  it('refuses a host name that resolves to loopback, over http and https, inside the socket\'s own lookup: the trap gets no connection', async () => {
    const error = await expectRefused(fetchRemoteFile(trapUrl('localhost'), { maxBytes: MAX_BYTES }), 'ADDRESS_NOT_PUBLIC');
    expect(error.message).toMatch(/^localhost \((127\.0\.0\.1|::1)\) is not a public internet address/);
    await expectRefused(fetchRemoteFile(`https://localhost:${trap.port}/image.png`, { maxBytes: MAX_BYTES }), 'ADDRESS_NOT_PUBLIC');
    expect(trap.connections).toBe(0);
  });

  it('allows exactly the allow-listed host and port: the same address on another port is refused', async () => {
    await expectRefused(fetchRemoteFile(trapUrl('127.0.0.1'), allowed()), 'ADDRESS_NOT_PUBLIC');
    expect(trap.connections).toBe(0);
    // A name on the list is trusted whatever it resolves to.
    const file = await fetchRemoteFile(`http://localhost:${origin.port}/image.png`, allowed({ allowHosts: [`localhost:${origin.port}`] }));
    expect(file.bytes.equals(PNG)).toBe(true);
  });

  it.each(['file:///etc/passwd', 'data:image/png;base64,AAAA', 'ftp://127.0.0.1/image.png', 'gopher://127.0.0.1:70/', 'javascript:alert(1)'])(
    'refuses the scheme of %s',
    async (url) => {
      const sockets = await clientSocketsDuring(() => expectRefused(fetchRemoteFile(url, allowed()), 'SCHEME_NOT_ALLOWED'), { disarm: true });
      expect(sockets).toBe(0);
    },
  );

  it('refuses what is not an absolute URL, and a URL with credentials', async () => {
    await expectRefused(fetchRemoteFile('/image.png', allowed()), 'INVALID_URL');
    await expectRefused(fetchRemoteFile(`http://user:secret@127.0.0.1:${origin.port}/image.png`, allowed()), 'INVALID_URL');
    expect(origin.requests).toEqual([]);
  });

  it('follows a redirect on the allowed server, and refuses one to loopback, to a name for loopback and to file:', async () => {
    const file = await fetchRemoteFile(originUrl(`/redirect?to=${encodeURIComponent('/image.png')}`), allowed());
    expect(file.finalUrl).toBe(originUrl('/image.png'));
    expect(file.bytes.equals(PNG)).toBe(true);

    for (const host of ['127.0.0.1', '[::1]', 'localhost']) {
      const error = await expectRefused(fetchRemoteFile(originUrl(`/redirect?to=${encodeURIComponent(trapUrl(host))}`), allowed()), 'ADDRESS_NOT_PUBLIC');
      expect(error.message).toContain(host);
    }
    await expectRefused(fetchRemoteFile(originUrl(`/redirect?to=${encodeURIComponent('file:///etc/passwd')}`), allowed()), 'SCHEME_NOT_ALLOWED');
    expect(trap.connections).toBe(0);
    expect(origin.requests).toHaveLength(6);
  });

  it('follows at most three redirects', async () => {
    const file = await fetchRemoteFile(originUrl('/chain/3'), allowed());
    expect(file.bytes.equals(PNG)).toBe(true);
    expect(origin.requests).toEqual(['/chain/3', '/chain/2', '/chain/1', '/chain/0']);

    origin.requests = [];
    await expectRefused(fetchRemoteFile(originUrl('/chain/4'), allowed()), 'TOO_MANY_REDIRECTS');
    expect(origin.requests).toEqual(['/chain/4', '/chain/3', '/chain/2', '/chain/1']);
    await expectRefused(fetchRemoteFile(originUrl('/chain/1'), allowed({ maxRedirects: 0 })), 'TOO_MANY_REDIRECTS');
  });

  it('refuses a Content-Length over the cap without reading the body, and closes the connection', async () => {
    // The server declares a gigabyte and sends ten bytes, then waits: a fetcher that read on would time out instead.
    await expectRefused(fetchRemoteFile(originUrl('/declared-huge'), allowed()), 'TOO_LARGE');
    await allOriginConnectionsClosed();
  });

  it('cuts off a body without Content-Length once it passes the cap, and closes the connection', async () => {
    // 1200 bytes in two chunks, and the response never ends: only counting while streaming refuses it.
    await expectRefused(fetchRemoteFile(originUrl('/streamed-huge'), allowed()), 'TOO_LARGE');
    await allOriginConnectionsClosed();
    const exact = await fetchRemoteFile(originUrl('/streamed-huge?end'), allowed({ maxBytes: 1200 }));
    expect(exact.bytes).toHaveLength(1200);
  });

  it('gives up at the deadline, and answers a cancelled signal with its reason', async () => {
    await expectRefused(fetchRemoteFile(originUrl('/slow'), allowed({ timeoutMs: 200 })), 'TIMEOUT');

    const controller = new AbortController();
    const arrived = once(origin.server, 'slow');
    const fetching = fetchRemoteFile(originUrl('/slow'), allowed({ signal: controller.signal }));
    await arrived;
    const reason = new Error('the client went away');
    controller.abort(reason);
    await expect(fetching).rejects.toBe(reason);
    await allOriginConnectionsClosed();
  });

  it('reports an error status and an unreachable host', async () => {
    const missing = await expectRefused(fetchRemoteFile(originUrl('/missing'), allowed()), 'UPSTREAM_STATUS');
    expect(missing.message).toBe(`127.0.0.1:${origin.port} answered HTTP 404.`);
    const closedPort = await freePort();
    await expectRefused(fetchRemoteFile(`http://127.0.0.1:${closedPort}/`, allowed({ allowHosts: [`127.0.0.1:${closedPort}`] })), 'UNREACHABLE');
  });
});

describe('fetchRemoteImage', () => {
  it('returns the type the bytes are, not the one declared', async () => {
    const image = await fetchRemoteImage(originUrl('/gif-as-png'), allowed());
    expect(image.mediaType).toBe('image/gif');
    expect(image.contentType).toBe('image/png');
  });

  it('refuses a body that is not an image, whatever its Content-Type', async () => {
    const error = await expectRefused(fetchRemoteImage(originUrl('/html-as-png'), allowed()), 'NOT_AN_IMAGE');
    expect(error.message).toBe(`127.0.0.1:${origin.port} did not send a JPEG, PNG, WebP or GIF image.`);
  });

  it('detects JPEG, PNG, WebP and GIF from their bytes, and nothing else', async () => {
    expect(await detectImageType(JPEG)).toBe('image/jpeg');
    expect(await detectImageType(PNG)).toBe('image/png');
    expect(await detectImageType(WEBP)).toBe('image/webp');
    expect(await detectImageType(GIF)).toBe('image/gif');
    expect(await detectImageType(HTML)).toBeNull();
    expect(await detectImageType(Buffer.from('%PDF-1.7\n'))).toBeNull();
    expect(await detectImageType(Buffer.alloc(0))).toBeNull();
  });
});

describe('addresses and the allow-list', () => {
  it('takes as public only global unicast addresses', () => {
    for (const address of ['8.8.8.8', '1.1.1.1', '2606:4700:4700::1111', '::ffff:8.8.8.8']) expect(isPublicAddress(address), address).toBe(true);
    for (const address of ['127.0.0.1', '10.1.2.3', '172.31.255.255', '192.168.0.1', '169.254.169.254', '100.100.100.200', '0.0.0.0', '224.0.0.251', '192.0.2.1', '198.18.0.1', '240.0.0.1', '::1', '::', 'fe80::1', 'fd00::1', 'ff02::1', '::ffff:127.0.0.1', '::7f00:1', '64:ff9b::7f00:1', '2002:7f00:1::', '2001:db8::1', '100::1', 'not-an-address']) {
      expect(isPublicAddress(address), address).toBe(false);
    }
  });

  it('reads MEDIA_FETCH_ALLOW_HOSTS as host or host:port entries, none by default, and refuses anything else at start', () => {
    expect(loadConfig({}).mediaFetchAllowHosts).toEqual([]);
    expect(loadConfig({ MEDIA_FETCH_ALLOW_HOSTS: '127.0.0.1:9000, [::1]:8080,assets.lan' }).mediaFetchAllowHosts).toEqual(['127.0.0.1:9000', '[::1]:8080', 'assets.lan']);
    for (const bad of ['http://127.0.0.1', '127.0.0.1:99999', 'user@host', 'host/path']) {
      expect(() => loadConfig({ MEDIA_FETCH_ALLOW_HOSTS: bad }), bad).toThrow(StartupError);
    }
    const numeric = parseAllowHost('127.1');
    expect(numeric.hostname).toBe('127.0.0.1');
    expect(numeric.matches(new URL('http://0x7f000001:1234/'))).toBe(true);
    const withPort = parseAllowHost('Assets.LAN:443');
    expect(withPort.matches(new URL('https://assets.lan/x.png'))).toBe(true);
    expect(withPort.matches(new URL('http://assets.lan/x.png'))).toBe(false);
  });
});

async function allOriginConnectionsClosed(): Promise<void> {
  await Promise.all([...origin.sockets].map((socket) => (socket.destroyed ? undefined : once(socket, 'close'))));
}

async function listenTrap(): Promise<typeof trap> {
  const state = { port: 0, servers: [] as Server[], connections: 0 };
  const listen = (port: number, host: string) =>
    new Promise<Server>((resolve, reject) => {
      const server = createServer((socket) => {
        state.connections++;
        socket.destroy();
      });
      server.once('error', reject);
      server.listen(port, host, () => resolve(server));
    });
  for (let attempt = 0; ; attempt++) {
    const v4 = await listen(0, '127.0.0.1');
    const port = (v4.address() as { port: number }).port;
    try {
      const v6 = await listen(port, '::1');
      return Object.assign(state, { port, servers: [v4, v6] });
    } catch (error) {
      v4.close();
      if (attempt === 5) throw error;
    }
  }
}

async function listenOrigin(): Promise<typeof origin> {
  const sockets = new Set<Socket>();
  const requests: string[] = [];
  const server = createHttpServer((request, response) => {
    const url = new URL(request.url ?? '/', 'http://origin');
    state.requests.push(url.pathname);
    const chain = /^\/chain\/(\d+)$/.exec(url.pathname);
    if (chain) {
      const left = Number(chain[1]);
      if (left === 0) return response.writeHead(200, { 'content-type': 'image/png' }).end(PNG);
      return response.writeHead(302, { location: `/chain/${left - 1}` }).end();
    }
    switch (url.pathname) {
      case '/image.png':
        return response.writeHead(200, { 'content-type': 'image/png' }).end(PNG);
      case '/gif-as-png':
        return response.writeHead(200, { 'content-type': 'image/png' }).end(GIF);
      case '/html-as-png':
        return response.writeHead(200, { 'content-type': 'image/png' }).end(HTML);
      case '/redirect':
        return response.writeHead(302, { location: url.searchParams.get('to') ?? '/' }).end();
      case '/declared-huge':
        response.writeHead(200, { 'content-type': 'image/png', 'content-length': String(1e9) });
        return void response.write(Buffer.alloc(10));
      case '/streamed-huge':
        response.writeHead(200, { 'content-type': 'image/png' });
        response.write(Buffer.alloc(600));
        response.write(Buffer.alloc(600));
        if (url.searchParams.has('end')) response.end();
        return;
      case '/slow':
        server.emit('slow');
        return; // never answers
      default:
        return response.writeHead(404).end();
    }
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const state = { port: (server.address() as { port: number }).port, server, sockets, requests };
  return state;
}
