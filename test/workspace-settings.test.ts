import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { admin } from './support/processes.js';
import { call, startTestService, type TestService, type Workspace } from './support/service.js';

/**
 * The workspace's time zone and posting windows (set by the admin command, used by NEXT_WINDOW) and its default
 * languages (used when publishing to Bluesky: test/post-languages.test.ts).
 */

let service: TestService;
let ws: Workspace;

beforeAll(async () => {
  service = await startTestService();
  ws = await service.workspace();
});
afterAll(() => service?.stop());

describe('set-posting-windows', () => {
  it('sets the time zone and windows that NEXT_WINDOW then takes its slots from', async () => {
    const windows = [{ weekdays: [7], times: ['07:30'] }];
    const set = await admin(
      ['set-posting-windows', '--workspace', ws.workspaceId, '--time-zone', 'Asia/Tokyo', '--windows', JSON.stringify(windows)],
      { DATABASE_URL: service.databaseUrl },
    );
    expect(set).toEqual({ code: 0, json: { name: 'My workspace', timeZone: 'Asia/Tokyo', postingWindows: windows, languages: [], postsNeedApproval: false, approverIds: [] } });

    const channel = await ws.admin('createIntegration', { platform: 'BLUESKY', name: 'Sky' });
    const created = await call(`${service.api}/posts`, {
      method: 'POST',
      key: ws.apiKey,
      body: { rows: [{ content: 'Sunday morning in Tokyo' }], shared: { selectedIntegrations: [channel.id] } },
    });
    expect(created.status, created.text).toBe(201);
    const post = (await call(`${service.api}/posts/${created.json.postId}`, { key: ws.apiKey })).json;
    const at = new Date(post.schedules[0].scheduledAt);
    const local = new Intl.DateTimeFormat('en-GB', { timeZone: 'Asia/Tokyo', weekday: 'long', hour: '2-digit', minute: '2-digit' }).format(at);
    expect(local).toBe('Sunday 07:30');
    expect(at.getTime() - Date.now()).toBeLessThanOrEqual(7 * 24 * 3_600_000);
  });

  it('refuses an unknown time zone, a bad time and bad JSON, naming what is wrong', async () => {
    await expect(ws.admin('updateWorkspaceSettings', { timeZone: 'Mars/Olympus' })).rejects.toThrow(/timeZone: must be an IANA time zone/);
    await expect(ws.admin('updateWorkspaceSettings', { postingWindows: [{ weekdays: [8], times: ['9:00'] }] })).rejects.toThrow(
      /postingWindows\.0\.weekdays\.0: must be at most 7.*postingWindows\.0\.times\.0: must be a local time HH:MM/,
    );
    const bad = await admin(['set-posting-windows', '--workspace', ws.workspaceId, '--windows', '[{'], { DATABASE_URL: service.databaseUrl });
    // Worded as the command-line client words it: the admin's flags are read by the same code (src/cli/flags.ts).
    expect(bad).toEqual({ code: 1, json: { code: 'VALIDATION_ERROR', message: expect.stringMatching(/^--windows: not JSON \(.+\): \[\{$/) } });
  });

  it('is not reachable with an API key', async () => {
    const languages = await call(`${service.api}/workspace/settings`, { method: 'PATCH', key: ws.apiKey, body: { languages: ['en'] } });
    expect(languages.json).toEqual({ code: 'NOT_FOUND', message: 'Not found' });
    const answer = await call(`${service.api}/workspace/settings`, { method: 'PATCH', key: ws.apiKey, body: { timeZone: 'UTC' } });
    expect(answer.json).toEqual({ code: 'NOT_FOUND', message: 'Not found' });
  });
});

describe('set-languages', () => {
  const env = () => ({ DATABASE_URL: service.databaseUrl });

  it('sets the default languages from a shell, keeps the other settings, and clears them with an empty list', async () => {
    const other = await service.workspace();
    await other.admin('updateWorkspaceSettings', { timeZone: 'Europe/Paris' });
    const set = await admin(['set-languages', '--workspace', other.workspaceId, '--languages', 'de, en-GB,zh-Hant'], env());
    expect(set.code).toBe(0);
    expect(set.json).toMatchObject({ timeZone: 'Europe/Paris', languages: ['de', 'en-GB', 'zh-Hant'] });
    // Left out, they stay; the time zone changed alone.
    expect(await other.admin('updateWorkspaceSettings', { timeZone: 'UTC' })).toMatchObject({ timeZone: 'UTC', languages: ['de', 'en-GB', 'zh-Hant'] });
    const cleared = await admin(['set-languages', '--workspace', other.workspaceId, '--languages', ''], env());
    expect(cleared).toEqual({ code: 0, json: { name: 'My workspace', timeZone: 'UTC', postingWindows: expect.any(Array), languages: [], postsNeedApproval: false, approverIds: [] } });
  }, 60_000);

  it('refuses a tag that is not well-formed BCP-47, more than 3, a repeat, and a missing --languages, naming the field', async () => {
    const bad = await admin(['set-languages', '--workspace', ws.workspaceId, '--languages', 'en,en_US'], env());
    expect(bad).toEqual({
      code: 1,
      json: { code: 'VALIDATION_ERROR', message: 'languages.1: must be a well-formed BCP-47 language tag, such as en, pt-BR or zh-Hant' },
    });
    await expect(ws.admin('updateWorkspaceSettings', { languages: ['de', 'en', 'fr', 'it'] })).rejects.toThrow(
      /"VALIDATION_ERROR","message":"languages: at most 3 language tags \(Bluesky's limit\)"/,
    );
    await expect(ws.admin('updateWorkspaceSettings', { languages: ['pt-BR', 'pt-br'] })).rejects.toThrow(/"message":"languages\.1: pt-br repeats item 0: list each language once"/);
    await expect(ws.admin('updateWorkspaceSettings', { languages: 'en' })).rejects.toThrow(/"message":"languages: must be a list, not text"/);
    await expect(ws.admin('updateWorkspaceSettings', { languages: ['klingon'] })).rejects.toThrow(/"message":"languages\.0: is not a registered language: use a tag such as en, pt-BR or zh-Hant"/);
    const missing = await admin(['set-languages', '--workspace', ws.workspaceId], env());
    expect(missing).toEqual({ code: 1, json: { code: 'VALIDATION_ERROR', message: '--languages is required' } });
    // Nothing was changed by the refusals.
    expect(await ws.admin('updateWorkspaceSettings', {})).toMatchObject({ languages: [] });
  }, 60_000);
});
