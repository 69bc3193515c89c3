-- Exact rate limits across API processes (src/registry/rate-limit.ts). A window's `count` is now every token it has
-- granted: to requests admitted, and leased to processes that admit from their lease without a round trip and
-- give back what they did not use. Since nothing is admitted that was not granted here, under the row's lock,
-- a window never admits more than the plan's limit, however many processes share it.
--
-- rate_limit_lease returns `unused` tokens of the window `held_window` (if that is still the current window), opens
-- a new window if the last one has ended and tokens are `wanted`, and grants a lease: a share of what is left (a
-- quarter, so that other processes still find some), at most `wanted`, at least one while any is left. Times are read
-- after the row's lock is had (clock_timestamp), so a wait for it cannot make a window seem longer than it is. A
-- workspace that no longer exists answers a null window_id. A lock wait longer than 2 s fails the call.
CREATE FUNCTION rate_limit_lease(
  workspace uuid, bucket_name text, window_seconds integer, held_window bigint, unused integer, wanted integer,
  OUT window_id bigint, OUT ms_left float8, OUT window_count integer, OUT plan_name text, OUT plan_limit integer, OUT granted integer
) LANGUAGE plpgsql SET lock_timeout = '2s' AS $$
DECLARE
  at_time timestamptz;
  started timestamptz;
  spent integer;
  ended boolean;
  remaining integer;
BEGIN
  SELECT p.name, p.rate_limit_per_minute INTO plan_name, plan_limit
    FROM organizations o JOIN plans p ON p.name = o.plan WHERE o.id = workspace;
  IF NOT FOUND THEN
    granted := 0;
    RETURN;
  END IF;
  SELECT w.started_at, w.count INTO started, spent FROM rate_limit_windows w
    WHERE w.organization_id = workspace AND w.bucket = bucket_name FOR UPDATE;
  IF NOT FOUND THEN
    INSERT INTO rate_limit_windows (organization_id, bucket, started_at, count) VALUES (workspace, bucket_name, now(), 0)
      ON CONFLICT (organization_id, bucket) DO NOTHING;
    SELECT w.started_at, w.count INTO STRICT started, spent FROM rate_limit_windows w
      WHERE w.organization_id = workspace AND w.bucket = bucket_name FOR UPDATE;
  END IF;
  at_time := clock_timestamp();
  -- A window is named by its start in microseconds: exact, whatever the session's time zone.
  IF held_window = (extract(epoch FROM started) * 1000000)::bigint THEN
    spent := greatest(0, spent - unused);
  END IF;
  ended := started <= at_time - make_interval(secs => window_seconds);
  IF ended AND wanted > 0 THEN
    started := at_time;
    spent := 0;
    ended := false;
  END IF;
  remaining := greatest(0, plan_limit - spent);
  granted := CASE WHEN ended OR wanted <= 0 OR remaining = 0 THEN 0
    ELSE least(remaining, greatest(1, least(wanted, ceil(remaining / 4.0)::integer))) END;
  UPDATE rate_limit_windows SET started_at = started, count = spent + granted
    WHERE organization_id = workspace AND bucket = bucket_name;
  window_id := (extract(epoch FROM started) * 1000000)::bigint;
  ms_left := extract(epoch FROM started + make_interval(secs => window_seconds) - at_time) * 1000;
  window_count := spent + granted;
END
$$;
