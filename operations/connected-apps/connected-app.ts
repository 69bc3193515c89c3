import { z } from 'zod';
import type { Sql } from '../../src/db/index.js';
import { iso, isoOrNull, text, timestamp, uuid } from '../../src/registry/fields.js';
import { isScope, SCOPE_NAMES, SCOPES, type Scope } from '../../src/oauth/scopes.js';

/*
 * Connected apps: the OAuth connections of migration 028 (src/oauth), each a member's consent to an app (a hosted
 * agent) reaching one resource of this workspace. Deleting the row is the revocation: every code and token of it
 * goes with it (cascade), so the app is refused at its next request.
 */

/** A connection's id in a path: the authorization server's grant id (not a UUID). */
export const connectionId = text.min(1).max(128).meta({ description: 'The connected app\'s id, as GET /connected-apps lists it.' });

export const ConnectedApp = z
  .object({
    id: z.string(),
    appName: z.string().meta({ description: 'The app\'s name as the consent page showed it. An app chooses its own name: redirectHost says where it lives.' }),
    logoUri: z.string().nullable().meta({ description: 'The logo the app gave for itself; null when none.' }),
    redirectHost: z.string().meta({ description: 'The host the member was sent back to when allowing it: where the app lives, to tell apps that share a name apart.' }),
    resource: z.enum(['mcp', 'api']).meta({ description: 'What it reaches: `mcp`, the MCP endpoint (/mcp); `api`, the REST API (/api/v1).' }),
    scopes: z
      .array(z.enum(SCOPE_NAMES as [Scope, ...Scope[]]))
      .meta({ description: `What the member allowed it to do: ${SCOPE_NAMES.map((name) => `\`${name}\` (${SCOPES[name].toLowerCase()})`).join(', ')}.` }),
    postsNeedApproval: z.boolean().meta({
      description: 'Whether the live posts the app writes wait for a person\'s approval (approvalStatus pending_review) before they publish.',
    }),
    createdAt: timestamp.meta({ description: 'When the member allowed it.' }),
    lastUsedAt: timestamp.nullable().meta({ description: 'The app\'s latest call, to within a few seconds (usage is written in batches); null when never used.' }),
    expiresAt: timestamp.meta({ description: 'When the connection ends unless the app renews it; the app must then be connected again.' }),
    createdBy: z.object({ id: uuid, name: z.string() }).meta({ description: 'The member who connected it, and for whom it acts.' }),
  })
  .meta({ id: 'ConnectedApp' });

export interface ConnectedAppRow {
  id: string;
  clientName: string;
  logoUri: string | null;
  redirectHost: string;
  resource: string;
  scopes: string[];
  postsNeedApproval: boolean;
  createdAt: Date;
  lastUsedAt: Date | null;
  expiresAt: Date;
  userId: string;
  creatorName: string;
}

/** The columns of `ConnectedAppRow`, from `oauth_connections c` joined to its member's user as `u`. */
export const CONNECTED_APP_COLUMNS =
  'c.id, c.client_name, c.logo_uri, c.redirect_host, c.resource, c.scopes, c.posts_need_approval, c.created_at, c.last_used_at, c.expires_at, ' +
  'c.user_id, u.name AS creator_name';

export const toConnectedApp = (row: ConnectedAppRow): z.input<typeof ConnectedApp> => ({
  id: row.id,
  appName: row.clientName,
  logoUri: row.logoUri,
  redirectHost: row.redirectHost,
  // The resource is the URL the token is for (src/oauth/resource.ts): the MCP endpoint or the REST API's base.
  resource: row.resource.endsWith('/api/v1') ? 'api' : 'mcp',
  scopes: row.scopes.filter(isScope),
  postsNeedApproval: row.postsNeedApproval,
  createdAt: iso(row.createdAt),
  lastUsedAt: isoOrNull(row.lastUsedAt),
  expiresAt: iso(row.expiresAt),
  createdBy: { id: row.userId, name: row.creatorName },
});

/** The field that sets a connected app's approval rule. */
export const postsNeedApproval = z.boolean().meta({
  description:
    'The live posts the app writes wait for approval by the workspace\'s approvers before they publish (on unless the member turned it ' +
    'off when connecting it). Posts already waiting stay waiting when it is turned off.',
});

/**
 * Whether `userId` may manage the connected app `id` of the workspace (disconnect it, change its rule): the member who
 * connected it, or the owner, as for API keys. Undefined when the workspace has no such connection.
 */
export async function mayManageConnection(db: Sql, workspaceId: string, userId: string, id: string): Promise<boolean | undefined> {
  const [connection] = await db<{ mayManage: boolean }[]>`
    SELECT c.user_id = ${userId} OR EXISTS (
      SELECT 1 FROM memberships m WHERE m.organization_id = c.organization_id AND m.user_id = ${userId} AND m.role = 'owner'
    ) AS may_manage
    FROM oauth_connections c WHERE c.id = ${id} AND c.organization_id = ${workspaceId}`;
  return connection?.mayManage;
}
