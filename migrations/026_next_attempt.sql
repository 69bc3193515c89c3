-- When a schedule whose attempt failed is tried again (src/worker/publish-failures.ts): set with the retry's job, in
-- the same transaction and to its run_at; cleared when an attempt claims it (so once it publishes or fails for good),
-- when it is rescheduled or retried by hand, and when its job is cancelled. The Schedule shows it as nextAttemptAt.
ALTER TABLE schedules ADD COLUMN next_attempt_at timestamptz;
-- The failing schedules (FAILED, or waiting for an automatic retry): an Integration's failingSchedules and lastFailure
-- (operations/integrations/integration.ts), GET /posts?failing=true. Few rows whatever the workspace's size.
CREATE INDEX schedules_failing_idx ON schedules (organization_id, integration_id, last_attempt) INCLUDE (post_id)
  WHERE status = 'FAILED' OR next_attempt_at IS NOT NULL;
