-- Webhooks (docs/events.md#webhooks): endpoints per workspace, one delivery per event and endpoint that wants it,
-- queued by the event's own transaction, and the attempts of each delivery (the delivery log).
CREATE TABLE webhook_endpoints (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  organization_id uuid NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  url text NOT NULL,
  description text NOT NULL DEFAULT '',
  -- The event types sent; empty: every type.
  event_types text[] NOT NULL DEFAULT '{}',
  -- The signing secrets (`whsec_…`), sealed with ENCRYPTION_KEY; the previous one signs too until it expires.
  secret bytea NOT NULL,
  previous_secret bytea,
  previous_secret_expires_at timestamptz,
  enabled boolean NOT NULL DEFAULT true,
  disabled_reason text,
  -- Since when every delivery has failed; null after a success.
  failing_since timestamptz,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX webhook_endpoints_org_idx ON webhook_endpoints (organization_id) WHERE enabled;

CREATE TABLE webhook_deliveries (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  organization_id uuid NOT NULL,
  endpoint_id uuid NOT NULL REFERENCES webhook_endpoints (id) ON DELETE CASCADE,
  event_seq bigint NOT NULL REFERENCES events (seq) ON DELETE CASCADE,
  -- Copied from the event, so that deliveries about one resource are sent to an endpoint in the events' order.
  event_tx xid8 NOT NULL,
  resource_id uuid NOT NULL,
  status text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'delivered', 'failed')),
  attempts integer NOT NULL DEFAULT 0,
  next_attempt_at timestamptz NOT NULL DEFAULT now(),
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX webhook_deliveries_endpoint_idx ON webhook_deliveries (endpoint_id, created_at DESC, id DESC);
CREATE INDEX webhook_deliveries_order_idx ON webhook_deliveries (endpoint_id, resource_id, event_tx, event_seq) WHERE status = 'pending';
CREATE INDEX webhook_deliveries_event_idx ON webhook_deliveries (event_seq);

CREATE TABLE webhook_attempts (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  delivery_id uuid NOT NULL REFERENCES webhook_deliveries (id) ON DELETE CASCADE,
  attempt integer NOT NULL,
  url text NOT NULL,
  started_at timestamptz NOT NULL,
  duration_ms integer NOT NULL,
  -- The receiver's answer, or why there was none (refused, timed out, not a public address).
  response_status integer,
  response_excerpt text,
  error text
);
CREATE INDEX webhook_attempts_delivery_idx ON webhook_attempts (delivery_id, attempt);

-- Each statement that writes events queues their deliveries in the same transaction: a rolled-back change queues none.
CREATE FUNCTION queue_webhook_deliveries() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  delivery uuid;
BEGIN
  FOR delivery IN
    INSERT INTO webhook_deliveries (organization_id, endpoint_id, event_seq, event_tx, resource_id)
    SELECT e.organization_id, w.id, e.seq, e.tx, e.resource_id
    FROM written e JOIN webhook_endpoints w ON w.organization_id = e.organization_id AND w.enabled
      AND (w.event_types = '{}' OR e.type = ANY (w.event_types))
    ORDER BY e.tx, e.seq
    RETURNING id
  LOOP
    PERFORM graphile_worker.add_job('deliver-webhook', json_build_object('deliveryId', delivery), job_key := 'deliver-webhook:' || delivery);
  END LOOP;
  RETURN NULL;
END $$;

CREATE TRIGGER queue_webhook_deliveries AFTER INSERT ON events REFERENCING NEW TABLE AS written
  FOR EACH STATEMENT EXECUTE FUNCTION queue_webhook_deliveries();
