import { z } from 'zod';
import type { Sql } from '../../src/db/index.js';
import { PLATFORMS, type Platform } from '../../src/platforms/index.js';
import { channelLimits, type InstanceLimits } from '../../src/platforms/rules.js';
import { isoOrNull, timestamp, uuid } from '../../src/registry/fields.js';

/**
 * How long a PENDING_SELECTION channel keeps its tokens while nobody picks its account (the admin command can still
 * pick after the picker expires); then they are erased and revoked (src/worker/expire-pending-selections.ts).
 */
export const PENDING_SELECTION_TTL_HOURS = 24;

export const platform = z.enum(PLATFORMS);
export const tokenStatus = z.enum(['VALID', 'EXPIRING', 'EXPIRED', 'REVOKED', 'MISSING']).meta({
  description:
    '`VALID`; `EXPIRING`: the token expires within 7 days and cannot be refreshed (`autoRefreshUnavailable`): connect the channel again ' +
    'before `expiresAt`; `EXPIRED` and `REVOKED`: the platform no longer accepts it (see `connectionErrorCode`): reconnect; `MISSING`: no ' +
    `credentials are stored (a channel made by the admin command, disconnected, or whose account was not picked within ${PENDING_SELECTION_TTL_HOURS} hours of ` +
    'connecting: see `connectionErrorCode`); publishing to it fails.',
});

/** A Mastodon instance's limits, as src/platforms/rules.ts InstanceLimits (the rules check a channel's posts against them). */
export const InstanceLimitsSchema = z
  .object({
    maxCharacters: z.number().int().meta({ description: 'Characters a post may have, its content warning included (the instance\'s `max_characters`).' }),
    charactersReservedPerUrl: z.number().int().meta({ description: 'What each link counts, whatever its length (`characters_reserved_per_url`).' }),
    maxMediaAttachments: z.number().int().meta({ description: 'Images a post may carry (`max_media_attachments`).' }),
    imageTypes: z.array(z.string()).meta({ description: 'The image types it takes (`supported_mime_types`), such as image/jpeg.' }),
    imageSizeLimit: z.number().int().nullable().meta({ description: 'The most bytes an image may have (`image_size_limit`); null: none said.' }),
    imageMatrixLimit: z.number().int().nullable().meta({ description: 'The most pixels (width × height) an image may have (`image_matrix_limit`); null: none said.' }),
    descriptionLimit: z.number().int().meta({ description: 'Characters of an image\'s alt text (`description_limit`).' }),
    counting: z.enum(['mastodon', 'strict']).meta({
      description:
        'How a post\'s length is counted: `mastodon`, as Mastodon does (characters as people see them, each link `charactersReservedPerUrl`, ' +
        '`@user@domain` as `@user`, the content warning included); `strict`, on a server that is not Mastodon (GoToSocial, Pleroma…): ' +
        'code points of the text and the content warning, links in full.',
    }),
  })
  .meta({ id: 'InstanceLimits' });

export const Integration = z
  .object({
    id: uuid,
    platform,
    name: z.string(),
    image: z.string().nullable(),
    handle: z.string().nullable().meta({ description: 'The account\'s handle where the platform has one: `@user@domain` on Mastodon, `@user` on Threads; null elsewhere.' }),
    limits: InstanceLimitsSchema.nullable().meta({
      description:
        'On Mastodon, the limits its posts are checked against: its instance\'s, as last read from it (`GET /api/v2/instance`), or Mastodon\'s ' +
        'defaults (500 characters, a link counting 23, 4 images, alt text of 1500 characters) while they are not known. Null on the other ' +
        'platforms, whose limits are the same for every channel (GET /platforms, docs/limits.md).',
    }),
    tokenStatus,
    connectStatus: z.enum(['PENDING_SELECTION', 'ACTIVE']),
    connectionErrorCode: z.string().nullable().meta({ description: 'e.g. `REFRESH_TOKEN_REVOKED`; null while the connection is healthy.' }),
    connectionError: z.string().nullable(),
    lastValidatedAt: timestamp.nullable(),
    expiresAt: timestamp.nullable(),
    autoRefreshUnavailable: z.boolean(),
    hasFailedSchedules: z.boolean().meta({ description: 'True while any schedule of this channel is FAILED.' }),
    failingSchedules: z.number().int().meta({
      description:
        'How many schedules of this channel failed and are not settled: FAILED, or waiting to be tried again automatically (`nextAttemptAt` set). ' +
        'GET /posts?failing=true&integrationId={id} lists their posts. 0 for a healthy channel.',
    }),
    lastFailure: z
      .object({
        at: timestamp.nullable().meta({ description: 'When its failed attempt began (`lastAttempt`); null for a thread part failed with the part before it.' }),
        reason: z.string().nullable().meta({ description: 'Its `failureReason`: what the platform (or the service) said.' }),
        scheduleId: uuid,
        retrying: z.boolean().meta({ description: 'True while it waits to be tried again automatically; false once FAILED.' }),
      })
      .nullable()
      .meta({ description: 'The latest of the failing schedules `failingSchedules` counts; null when there are none.' }),
  })
  .meta({ id: 'Integration' });

export interface IntegrationRow {
  id: string;
  platform: Platform;
  name: string;
  image: string | null;
  handle: string | null;
  /** The instance's limits as stored (Mastodon with a known instance); null otherwise. */
  limits: Partial<InstanceLimits> | null;
  tokenStatus: z.infer<typeof tokenStatus>;
  connectStatus: 'PENDING_SELECTION' | 'ACTIVE';
  connectionErrorCode: string | null;
  connectionError: string | null;
  lastValidatedAt: Date | null;
  expiresAt: Date | null;
  autoRefreshUnavailable: boolean;
  hasFailedSchedules: boolean;
  failingSchedules: number;
  lastFailure: { at: string | null; reason: string | null; scheduleId: string; retrying: boolean } | null;
}

/** How long before a token that cannot be refreshed expires its tokenStatus says EXPIRING. */
export const EXPIRY_WARNING_DAYS = 7;

/** The workspace's integrations (all, or the one `id`), oldest first; credentials are never read here. */
export function selectIntegrations(db: Sql, workspaceId: string, id?: string) {
  return db<IntegrationRow[]>`
    SELECT i.id, i.platform, i.name, i.image, i.handle, mi.limits, i.connect_status, i.connection_error_code, i.connection_error,
      CASE WHEN i.token_status <> 'VALID' OR NOT i.auto_refresh_unavailable OR i.expires_at IS NULL THEN i.token_status
        WHEN i.expires_at <= now() THEN 'EXPIRED'
        WHEN i.expires_at <= now() + ${EXPIRY_WARNING_DAYS} * interval '1 day' THEN 'EXPIRING'
        ELSE 'VALID' END AS token_status,
      i.last_validated_at, i.expires_at, i.auto_refresh_unavailable,
      EXISTS (SELECT 1 FROM schedules s WHERE s.integration_id = i.id AND s.status = 'FAILED') AS has_failed_schedules,
      failing.count AS failing_schedules, failing.last AS last_failure
    FROM integrations i
    LEFT JOIN mastodon_instances mi ON mi.host = i.instance_host
    -- The channel's failing schedules, from schedules_failing_idx alone but the latest's row: a few index entries each.
    CROSS JOIN LATERAL (
      SELECT count(*)::int AS count,
        (SELECT json_build_object('at', api_time(s.last_attempt), 'reason', s.failure_reason, 'scheduleId', s.id, 'retrying', s.status <> 'FAILED')
          FROM schedules s WHERE s.organization_id = i.organization_id AND s.integration_id = i.id
            AND (s.status = 'FAILED' OR s.next_attempt_at IS NOT NULL)
          ORDER BY s.last_attempt DESC NULLS LAST LIMIT 1) AS last
      FROM schedules s WHERE s.organization_id = i.organization_id AND s.integration_id = i.id
        AND (s.status = 'FAILED' OR s.next_attempt_at IS NOT NULL)) failing
    WHERE i.organization_id = ${workspaceId} ${id ? db`AND i.id = ${id}` : db``}
    ORDER BY i.created_at, i.id`;
}

export const toIntegration = (row: IntegrationRow): z.input<typeof Integration> => ({
  ...row,
  limits: channelLimits(row.platform, row.limits),
  lastValidatedAt: isoOrNull(row.lastValidatedAt),
  expiresAt: isoOrNull(row.expiresAt),
});
