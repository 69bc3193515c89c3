-- A pending or completed upload deleted (or refused at complete) while its signed URL still works is withdrawn, not
-- removed: the URL still accepts a PUT until it expires, so its bytes stay counted against the allowance until then,
-- and the upload-expiry task removes whatever was PUT, with the row, at the expiry.
ALTER TABLE uploads DROP CONSTRAINT uploads_status_check;
ALTER TABLE uploads ADD CONSTRAINT uploads_status_check CHECK (status IN ('pending', 'completed', 'withdrawn'));
