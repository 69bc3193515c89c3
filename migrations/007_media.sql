-- Uploads (each one reserves its declared size of the plan's storage allowance until it is completed, expires or is
-- deleted) and the media they become, which posts attach.
CREATE TABLE uploads (
  id uuid PRIMARY KEY,
  organization_id uuid NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  user_id uuid REFERENCES users (id) ON DELETE SET NULL,
  scenario_id text NOT NULL,
  file_name text NOT NULL,
  declared_type text NOT NULL,
  -- Bytes: the size declared at initiate, which the signed URL enforces and complete verifies.
  size bigint NOT NULL CHECK (size > 0),
  -- The SHA-256 of the bytes, base64 (as S3's x-amz-checksum-sha256).
  checksum text NOT NULL,
  object_key text NOT NULL UNIQUE,
  -- pending: reserved until expires_at (the signed URL's expiry); completed: counted for good.
  status text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'completed')),
  expires_at timestamptz NOT NULL,
  completed_at timestamptz,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now()
);
-- The allowance check sums a workspace's completed and unexpired pending uploads.
CREATE INDEX uploads_usage_idx ON uploads (organization_id, status, expires_at);

CREATE TABLE media (
  id uuid PRIMARY KEY,
  organization_id uuid NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  upload_id uuid NOT NULL UNIQUE REFERENCES uploads (id) ON DELETE CASCADE,
  type text NOT NULL CHECK (type IN ('IMAGE')),
  -- Found from the bytes, not the type the caller declared.
  mime_type text NOT NULL,
  object_key text NOT NULL,
  size bigint NOT NULL,
  width integer,
  height integer,
  -- { "1:1": { objectKey, width, height, sizeBytes }, ... }; URLs are made when read, from the store's public URL.
  variants jsonb NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(variants) = 'object'),
  variants_status text NOT NULL DEFAULT 'pending' CHECK (variants_status IN ('pending', 'ready', 'failed')),
  variants_error text,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  UNIQUE (id, organization_id)
);

-- Attachments were created before media existed (002); their media must be the same workspace's.
ALTER TABLE attachments ADD FOREIGN KEY (media_id, organization_id) REFERENCES media (id, organization_id) ON DELETE CASCADE;
ALTER TABLE attachments ADD FOREIGN KEY (thumbnail_media_id) REFERENCES media (id) ON DELETE SET NULL;
CREATE INDEX attachments_media_idx ON attachments (media_id);
