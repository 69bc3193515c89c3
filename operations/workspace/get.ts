import { z } from 'zod';
import { MEDIA_PROVIDERS } from '../../src/media/providers.js';
import { PLATFORMS, type Platform } from '../../src/platforms/index.js';
import { uuid } from '../../src/registry/fields.js';
import { defineOperation } from '../../src/registry/operation.js';
import { utcMonth } from '../posts/quota.js';
import { Settings, SETTINGS_COLUMNS, toSettings, type SettingsRow } from './settings.js';

const Quota = z.object({
  platform: z.enum(PLATFORMS),
  used: z.number().int().meta({ description: 'Posts scheduled live to this platform this month.' }),
  limit: z.number().int().meta({ description: 'The plan\'s monthly cap for this platform (0: the plan allows none).' }),
  period: z.string().meta({ description: 'The UTC calendar month counted, YYYY-MM; the quota resets when it ends.' }),
});

export default defineOperation({
  id: 'getWorkspace',
  method: 'GET',
  path: '/workspace',
  summary: 'The workspace: its settings, its plan, and what it has used of the plan this month',
  description:
    'The settings as `PATCH /workspace/settings` sets them, the plan (rate limit per minute, storage allowance), the subscription, ' +
    'each platform\'s monthly post quota with what is used of it, and the storage in use (completed uploads, and pending ones whose ' +
    'signed URL has not expired, as the allowance counts them), and what this server offers besides: `gifProvider`, the GIF provider ' +
    'GET /media/search asks (GIPHY), or null where GIF search is not configured. Internal (dashboard, admin command).',
  output: Settings.extend({
    id: uuid,
    plan: z.object({ name: z.string(), rateLimitPerMinute: z.number().int(), storageBytes: z.number().int() }),
    subscription: z.enum(['active', 'none']),
    quotas: z.array(Quota),
    storage: z.object({ usedBytes: z.number().int(), allowanceBytes: z.number().int() }),
    gifProvider: z.enum(MEDIA_PROVIDERS).nullable().meta({ description: 'The GIF provider GET /media/search asks; null without GIPHY_API_KEY.' }),
  }).meta({ id: 'Workspace' }),
  async handler(_input, { db, auth, config }) {
    const month = utcMonth(new Date()).start.toISOString().slice(0, 10);
    const [workspace] = await db<(SettingsRow & { plan: string; rateLimitPerMinute: number; storageBytes: string; subscriptionStatus: 'active' | 'none'; usedBytes: string })[]>`
      SELECT o.*, p.rate_limit_per_minute, p.storage_bytes,
        (SELECT coalesce(sum(size), 0) FROM uploads u
         WHERE u.organization_id = o.id AND (u.status = 'completed' OR u.expires_at > now())) AS used_bytes
      FROM (SELECT id, plan, subscription_status, ${db.unsafe(SETTINGS_COLUMNS)} FROM organizations WHERE id = ${auth.workspaceId}) o
      JOIN plans p ON p.name = o.plan`;
    const quotas = await db<{ platform: Platform; used: number; limit: number }[]>`
      SELECT p.name AS platform, coalesce(u.used, 0) AS used, coalesce(q.monthly_posts, 0) AS limit
      FROM unnest(${PLATFORMS as unknown as string[]}::text[]) AS p (name)
      LEFT JOIN plan_quotas q ON q.plan = ${workspace!.plan} AND q.platform = p.name
      LEFT JOIN post_quota_usage u ON u.organization_id = ${auth.workspaceId} AND u.platform = p.name AND u.month = ${month}::date
      ORDER BY p.name`;
    return {
      id: auth.workspaceId,
      ...toSettings(workspace!),
      plan: { name: workspace!.plan, rateLimitPerMinute: workspace!.rateLimitPerMinute, storageBytes: Number(workspace!.storageBytes) },
      subscription: workspace!.subscriptionStatus,
      quotas: quotas.map((quota) => ({ ...quota, period: month.slice(0, 7) })),
      storage: { usedBytes: Number(workspace!.usedBytes), allowanceBytes: Number(workspace!.storageBytes) },
      gifProvider: config.giphy.apiKey ? ('GIPHY' as const) : null,
    };
  },
});
