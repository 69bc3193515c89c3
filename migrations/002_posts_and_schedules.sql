-- Plans and quotas, workspace posting windows, integrations (channels), posts, their tags and attachments,
-- and schedules (one per post and target channel; thread parts are schedules too).

CREATE EXTENSION IF NOT EXISTS pg_trgm;

-- What a plan allows. The rate limit and the storage allowance are enforced by the limits and media features.
CREATE TABLE plans (
  name text PRIMARY KEY CHECK (name ~ '^[a-z0-9][a-z0-9_-]*$'),
  rate_limit_per_minute integer NOT NULL CHECK (rate_limit_per_minute > 0),
  storage_bytes bigint NOT NULL CHECK (storage_bytes >= 0),
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now()
);

-- Posts a month per platform; a platform without a row is not included in the plan (a quota of 0).
CREATE TABLE plan_quotas (
  plan text NOT NULL REFERENCES plans (name) ON UPDATE CASCADE ON DELETE CASCADE,
  platform text NOT NULL CHECK (platform IN ('BLUESKY', 'LINKEDIN')),
  monthly_posts integer NOT NULL CHECK (monthly_posts >= 0),
  PRIMARY KEY (plan, platform)
);

-- LinkedIn is metered separately and more tightly than Bluesky on every plan.
INSERT INTO plans (name, rate_limit_per_minute, storage_bytes) VALUES
  ('free', 60, 1073741824),
  ('pro', 300, 26843545600),
  ('business', 1200, 268435456000);
INSERT INTO plan_quotas (plan, platform, monthly_posts) VALUES
  ('free', 'BLUESKY', 100), ('free', 'LINKEDIN', 20),
  ('pro', 'BLUESKY', 2000), ('pro', 'LINKEDIN', 300),
  ('business', 'BLUESKY', 20000), ('business', 'LINKEDIN', 3000);

ALTER TABLE organizations
  ADD FOREIGN KEY (plan) REFERENCES plans (name) ON UPDATE CASCADE,
  ADD COLUMN time_zone text NOT NULL DEFAULT 'UTC',
  -- Local wall-clock slots for NEXT_WINDOW: groups of ISO weekdays (1 = Monday) and HH:MM times.
  ADD COLUMN posting_windows jsonb NOT NULL
    DEFAULT '[{"weekdays": [1, 2, 3, 4, 5], "times": ["09:00", "12:00", "17:00"]}]'
    CHECK (jsonb_typeof(posting_windows) = 'array');

-- Live schedules counted per workspace, platform and UTC calendar month. Spending is one conditional UPSERT
-- (see operations/posts/quota.ts): the row lock it takes makes concurrent creates queue, so none overruns.
CREATE TABLE post_quota_usage (
  organization_id uuid NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  platform text NOT NULL CHECK (platform IN ('BLUESKY', 'LINKEDIN')),
  month date NOT NULL CHECK (extract(day FROM month) = 1),
  used integer NOT NULL CHECK (used >= 0),
  PRIMARY KEY (organization_id, platform, month)
);

-- A connected channel. Credentials are stored encrypted; account_id is the platform's own id of the account
-- (a Bluesky DID, a LinkedIn person or organization URN). Both are filled by the connect flows.
CREATE TABLE integrations (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  organization_id uuid NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  platform text NOT NULL CHECK (platform IN ('BLUESKY', 'LINKEDIN')),
  name text NOT NULL,
  image text,
  -- MISSING: no credentials stored yet (a channel made by the admin command); publishing to it fails.
  token_status text NOT NULL DEFAULT 'MISSING' CHECK (token_status IN ('VALID', 'EXPIRED', 'REVOKED', 'MISSING')),
  connect_status text NOT NULL DEFAULT 'ACTIVE' CHECK (connect_status IN ('PENDING_SELECTION', 'ACTIVE')),
  connection_error_code text,
  connection_error text,
  last_validated_at timestamptz,
  expires_at timestamptz,
  auto_refresh_unavailable boolean NOT NULL DEFAULT false,
  credentials bytea,
  account_id text,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  -- The target of the composite foreign keys that keep a schedule inside its integration's workspace.
  UNIQUE (id, organization_id),
  UNIQUE (organization_id, platform, account_id)
);

ALTER TABLE tags ADD UNIQUE (id, organization_id);

CREATE TABLE posts (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  organization_id uuid NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  user_id uuid REFERENCES users (id) ON DELETE SET NULL,
  content text NOT NULL,
  origin_source_post_id uuid REFERENCES posts (id) ON DELETE SET NULL,
  -- Approval and evergreen recycling do not exist yet; their columns keep their place.
  is_evergreen boolean NOT NULL DEFAULT false,
  last_recycled_at timestamptz,
  approval_status text CHECK (approval_status IN ('pending_review', 'approved', 'rejected')),
  approval_requested_at timestamptz,
  approval_completed_at timestamptz,
  required_approver_ids uuid[] NOT NULL DEFAULT '{}',
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  UNIQUE (id, organization_id)
);
-- GET /posts: newest first, and case-insensitive search of the content (ILIKE is served by the trigram index).
CREATE INDEX posts_organization_created_idx ON posts (organization_id, created_at DESC, id DESC);
CREATE INDEX posts_content_trgm_idx ON posts USING gin (content gin_trgm_ops);

CREATE TABLE post_tags (
  post_id uuid NOT NULL,
  tag_id uuid NOT NULL,
  organization_id uuid NOT NULL,
  PRIMARY KEY (post_id, tag_id),
  FOREIGN KEY (post_id, organization_id) REFERENCES posts (id, organization_id) ON DELETE CASCADE,
  FOREIGN KEY (tag_id, organization_id) REFERENCES tags (id, organization_id) ON DELETE CASCADE
);
CREATE INDEX post_tags_tag_idx ON post_tags (tag_id);

-- Media on a post, in order. The media table arrives with the uploads feature, which adds the foreign keys of
-- media_id and thumbnail_media_id; until then createPost accepts no media, so this table stays empty.
CREATE TABLE attachments (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  post_id uuid NOT NULL,
  organization_id uuid NOT NULL,
  media_id uuid NOT NULL,
  "order" integer NOT NULL CHECK ("order" >= 0),
  alt_text text,
  thumbnail_media_id uuid,
  thumbnail_source text,
  thumbnail_timestamp_ms integer,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  UNIQUE (post_id, "order"),
  FOREIGN KEY (post_id, organization_id) REFERENCES posts (id, organization_id) ON DELETE CASCADE
);

CREATE TABLE schedules (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  organization_id uuid NOT NULL,
  post_id uuid NOT NULL,
  integration_id uuid NOT NULL,
  user_id uuid REFERENCES users (id) ON DELETE SET NULL,
  -- Moves between statuses are compare-and-set UPDATEs (... WHERE status = <expected>).
  status text NOT NULL CHECK (status IN ('DRAFT', 'SCHEDULED', 'PUBLISHING', 'PUBLISHED', 'FAILED')),
  -- Null only for a draft without a date; a draft with one is held on the calendar.
  scheduled_at timestamptz CHECK (scheduled_at IS NOT NULL OR status = 'DRAFT'),
  published_at timestamptz,
  -- What this target publishes: the post's content, an override for this integration, or a thread part.
  scheduled_content text NOT NULL,
  first_comment text,
  settings jsonb NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(settings) = 'object'),
  -- A thread part points at its thread's first schedule (order 0), which it is published as a reply under.
  thread_root_schedule_id uuid REFERENCES schedules (id) ON DELETE CASCADE,
  thread_order integer NOT NULL DEFAULT 0 CHECK (thread_order >= 0),
  platform_post_id text,
  release_url text,
  platform_deleted_at timestamptz,
  failure_reason text,
  failure_detail jsonb,
  retry_count integer NOT NULL DEFAULT 0,
  last_attempt timestamptz,
  origin_recycle_event_id uuid,
  approval_status text CHECK (approval_status IN ('pending_review', 'approved', 'rejected')),
  approval_requested_at timestamptz,
  approval_completed_at timestamptz,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  CHECK ((thread_root_schedule_id IS NULL) = (thread_order = 0)),
  FOREIGN KEY (post_id, organization_id) REFERENCES posts (id, organization_id) ON DELETE CASCADE,
  FOREIGN KEY (integration_id, organization_id) REFERENCES integrations (id, organization_id) ON DELETE CASCADE
);
-- The calendar (GET /schedules) pages on (scheduled_at, id) within a workspace: a page costs the same anywhere.
CREATE INDEX schedules_calendar_idx ON schedules (organization_id, scheduled_at, id);
CREATE INDEX schedules_post_idx ON schedules (post_id);
CREATE INDEX schedules_thread_idx ON schedules (thread_root_schedule_id) WHERE thread_root_schedule_id IS NOT NULL;
-- NEXT_WINDOW looks up the live thread roots of an integration at a slot.
CREATE INDEX schedules_live_slot_idx ON schedules (integration_id, scheduled_at)
  WHERE status IN ('SCHEDULED', 'PUBLISHING', 'PUBLISHED') AND thread_root_schedule_id IS NULL;
-- Integration.hasFailedSchedules.
CREATE INDEX schedules_failed_idx ON schedules (integration_id) WHERE status = 'FAILED';
