-- A timestamp as the API writes it (JavaScript's toISOString: UTC, milliseconds, "Z"), for answers that Postgres
-- builds as JSON (the post and calendar lists). STABLE rather than IMMUTABLE because to_char is: so it is inlined.
CREATE FUNCTION api_time(timestamptz) RETURNS text LANGUAGE sql STABLE PARALLEL SAFE
  AS $$ SELECT to_char($1 AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') $$;
