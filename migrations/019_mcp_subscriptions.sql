-- MCP resource subscriptions (src/mcp/subscriptions.ts): what each MCP session subscribed to, so that any API process
-- can take a subscribe and the one holding the session's GET /mcp stream reads them. `holder` is the key (or member)
-- that subscribed: a session id used with another key reaches none of them.
CREATE TABLE mcp_subscriptions (
  session_id text NOT NULL,
  uri text NOT NULL,
  organization_id uuid NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  holder text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (session_id, uri)
);
CREATE INDEX mcp_subscriptions_created_idx ON mcp_subscriptions (created_at);
