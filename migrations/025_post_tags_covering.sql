-- GET /posts?tagIds=: the distinct posts of the tags counted from the index alone (it read each row from the table,
-- 1,900 rows on 356 pages for a tag on one post in sixty of 100,000: 2.8 ms, now 1.3; docs/benchmarks.md).
DROP INDEX post_tags_tag_idx;
CREATE INDEX post_tags_tag_idx ON post_tags (tag_id, post_id) INCLUDE (organization_id);
