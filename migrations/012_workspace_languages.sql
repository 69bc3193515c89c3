-- The workspace's default languages: BCP-47 tags a Bluesky post carries when its schedule's settings name none
-- (settings.langs), before any language detected from its text (src/platforms/languages.ts). At most 3, the bound of
-- app.bsky.feed.post's `langs`; the operation checks that each tag is well-formed.
ALTER TABLE organizations
  ADD COLUMN languages text[] NOT NULL DEFAULT '{}' CHECK (cardinality(languages) <= 3);
