-- Exact totals for the posts list without visiting every post (operations/posts/list.ts). The `status` and
-- `platform` filters select posts that have a schedule in one of the statuses on one of the platforms; which pairs
-- a post has is its `facets`, one bit per (status, platform). The list's total for those filters is then a sum over
-- post_facet_counts: how many posts of a workspace have each set of facets, kept as deltas.
--
-- Triggers keep both, so that every writer of schedules (operations, the publishing engine, the admin command, a
-- person with psql) keeps them exact:
--   * a post gets its post_facets row (no facets) when it is made, and loses it when it is deleted;
--   * a new schedule adds its pair to its post's facets at commit (a deferred trigger); any other change to a
--     schedule recomputes them at commit, under the post_facets row's lock, reading the schedules afresh: two
--     transactions changing one post's schedules take turns, and the second sees the first's. The lock is taken
--     last, at commit, after every lock the transaction's own statements took, so it cannot close a cycle with them
--     (only two transactions that each change schedules of the same several posts, in opposite orders, can deadlock
--     at commit, and Postgres then aborts one);
--   * each change of a post_facets row appends its delta (-1 for the old set, +1 for the new) to post_facet_counts:
--     appends take no lock, so concurrent creates in one workspace never wait on a counter. A periodic job
--     (compact_post_facet_counts, queued by the worker's crontab, src/worker/jobs.ts) sums each workspace's rows
--     into one per set.

-- One bit per (status, platform): 8 platforms fit under each status. Unknown values give NULL, which bit_or skips.
CREATE FUNCTION schedule_facet(status text, platform text) RETURNS bigint LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT 1::bigint << ((array_position(ARRAY['DRAFT', 'SCHEDULED', 'PUBLISHING', 'PUBLISHED', 'FAILED'], status) - 1) * 8
    + array_position(ARRAY['BLUESKY', 'LINKEDIN'], platform) - 1)
$$;

CREATE TABLE post_facets (
  post_id uuid PRIMARY KEY REFERENCES posts (id) ON DELETE CASCADE,
  organization_id uuid NOT NULL,
  facets bigint NOT NULL
);

-- No foreign key: a workspace's deletion cascades to its posts, whose rows append deltas here as they go; the
-- compaction drops the sets whose deltas sum to zero.
CREATE TABLE post_facet_counts (
  organization_id uuid NOT NULL,
  facets bigint NOT NULL,
  posts integer NOT NULL
);
CREATE INDEX post_facet_counts_idx ON post_facet_counts (organization_id, facets) INCLUDE (posts);
-- Each compaction leaves as many dead rows as it summed: vacuumed soon, or the next reads step over them.
ALTER TABLE post_facet_counts SET (autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_threshold = 1000, autovacuum_vacuum_insert_threshold = 1000);

-- Sums each workspace's deltas into one row per set, touching only the sets that have more than one (an idle
-- service rewrites nothing). Two at once are harmless: a row the first took is skipped by the second, and neither
-- sees the other's sums.
CREATE FUNCTION compact_post_facet_counts() RETURNS void LANGUAGE sql AS $$
  WITH taken AS (
    DELETE FROM post_facet_counts
    WHERE (organization_id, facets) IN (SELECT organization_id, facets FROM post_facet_counts GROUP BY 1, 2 HAVING count(*) > 1)
    RETURNING organization_id, facets, posts)
  INSERT INTO post_facet_counts
  SELECT organization_id, facets, sum(posts)::int FROM taken GROUP BY organization_id, facets HAVING sum(posts) <> 0
$$;

CREATE FUNCTION count_post_facets() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    INSERT INTO post_facet_counts VALUES (NEW.organization_id, NEW.facets, 1);
  ELSIF TG_OP = 'DELETE' THEN
    INSERT INTO post_facet_counts VALUES (OLD.organization_id, OLD.facets, -1);
  ELSIF NEW.facets <> OLD.facets THEN
    INSERT INTO post_facet_counts VALUES (OLD.organization_id, OLD.facets, -1), (NEW.organization_id, NEW.facets, 1);
  END IF;
  RETURN NULL;
END $$;
CREATE TRIGGER post_facets_count AFTER INSERT OR DELETE OR UPDATE OF facets ON post_facets
  FOR EACH ROW EXECUTE FUNCTION count_post_facets();

CREATE FUNCTION add_post_facets() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO post_facets (post_id, organization_id, facets) VALUES (NEW.id, NEW.organization_id, 0);
  RETURN NULL;
END $$;
CREATE TRIGGER posts_facets AFTER INSERT ON posts FOR EACH ROW EXECUTE FUNCTION add_post_facets();

CREATE FUNCTION refresh_post_facets() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  post uuid := CASE WHEN TG_OP = 'DELETE' THEN OLD.post_id ELSE NEW.post_id END;
  now_facets bigint;
BEGIN
  -- A new schedule can only add its own pair: its bit is set on the row as last committed, under the row's lock. (Not
  -- only where the bit looks unset: a transaction clearing it may not have committed yet, and must be waited for.)
  IF TG_OP = 'INSERT' THEN
    UPDATE post_facets f SET facets = f.facets | bit.facet
      FROM (SELECT schedule_facet(NEW.status, i.platform) AS facet FROM integrations i WHERE i.id = NEW.integration_id) bit
      WHERE f.post_id = post;
    RETURN NULL;
  END IF;
  -- Gone with its post (deleted in this transaction): its row's deletion has counted it out.
  PERFORM 1 FROM post_facets WHERE post_id = post FOR UPDATE;
  IF NOT FOUND THEN
    RETURN NULL;
  END IF;
  -- A statement of its own, after the lock: it sees what the transaction that held the lock committed.
  SELECT coalesce(bit_or(schedule_facet(s.status, i.platform)), 0) INTO now_facets
    FROM schedules s JOIN integrations i ON i.id = s.integration_id WHERE s.post_id = post;
  UPDATE post_facets SET facets = now_facets WHERE post_id = post AND facets <> now_facets;
  RETURN NULL;
END $$;
CREATE CONSTRAINT TRIGGER schedules_post_facets AFTER INSERT OR DELETE OR UPDATE OF status, integration_id ON schedules
  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION refresh_post_facets();

-- The posts made before this migration.
INSERT INTO post_facets (post_id, organization_id, facets)
SELECT p.id, p.organization_id,
  coalesce((SELECT bit_or(schedule_facet(s.status, i.platform)) FROM schedules s JOIN integrations i ON i.id = s.integration_id WHERE s.post_id = p.id), 0)
FROM posts p;
SELECT compact_post_facet_counts();

-- The posts list's date filters count the distinct posts of a range of schedules: with the columns they read in
-- the calendar's index, from the index alone.
DROP INDEX schedules_calendar_idx;
CREATE INDEX schedules_calendar_idx ON schedules (organization_id, scheduled_at, id) INCLUDE (post_id, integration_id, status);
