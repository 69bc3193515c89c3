import { buildOAuthProtectedResourceMetadata, getOAuthProtectedResourceMetadataUrl } from '@modelcontextprotocol/server';
import { SCOPE_NAMES } from './scopes.js';

/** The two protected resources, each its own token audience (RFC 8707): a token for one is refused by the other. */
export function resourcesOf(base: string): { mcp: string; api: string } {
  return { mcp: `${base}/mcp`, api: `${base}/api/v1` };
}

export type Resource = keyof ReturnType<typeof resourcesOf>;

/**
 * Whether OAuth is offered at this base URL: HTTPS, as the specification requires, or a loopback address (a person's
 * own machine, the MCP Inspector, the tests). Behind plain http on another host only API keys work, as before.
 */
export function oauthOffered(base: string): boolean {
  const url = URL.parse(base);
  if (!url) return false;
  return url.protocol === 'https:' || ['127.0.0.1', '[::1]', 'localhost'].includes(url.hostname);
}

/** Where a resource's metadata is (RFC 9728 §3: the well-known name inserted before the resource's path). */
export const metadataUrlOf = (resourceUrl: string): string => getOAuthProtectedResourceMetadataUrl(new URL(resourceUrl));

/** The protected-resource metadata of `resourceUrl`, whose authorization server is the service itself at `base`. */
export function resourceMetadata(base: string, resourceUrl: string) {
  return buildOAuthProtectedResourceMetadata({
    // The builder reads the issuer from this (and checks it is https outside loopback); clients read the rest at the issuer.
    oauthMetadata: { issuer: base, authorization_endpoint: `${base}/oauth/authorize`, token_endpoint: `${base}/oauth/token`, response_types_supported: ['code'] },
    resourceServerUrl: new URL(resourceUrl),
    scopesSupported: SCOPE_NAMES,
    resourceName: 'Postwise',
  });
}
