-- The language detected from a thread's text (src/detected-languages.ts), by the text's MD5: written when a post is
-- created or changed, read by the publishing engine's claim, so that a burst of due posts is not also a burst of
-- language detection. Keyed by content, a row is never stale; one missing (pruned, or never written) is detected at
-- publish time instead. language is null when no language was confident.
CREATE TABLE detected_languages (
  text_md5 uuid PRIMARY KEY,
  language text,
  detected_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX detected_languages_age_idx ON detected_languages USING brin (detected_at);
