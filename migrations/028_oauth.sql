-- MCP authorization (OAuth 2.1): Postwise is its own authorization server (src/oauth, oidc-provider), beside API keys.

-- Clients that registered themselves (RFC 7591), public only: no secret is ever issued. Clients named by a metadata
-- document (an https client_id) are fetched and cached in memory, never stored; the command line's client is in code.
-- A registration no connection uses is forgotten after a day (src/oauth/adapter.ts hides it, the sweep deletes it).
CREATE TABLE oauth_clients (
  client_id text PRIMARY KEY,
  metadata jsonb NOT NULL,
  registered_from text NOT NULL,            -- the caller's address, for the registration limit
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX oauth_clients_registered_from_idx ON oauth_clients (registered_from, created_at);
CREATE INDEX oauth_clients_created_idx ON oauth_clients (created_at);

-- A connected app: a member's consent, in a workspace, to a client reaching one resource (/mcp or /api/v1). It is
-- oidc-provider's Grant (its id is the grantId every code and token of it carries). Disconnecting deletes the row,
-- and with it every code and token (cascade); so does the member leaving the workspace.
CREATE TABLE oauth_connections (
  id text PRIMARY KEY,
  organization_id uuid NOT NULL,
  user_id uuid NOT NULL,
  client_id text NOT NULL,                  -- a registered id, a metadata document's URL, or the command line's
  client_name text NOT NULL,                -- as the consent page showed it
  logo_uri text,
  redirect_host text NOT NULL,
  resource text NOT NULL,
  scopes text[] NOT NULL,
  posts_need_approval boolean NOT NULL DEFAULT true,  -- the key rule of migration 021, per connection, on by default
  grant_payload jsonb,                      -- the Grant as oidc-provider saves it
  created_at timestamptz NOT NULL DEFAULT now(),
  last_used_at timestamptz,
  expires_at timestamptz NOT NULL,
  FOREIGN KEY (organization_id, user_id) REFERENCES memberships (organization_id, user_id) ON DELETE CASCADE
);
CREATE INDEX oauth_connections_member_idx ON oauth_connections (organization_id, user_id, created_at);
CREATE INDEX oauth_connections_client_idx ON oauth_connections (organization_id, client_id);

-- Everything else oidc-provider keeps (access tokens, codes, refresh tokens, its sessions and interactions), by the
-- SHA-256 of the value someone presents: neither a copy of this table nor a log line holds a usable one.
CREATE TABLE oauth_artifacts (
  id_hash bytea PRIMARY KEY,
  kind text NOT NULL CHECK (kind IN ('AccessToken', 'AuthorizationCode', 'RefreshToken', 'Session', 'Interaction')),
  connection_id text REFERENCES oauth_connections (id) ON DELETE CASCADE,
  session_uid text,                         -- Session only (findByUid)
  payload jsonb NOT NULL,                   -- without its own value (jti)
  expires_at timestamptz NOT NULL,
  consumed_at timestamptz
);
CREATE INDEX oauth_artifacts_connection_idx ON oauth_artifacts (connection_id) WHERE connection_id IS NOT NULL;
CREATE INDEX oauth_artifacts_session_uid_idx ON oauth_artifacts (session_uid) WHERE session_uid IS NOT NULL;
CREATE INDEX oauth_artifacts_expiry_idx ON oauth_artifacts (expires_at);

-- The provider's keys: its cookie-signing secret and its JSON Web Key Set, sealed with the encryption key. They
-- sign no token (access tokens are opaque, and no ID tokens are issued); they keep the library's development keys out.
CREATE TABLE oauth_keys (
  id smallint PRIMARY KEY CHECK (id = 1),
  sealed text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
);

-- Who wrote a post: an app connected by OAuth, besides a key or a member (migration 027).
ALTER TABLE posts DROP CONSTRAINT posts_created_by_kind_check;
ALTER TABLE posts
  ADD CONSTRAINT posts_created_by_kind_check CHECK (created_by_kind IN ('key', 'member', 'app')),
  ADD COLUMN oauth_connection_id text REFERENCES oauth_connections (id) ON DELETE SET NULL,
  ADD COLUMN app_name text,
  ADD CONSTRAINT posts_app_only_for_apps CHECK (created_by_kind = 'app' OR (oauth_connection_id IS NULL AND app_name IS NULL));
CREATE INDEX posts_oauth_connection_idx ON posts (oauth_connection_id) WHERE oauth_connection_id IS NOT NULL;

-- A connected app's calls are counted as a key's are, against the connection.
ALTER TABLE usage_events ADD COLUMN oauth_connection_id text REFERENCES oauth_connections (id) ON DELETE SET NULL;
CREATE INDEX usage_events_oauth_connection_idx ON usage_events (oauth_connection_id) WHERE oauth_connection_id IS NOT NULL;
