-- Idempotency-Key: one row per key and workspace, claimed before the work runs and keeping a success's answer
-- for 24 hours (src/registry/idempotency.ts). `token` tells a claim from a later one that took an expired key over.
CREATE TABLE idempotency_keys (
  organization_id uuid NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  key text NOT NULL,
  token uuid NOT NULL DEFAULT gen_random_uuid(),
  fingerprint bytea NOT NULL,
  status text NOT NULL DEFAULT 'running' CHECK (status IN ('running', 'done')),
  response_status integer,
  response_body jsonb,
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (organization_id, key)
);
CREATE INDEX idempotency_keys_expiry_idx ON idempotency_keys (organization_id, created_at);
