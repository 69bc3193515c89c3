-- Who wrote a post (the Post's `createdBy`, operations/posts/post.ts): with an API key, or as a member (the dashboard,
-- a signed-in command line, the admin command). A post written with a key keeps the key while its row exists (a
-- revoked key keeps its row, so its current name is shown) and the name the key had then, so that a post whose key
-- row is gone (deleted with its member's user) is still said to be written with a key, and by which name. Posts
-- written before this migration have no `created_by_kind`: how they were written was not recorded.
ALTER TABLE posts
  ADD COLUMN created_by_kind text CHECK (created_by_kind IN ('key', 'member')),
  ADD COLUMN api_key_id uuid REFERENCES api_keys (id) ON DELETE SET NULL,
  ADD COLUMN api_key_name text,
  ADD CONSTRAINT posts_api_key_only_for_keys CHECK (created_by_kind = 'key' OR (api_key_id IS NULL AND api_key_name IS NULL));
-- For ON DELETE SET NULL: deleting a key finds its posts by index, not by reading every post.
CREATE INDEX posts_api_key_idx ON posts (api_key_id) WHERE api_key_id IS NOT NULL;
