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

-- Failed sign-ins, per account ('email:…') and per address ('address:…'), counted over a sliding window.
CREATE TABLE sign_in_failures (
  scope text NOT NULL,
  failed_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX sign_in_failures_scope_idx ON sign_in_failures (scope, failed_at);

-- Written by the usage recorder's flush, for the Developer API page.
ALTER TABLE api_keys ADD COLUMN last_used_at timestamptz;
