import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../src/process/config.js';
import { call, startTestService, type TestService, type Workspace } from './support/service.js';

/**
 * GET /platforms (listPlatforms): what this server can connect channels to, the same over REST and MCP, and the same
 * check POST /integrations/connect refuses with. A server without a LinkedIn app's client, and one with it.
 */
const REASON =
  'LinkedIn is not configured on this server: set LINKEDIN_CLIENT_ID and LINKEDIN_CLIENT_SECRET (a LinkedIn app\'s client) to connect LinkedIn channels';

describe('a server without LINKEDIN_CLIENT_ID and LINKEDIN_CLIENT_SECRET', () => {
  let service: TestService;
  let ws: Workspace;
  beforeAll(async () => {
    service = await startTestService();
    ws = await service.workspace();
  });
  afterAll(() => service?.stop());

  it('says LinkedIn is not connectable, why and which settings it needs; connect answers that same reason', async () => {
    const listed = await call(`${service.api}/platforms`, { key: ws.apiKey });
    expect(listed.status, listed.text).toBe(200);
    expect(listed.json).toEqual([
      { platform: 'BLUESKY', name: 'Bluesky', connectMethod: 'app-password', connectable: true, unavailableReason: null, settings: [], redirectUri: null },
      {
        platform: 'LINKEDIN',
        name: 'LinkedIn',
        connectMethod: 'oauth',
        connectable: false,
        unavailableReason: REASON,
        settings: ['LINKEDIN_CLIENT_ID', 'LINKEDIN_CLIENT_SECRET'],
        redirectUri: `${service.base}/oauth/linkedin/callback`,
      },
      // Nothing for an operator to set: Postwise registers itself on each member's server.
      { platform: 'MASTODON', name: 'Mastodon', connectMethod: 'oauth', connectable: true, unavailableReason: null, settings: [], redirectUri: null },
      {
        platform: 'THREADS',
        name: 'Threads',
        connectMethod: 'oauth',
        connectable: false,
        unavailableReason: 'Threads is not configured on this server: set THREADS_APP_ID and THREADS_APP_SECRET (the Threads app of a Meta app) to connect Threads channels',
        settings: ['THREADS_APP_ID', 'THREADS_APP_SECRET'],
        redirectUri: `${service.base}/oauth/threads/callback`,
      },
    ]);
    // Without a server named, the link is this service's page asking for it.
    const mastodon = await call(`${service.api}/integrations/connect`, { method: 'POST', key: ws.apiKey, body: { platform: 'MASTODON' } });
    expect(mastodon.status).toBe(200);
    expect(mastodon.json.redirectUrl).toMatch(/\/connect\/mastodon\?state=/);
    const refused = await call(`${service.api}/integrations/connect`, { method: 'POST', key: ws.apiKey, body: { platform: 'LINKEDIN' } });
    expect(refused.status).toBe(400);
    expect(refused.json).toEqual({ code: 'VALIDATION_ERROR', message: `platform: ${REASON}` });
    const unknown = await call(`${service.api}/integrations/connect`, { method: 'POST', key: ws.apiKey, body: { platform: 'MYSPACE' } });
    expect(unknown.json).toEqual({ code: 'VALIDATION_ERROR', message: 'platform: unknown platform "MYSPACE"; supported: BLUESKY, MASTODON' });
    // Nothing was started: no connect state was written for the refused platform.
    expect(await service.service.core.db`SELECT 1 FROM connect_states WHERE platform = 'LINKEDIN'`).toHaveLength(0);
  });

  it('MCP\'s listPlatforms answers what REST does', async () => {
    const mcp = new Client({ name: 'test', version: '1.0.0' });
    await mcp.connect(new StreamableHTTPClientTransport(new URL(`${service.base}/mcp`), { requestInit: { headers: { 'x-api-key': ws.apiKey } } }));
    try {
      const listed = await mcp.callTool({ name: 'listPlatforms', arguments: {} });
      expect(listed.isError).toBeFalsy();
      expect((listed.structuredContent as { items: unknown[] }).items).toEqual((await call(`${service.api}/platforms`, { key: ws.apiKey })).json);
    } finally {
      await mcp.close();
    }
  });
});

describe('a server with a LinkedIn app\'s client', () => {
  let service: TestService;
  let ws: Workspace;
  beforeAll(async () => {
    service = await startTestService({ linkedin: { ...loadConfig({}).linkedin, clientId: 'postwise-client', clientSecret: 'postwise-secret' } });
    ws = await service.workspace();
  });
  afterAll(() => service?.stop());

  it('says LinkedIn is connectable, with the redirect URI to register; connect answers its consent page', async () => {
    const listed = await call(`${service.api}/platforms`, { key: ws.apiKey });
    expect(listed.json[1]).toEqual({
      platform: 'LINKEDIN',
      name: 'LinkedIn',
      connectMethod: 'oauth',
      connectable: true,
      unavailableReason: null,
      settings: ['LINKEDIN_CLIENT_ID', 'LINKEDIN_CLIENT_SECRET'],
      redirectUri: `${service.base}/oauth/linkedin/callback`,
    });
    const connect = await call(`${service.api}/integrations/connect`, { method: 'POST', key: ws.apiKey, body: { platform: 'LINKEDIN' } });
    expect(connect.status, connect.text).toBe(200);
    const url = new URL(connect.json.redirectUrl);
    expect(url.searchParams.get('client_id')).toBe('postwise-client');
    expect(url.searchParams.get('redirect_uri')).toBe(listed.json[1].redirectUri);
  });
});
