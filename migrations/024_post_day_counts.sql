-- A page deep in the posts list without skipping every newer post (operations/posts/list.ts): how many posts each
-- workspace made on each day (UTC), kept as deltas like post_facet_counts (migrations/015_post_facets.sql), so that an
-- unfiltered page at offset N starts at the day holding its first post and skips only that day's newer posts.
-- Statement triggers on posts append a delta per workspace and day for each insert or delete, in the same transaction
-- (no counter row to wait on); the worker's crontab folds them (compact_post_day_counts, beside the facets').
CREATE TABLE post_day_counts (
  organization_id uuid NOT NULL,
  day date NOT NULL,
  posts integer NOT NULL
);
CREATE INDEX post_day_counts_idx ON post_day_counts (organization_id, day) INCLUDE (posts);
ALTER TABLE post_day_counts SET (autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_threshold = 1000, autovacuum_vacuum_insert_threshold = 1000);

CREATE FUNCTION post_day(created_at timestamptz) RETURNS date LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT (created_at AT TIME ZONE 'UTC')::date
$$;

CREATE FUNCTION count_post_days() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    INSERT INTO post_day_counts SELECT organization_id, post_day(created_at), count(*) FROM made GROUP BY 1, 2;
  ELSE
    INSERT INTO post_day_counts SELECT organization_id, post_day(created_at), -count(*) FROM gone GROUP BY 1, 2;
  END IF;
  RETURN NULL;
END $$;
CREATE TRIGGER posts_days_made AFTER INSERT ON posts REFERENCING NEW TABLE AS made
  FOR EACH STATEMENT EXECUTE FUNCTION count_post_days();
CREATE TRIGGER posts_days_gone AFTER DELETE ON posts REFERENCING OLD TABLE AS gone
  FOR EACH STATEMENT EXECUTE FUNCTION count_post_days();

-- A post keeps its workspace and the instant it was made: the counts (and the list's order) rely on it.
CREATE FUNCTION refuse_post_move() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'a post''s organization_id and created_at do not change' USING ERRCODE = 'check_violation';
END $$;
CREATE TRIGGER posts_stay_put BEFORE UPDATE OF organization_id, created_at ON posts
  FOR EACH ROW WHEN (NEW.organization_id IS DISTINCT FROM OLD.organization_id OR NEW.created_at IS DISTINCT FROM OLD.created_at)
  EXECUTE FUNCTION refuse_post_move();

-- As compact_post_facet_counts: each workspace's deltas of a day summed into one row.
CREATE FUNCTION compact_post_day_counts() RETURNS void LANGUAGE sql AS $$
  WITH taken AS (
    DELETE FROM post_day_counts
    WHERE (organization_id, day) IN (SELECT organization_id, day FROM post_day_counts GROUP BY 1, 2 HAVING count(*) > 1)
    RETURNING organization_id, day, posts)
  INSERT INTO post_day_counts
  SELECT organization_id, day, sum(posts)::int FROM taken GROUP BY organization_id, day HAVING sum(posts) <> 0
$$;

-- The posts made before this migration.
INSERT INTO post_day_counts SELECT organization_id, post_day(created_at), count(*) FROM posts GROUP BY 1, 2;
ANALYZE post_day_counts;
