-- The states of the connect pages (src/connect.ts): a state is signed and names its nonce; the row makes it
-- single-use (used_at is set in the transaction that connects the account) and bound to its workspace and user.
CREATE TABLE connect_states (
  nonce uuid PRIMARY KEY,
  organization_id uuid NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  user_id uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  platform text NOT NULL CHECK (platform IN ('BLUESKY', 'LINKEDIN')),
  expires_at timestamptz NOT NULL,
  used_at timestamptz,
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX connect_states_expires_idx ON connect_states (expires_at);
