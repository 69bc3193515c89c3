-- Media imported from a GIF provider (GIPHY): which provider, and its id there (attribution, and what a person picked).
ALTER TABLE media ADD COLUMN provider text, ADD COLUMN provider_id text;
ALTER TABLE media ADD CONSTRAINT media_provider_check CHECK ((provider IS NULL) = (provider_id IS NULL));
