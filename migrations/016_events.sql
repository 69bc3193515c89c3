-- The outbox of events (operations/events/event.ts): one row per change that matters, written in the transaction of
-- the change, so a change that rolls back leaves none and a committed one always has its row. Read as the feed
-- (GET /events) and, later, delivered to webhooks.
--
-- Order: by (tx, seq), the writing transaction's id and then the row's place in it. The feed serves only rows whose
-- transaction is older than every transaction still running (tx < pg_snapshot_xmin(pg_current_snapshot())): such a
-- transaction has ended, so no row can appear later before a row already served, however the transactions' commits
-- were ordered. A row's id (`evt_<tx>_<seq>`) is its position, so the last id a reader saw is where it resumes.
CREATE TABLE events (
  seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  tx xid8 NOT NULL DEFAULT pg_current_xact_id(),
  organization_id uuid NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  type text NOT NULL,
  -- The resource the event is about (a post, schedule, integration or upload), and for a schedule, its post.
  resource_id uuid NOT NULL,
  post_id uuid,
  -- The resource as the API showed it in that transaction: stored as written, served as stored.
  data json NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX events_feed_idx ON events (organization_id, tx, seq);
CREATE INDEX events_resource_idx ON events (organization_id, resource_id, tx, seq);
CREATE INDEX events_post_idx ON events (organization_id, post_id, tx, seq) WHERE post_id IS NOT NULL;
-- For the retention sweep (prune-events): rows arrive in created_at order, so a BRIN index finds the old ones at
-- almost no cost to each insert.
CREATE INDEX events_created_idx ON events USING brin (created_at);
