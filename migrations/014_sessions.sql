-- People sign in to the dashboard: passwords, server-side sessions, one-time links and invitations.

-- scrypt, in the self-describing form src/passwords.ts writes; null until the person sets one.
ALTER TABLE users ADD COLUMN password_hash text;

-- The cookie holds a random id; only its SHA-256 is kept, so a copy of this table signs nobody in.
CREATE TABLE sessions (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  token_hash bytea NOT NULL UNIQUE,
  user_id uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  organization_id uuid NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  -- Sent back by the page in x-csrf-token on every state-changing request; useless without the cookie.
  csrf_token text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  last_seen_at timestamptz NOT NULL DEFAULT now(),
  expires_at timestamptz NOT NULL
);
CREATE INDEX sessions_member_idx ON sessions (organization_id, user_id);
CREATE INDEX sessions_user_idx ON sessions (user_id);
-- The sweep of ended sessions.
CREATE INDEX sessions_expiry_idx ON sessions (expires_at);

-- Signing in looks up a user's memberships.
CREATE INDEX memberships_user_idx ON memberships (user_id);

-- A one-time link: the first-run setup of a password (purpose 'setup') or an invitation to join (purpose 'invite').
CREATE TABLE account_links (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  purpose text NOT NULL CHECK (purpose IN ('setup', 'invite')),
  token_hash bytea NOT NULL UNIQUE,
  organization_id uuid NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  -- setup: whose password; invite: null (the person may not exist yet).
  user_id uuid REFERENCES users (id) ON DELETE CASCADE,
  email text NOT NULL,
  created_by uuid REFERENCES users (id) ON DELETE SET NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  expires_at timestamptz NOT NULL,
  used_at timestamptz,
  revoked_at timestamptz
);
CREATE INDEX account_links_organization_idx ON account_links (organization_id, purpose, created_at);

-- Sign-in attempts not (yet) known to be right, per account and address pair, per address and per account, counted
-- over a sliding window (src/sessions.ts). An attempt is written before its password is checked, so that a burst of
-- concurrent attempts is counted whole; a right one deletes its own rows.
CREATE TABLE sign_in_failures (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  attempt uuid NOT NULL,
  scope text NOT NULL,
  failed_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX sign_in_failures_scope_idx ON sign_in_failures (scope, failed_at);
CREATE INDEX sign_in_failures_time_idx ON sign_in_failures (failed_at);
CREATE INDEX sign_in_failures_attempt_idx ON sign_in_failures (attempt);

-- Written by the usage recorder's flush, for the Developer API page.
ALTER TABLE api_keys ADD COLUMN last_used_at timestamptz;
