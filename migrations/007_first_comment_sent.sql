-- When a first comment was sent to a platform that cannot be asked whether it exists (LinkedIn): set just before the
-- call and cleared when the platform refused it (nothing written). Still set on a later attempt, the comment may be
-- there already (its answer was lost, or the worker stopped), so it is never sent again (src/worker/publish.ts).
ALTER TABLE schedules ADD COLUMN first_comment_sent_at timestamptz;
