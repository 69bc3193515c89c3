-- Rate limits (src/registry/rate-limit.ts): one row per workspace and bucket, the current one-minute window and
-- the requests every API process has admitted in it. Processes count locally and add their counts here in
-- batches; a window opens at the first request after the last one ended, so every process agrees on it.
CREATE TABLE rate_limit_windows (
  organization_id uuid NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  bucket text NOT NULL CHECK (bucket IN ('programmatic', 'browser')),
  started_at timestamptz NOT NULL,
  count integer NOT NULL CHECK (count >= 0),
  PRIMARY KEY (organization_id, bucket)
);
