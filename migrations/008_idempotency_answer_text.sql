-- A replay answers the first answer byte for byte: json keeps the text as it was written, where jsonb reorders keys.
ALTER TABLE idempotency_keys ALTER COLUMN response_body TYPE json USING response_body::json;
