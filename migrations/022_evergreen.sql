-- Evergreen recycling (src/worker/recycle.ts): a workspace's recycle rules pick evergreen posts that have been published
-- and schedule them again. A run is one rule in one period (its local day or ISO week): recycle_runs makes it happen
-- once, however many jobs or workers try. Each post a run picks gets a recycle event: the schedules it made, or why
-- it made none (quota, storage, LinkedIn's refusal of repeated text...), so nothing is skipped silently.
CREATE TABLE recycle_rules (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  organization_id uuid NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  name text NOT NULL,
  -- Channels as ids: a channel deleted later drops out of the rule when read (a disconnected one stays, and is skipped).
  integration_ids uuid[] NOT NULL,
  -- Only posts with one of these tags; none: every evergreen post.
  tag_ids uuid[] NOT NULL DEFAULT '{}',
  frequency text NOT NULL CHECK (frequency IN ('DAILY', 'WEEKLY')),
  posts_per_run integer NOT NULL CHECK (posts_per_run BETWEEN 1 AND 50),
  min_interval_days integer NOT NULL CHECK (min_interval_days BETWEEN 1 AND 3650),
  max_runs integer CHECK (max_runs > 0),
  -- Null: the workspace's posting windows.
  posting_windows jsonb CHECK (posting_windows IS NULL OR jsonb_typeof(posting_windows) = 'array'),
  -- Lines appended to a LinkedIn text in turn (LinkedIn refuses identical text); none: LinkedIn channels are skipped.
  linkedin_variations text[] NOT NULL DEFAULT '{}',
  enabled boolean NOT NULL DEFAULT true,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  UNIQUE (id, organization_id)
);
CREATE INDEX recycle_rules_organization_idx ON recycle_rules (organization_id, created_at);

-- The period a rule runs in at `at`: the local date (DAILY) or ISO week (WEEKLY) in the workspace's time zone.
CREATE FUNCTION recycle_period(frequency text, time_zone text, at timestamptz) RETURNS text
LANGUAGE sql STABLE AS $$
  SELECT to_char(at AT TIME ZONE time_zone, CASE frequency WHEN 'DAILY' THEN 'YYYY-MM-DD' ELSE 'IYYY-"W"IW' END)
$$;

CREATE TABLE recycle_runs (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  rule_id uuid NOT NULL REFERENCES recycle_rules (id) ON DELETE CASCADE,
  period text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  UNIQUE (rule_id, period)
);

CREATE TABLE recycle_events (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  organization_id uuid NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  rule_id uuid REFERENCES recycle_rules (id) ON DELETE SET NULL,
  run_id uuid REFERENCES recycle_runs (id) ON DELETE SET NULL,
  -- The run's period, kept when the rule (and so its runs) is deleted.
  period text NOT NULL,
  post_id uuid REFERENCES posts (id) ON DELETE SET NULL,
  status text NOT NULL CHECK (status IN ('RECYCLED', 'SKIPPED')),
  -- The root schedules made (one per channel; thread parts follow their root).
  schedule_ids uuid[] NOT NULL DEFAULT '{}',
  -- Channels not recycled to, each [{ integrationId, code, reason }].
  skipped jsonb NOT NULL DEFAULT '[]' CHECK (jsonb_typeof(skipped) = 'array'),
  -- The LinkedIn variation appended (the first unused one: a later recycle takes another).
  linkedin_variation text,
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX recycle_events_organization_idx ON recycle_events (organization_id, created_at DESC, id DESC);
CREATE INDEX recycle_events_rule_post_idx ON recycle_events (rule_id, post_id) WHERE status = 'RECYCLED';
CREATE INDEX recycle_events_post_idx ON recycle_events (post_id);

ALTER TABLE schedules ADD FOREIGN KEY (origin_recycle_event_id) REFERENCES recycle_events (id) ON DELETE SET NULL;
CREATE INDEX schedules_recycle_event_idx ON schedules (origin_recycle_event_id) WHERE origin_recycle_event_id IS NOT NULL;

-- When a rule last picked the post (recycled or skipped): runs take the least recently picked first, so a post that
-- cannot be recycled does not hold the others back.
ALTER TABLE posts ADD COLUMN recycle_picked_at timestamptz;
CREATE INDEX posts_evergreen_idx ON posts (organization_id, recycle_picked_at NULLS FIRST, created_at, id) WHERE is_evergreen;
