-- GET /posts?search=: each post's content lowercased once, when it is written, in a narrow table of its own with the
-- trigram index. A search was `content ILIKE pattern` on posts, which lowercases both sides of every comparison; the
-- index only finds candidates, so at 10,000 matches it lowercased 10,000 texts and read them from every page of the
-- posts table. Now `content_lowercase LIKE lower(pattern)` gives the same answers (it is what ILIKE does) and reads
-- half the pages, for about half the cost (docs/benchmarks.md). A trigger keeps it with its post.
CREATE TABLE post_search (
  post_id uuid PRIMARY KEY REFERENCES posts (id) ON DELETE CASCADE,
  organization_id uuid NOT NULL,
  content_lowercase text NOT NULL
);
CREATE INDEX post_search_trgm_idx ON post_search USING gin (content_lowercase gin_trgm_ops);
-- A small workspace's search reads its own rows: the trigram index holds every workspace's.
CREATE INDEX post_search_organization_idx ON post_search (organization_id);

CREATE FUNCTION write_post_search() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO post_search (post_id, organization_id, content_lowercase)
  VALUES (NEW.id, NEW.organization_id, lower(NEW.content))
  ON CONFLICT (post_id) DO UPDATE SET content_lowercase = EXCLUDED.content_lowercase;
  RETURN NULL;
END $$;
CREATE TRIGGER posts_search AFTER INSERT OR UPDATE OF content ON posts
  FOR EACH ROW EXECUTE FUNCTION write_post_search();

DROP INDEX posts_content_trgm_idx;
INSERT INTO post_search (post_id, organization_id, content_lowercase)
SELECT id, organization_id, lower(content) FROM posts;
-- Statistics now, for a database that has posts already: until autovacuum gathers them, a search was planned as if
-- it matched a few dozen posts (read them all, then sort), 79 ms instead of 13 at 10,000 matches.
ANALYZE post_search;
