-- Mastodon: any instance (and Mastodon-compatible servers). The platform lists take it, plans meter it as Bluesky,
-- the posts list's facets give it the third bit under each status (015_post_facets.sql: existing facets keep theirs).
ALTER TABLE integrations DROP CONSTRAINT integrations_platform_check,
  ADD CONSTRAINT integrations_platform_check CHECK (platform IN ('BLUESKY', 'LINKEDIN', 'MASTODON'));
ALTER TABLE connect_states DROP CONSTRAINT connect_states_platform_check,
  ADD CONSTRAINT connect_states_platform_check CHECK (platform IN ('BLUESKY', 'LINKEDIN', 'MASTODON'));
ALTER TABLE plan_quotas DROP CONSTRAINT plan_quotas_platform_check,
  ADD CONSTRAINT plan_quotas_platform_check CHECK (platform IN ('BLUESKY', 'LINKEDIN', 'MASTODON'));
ALTER TABLE post_quota_usage DROP CONSTRAINT post_quota_usage_platform_check,
  ADD CONSTRAINT post_quota_usage_platform_check CHECK (platform IN ('BLUESKY', 'LINKEDIN', 'MASTODON'));

CREATE OR REPLACE FUNCTION schedule_facet(status text, platform text) RETURNS bigint LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT 1::bigint << ((array_position(ARRAY['DRAFT', 'SCHEDULED', 'PUBLISHING', 'PUBLISHED', 'FAILED'], status) - 1) * 8
    + array_position(ARRAY['BLUESKY', 'LINKEDIN', 'MASTODON'], platform) - 1)
$$;

INSERT INTO plan_quotas (plan, platform, monthly_posts)
  SELECT plan, 'MASTODON', monthly_posts FROM plan_quotas WHERE platform = 'BLUESKY' ON CONFLICT DO NOTHING;

-- An instance as this service knows it: where its API answers, its handles' domain, and its limits as it reports them
-- (GET /api/v2/instance, read at connect time and refreshed; src/platforms/rules.ts InstanceLimits).
CREATE TABLE mastodon_instances (
  host text PRIMARY KEY,                 -- normalized: lowercase, punycode, ':port' unless the default
  api_base text NOT NULL,                -- the origin that answered
  domain text NOT NULL,                  -- handles are @user@domain
  software text,
  version text,
  limits jsonb NOT NULL,
  oauth jsonb NOT NULL,                  -- its endpoints, whether it offers PKCE (S256), its scopes
  fetched_at timestamptz NOT NULL,
  refresh_error text
);

-- The app this service registered on an instance (POST /api/v1/apps), per callback URL and scopes; registered again when
-- the instance forgot it. Secrets sealed with ENCRYPTION_KEY, as every credential.
CREATE TABLE mastodon_apps (
  host text NOT NULL REFERENCES mastodon_instances (host) ON DELETE CASCADE,
  redirect_uri text NOT NULL,
  scopes text NOT NULL,
  client_id text NOT NULL,
  client_secret bytea NOT NULL,
  app_token bytea,                       -- a client-credentials token: keeps the app alive, and tells whether it is
  created_at timestamptz NOT NULL DEFAULT now(),
  verified_at timestamptz,
  PRIMARY KEY (host, redirect_uri, scopes)
);

ALTER TABLE integrations
  ADD COLUMN handle text,                -- @user@domain on Mastodon; null elsewhere
  ADD COLUMN instance_host text REFERENCES mastodon_instances (host);
CREATE INDEX integrations_instance_host_idx ON integrations (instance_host) WHERE instance_host IS NOT NULL;

-- Deleting a Mastodon status leaves its replies: the first comment's own id, to delete it with its post.
ALTER TABLE schedules ADD COLUMN first_comment_post_id text;
