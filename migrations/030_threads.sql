-- Threads (Meta's Threads API). The platform lists take it, plans meter it as Bluesky, the posts list's facets give it
-- the fourth bit under each status (015_post_facets.sql: existing facets keep theirs).
ALTER TABLE integrations DROP CONSTRAINT integrations_platform_check,
  ADD CONSTRAINT integrations_platform_check CHECK (platform IN ('BLUESKY', 'LINKEDIN', 'MASTODON', 'THREADS'));
ALTER TABLE connect_states DROP CONSTRAINT connect_states_platform_check,
  ADD CONSTRAINT connect_states_platform_check CHECK (platform IN ('BLUESKY', 'LINKEDIN', 'MASTODON', 'THREADS'));
ALTER TABLE plan_quotas DROP CONSTRAINT plan_quotas_platform_check,
  ADD CONSTRAINT plan_quotas_platform_check CHECK (platform IN ('BLUESKY', 'LINKEDIN', 'MASTODON', 'THREADS'));
ALTER TABLE post_quota_usage DROP CONSTRAINT post_quota_usage_platform_check,
  ADD CONSTRAINT post_quota_usage_platform_check CHECK (platform IN ('BLUESKY', 'LINKEDIN', 'MASTODON', 'THREADS'));

CREATE OR REPLACE FUNCTION schedule_facet(status text, platform text) RETURNS bigint LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT 1::bigint << ((array_position(ARRAY['DRAFT', 'SCHEDULED', 'PUBLISHING', 'PUBLISHED', 'FAILED'], status) - 1) * 8
    + array_position(ARRAY['BLUESKY', 'LINKEDIN', 'MASTODON', 'THREADS'], platform) - 1)
$$;

INSERT INTO plan_quotas (plan, platform, monthly_posts)
  SELECT plan, 'THREADS', monthly_posts FROM plan_quotas WHERE platform = 'BLUESKY' ON CONFLICT DO NOTHING;

-- What a marked send is known by on the platform before its answer (a Threads media container, made before it is
-- published): an attempt after a lost answer asks the platform about it first (src/worker/publish-schedule.ts).
ALTER TABLE schedules ADD COLUMN post_sent_ref text, ADD COLUMN first_comment_sent_ref text;
