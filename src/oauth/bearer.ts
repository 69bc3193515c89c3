import { bearerAuthChallengeResponse, OAuthError, OAuthErrorCode, verifyBearerToken } from '@modelcontextprotocol/server';
import type { Database } from '../db/index.js';
import type { Principal } from '../auth/principal.js';
import type { AuthorizationServer } from './provider.js';
import { metadataUrlOf, resourcesOf, type Resource } from './resource.js';
import { isScope } from './scopes.js';

/** A bearer token's caller, or the challenge to answer with (401, `WWW-Authenticate: Bearer error=…`). */
export type BearerOutcome = { principal: Principal } | { challenge: string; description: string };

/**
 * Turns `Authorization: Bearer …` into the principal of the connected app it was issued to. The library finds the
 * token (by its hash, unexpired, unrevoked); the MCP SDK checks its audience is this resource and its expiry; the
 * connection row gives the workspace, member, name and scopes, and exists only while the connection does and its member
 * is one (a disconnect or a member's removal counts from the next request, as a key's revocation does).
 */
export function bearerAuthenticator(db: Database, server: AuthorizationServer, base: () => string) {
  return async (header: string, resource: Resource): Promise<BearerOutcome> => {
    const resourceUrl = resourcesOf(base())[resource];
    const resourceMetadataUrl = metadataUrlOf(resourceUrl);
    try {
      const info = await verifyBearerToken(header, {
        expectedResource: new URL(resourceUrl),
        resourceMetadataUrl,
        verifier: {
          async verifyAccessToken(token) {
            const found = await (await server.provider()).AccessToken.find(token);
            if (!found) throw new OAuthError(OAuthErrorCode.InvalidToken, 'The access token is unknown, expired or revoked');
            const audience = Array.isArray(found.aud) ? found.aud[0] : found.aud;
            return {
              token,
              clientId: found.clientId ?? '',
              scopes: found.scope?.split(' ') ?? [],
              expiresAt: found.exp,
              ...(audience ? { resource: new URL(audience) } : {}),
              extra: { connectionId: found.grantId },
            };
          },
        },
      });
      const [connection] = await db<{ id: string; clientName: string; scopes: string[]; userId: string; organizationId: string }[]>`
        SELECT id, client_name, scopes, user_id, organization_id FROM oauth_connections
        WHERE id = ${String(info.extra?.connectionId)} AND expires_at > now()`;
      if (!connection) throw new OAuthError(OAuthErrorCode.InvalidToken, 'The app was disconnected; connect it again');
      return {
        principal: {
          kind: 'connection',
          connectionId: connection.id,
          appName: connection.clientName,
          scopes: connection.scopes.filter(isScope),
          userId: connection.userId,
          workspaceId: connection.organizationId,
        },
      };
    } catch (error) {
      if (!(error instanceof OAuthError)) throw error;
      const answer = bearerAuthChallengeResponse(error, { resourceMetadataUrl });
      return { challenge: answer.headers.get('www-authenticate') ?? `Bearer resource_metadata="${resourceMetadataUrl}"`, description: error.message };
    }
  };
}

/** The challenge for a request without credentials: where to find how to get a token (RFC 9728 §5.1). */
export const noCredentialsChallenge = (base: string, resource: Resource): string =>
  `Bearer resource_metadata="${metadataUrlOf(resourcesOf(base)[resource])}"`;
