import { randomBytes } from 'node:crypto';
import { isIP } from 'node:net';
import { z } from 'zod';
import type { Sql } from '../../src/db/index.js';
import { isPublicAddress, parseAllowHost } from '../../src/media/remote.js';
import { text, timestamp, uuid } from '../../src/registry/fields.js';
import { eventType } from '../events/event-type.js';

/** A workspace has at most this many endpoints. */
export const MAX_ENDPOINTS = 20;

export const WebhookEndpoint = z
  .object({
    id: uuid,
    url: z.string(),
    description: z.string(),
    eventTypes: z.array(eventType).meta({ description: 'The event types sent to it; empty: every type.' }),
    enabled: z.boolean(),
    disabledReason: z.string().nullable().meta({ description: 'Why it was disabled: by hand, or after failing every delivery for 3 days.' }),
    failingSince: timestamp.nullable().meta({ description: 'Since when every delivery to it has failed; null after a success.' }),
    previousSecretExpiresAt: timestamp
      .nullable()
      .meta({ description: 'After a rotation: until when deliveries are signed with the previous secret too (24 hours).' }),
    createdAt: timestamp,
    updatedAt: timestamp,
  })
  .meta({ id: 'WebhookEndpoint' });

export const WebhookEndpointWithSecret = WebhookEndpoint.extend({
  secret: z.string().meta({ description: 'The signing secret (`whsec_…`), shown this once: keep it where your receiver verifies signatures.' }),
}).meta({ id: 'WebhookEndpointWithSecret' });

export type EndpointOutput = z.input<typeof WebhookEndpoint>;

export const endpointUrl = text.max(2000).meta({
  description: 'Where deliveries are POSTed: an http or https URL of a public host (no user name or password); redirects are not followed.',
});
export const endpointFields = {
  eventTypes: z.array(eventType).max(30).meta({ description: 'The event types to send; empty or omitted: every type.' }),
  description: text.max(500).meta({ description: 'What the endpoint is for, for people.' }),
};

/** The endpoints of the workspace (all, or the one `id`) as the API shows them, oldest first. */
export function selectEndpoints(db: Sql, workspaceId: string, id?: string) {
  return db<EndpointOutput[]>`
    SELECT id, url, description, event_types, enabled, disabled_reason, api_time(failing_since) AS failing_since,
      api_time(CASE WHEN previous_secret_expires_at > now() THEN previous_secret_expires_at END) AS previous_secret_expires_at,
      api_time(created_at) AS created_at, api_time(updated_at) AS updated_at
    FROM webhook_endpoints
    WHERE organization_id = ${workspaceId} ${id ? db`AND id = ${id}` : db``}
    ORDER BY created_at, id`;
}

/** A new signing secret as Standard Webhooks writes them: `whsec_` and 32 random bytes in base64. */
export const newSecret = (): string => `whsec_${randomBytes(32).toString('base64')}`;

/**
 * Why a URL cannot be an endpoint, or undefined: what can be known before connecting (the scheme, credentials, an IP
 * literal that is not public). A host name is checked each time a delivery connects, against every address it resolves
 * to (src/media/remote.ts), so a name that later resolves to a private address gets nothing.
 */
export function refusedTarget(raw: string, allowHosts: readonly string[]): string | undefined {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return 'url: not an absolute URL';
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return `url: only http and https URLs can receive webhooks, not ${url.protocol.slice(0, -1)}`;
  if (url.username || url.password) return 'url: must not carry a user name or password';
  if (allowHosts.map(parseAllowHost).some((entry) => entry.matches(url))) return undefined;
  const literal = url.hostname.replace(/^\[(.*)\]$/, '$1');
  if (isIP(literal) && !isPublicAddress(literal)) return `url: ${url.hostname} is not a public internet address; only public hosts receive webhooks`;
  return undefined;
}
