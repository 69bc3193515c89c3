-- Marks of a send to a platform that cannot be asked whether a post exists (LinkedIn): set just before the call,
-- cleared when the platform refused it (nothing written). Still set on a later attempt, the post or comment may be
-- there already (its answer was lost, or the worker stopped): the post is sent again once only, marked as possibly
-- there (a duplicate refusal then means "probably published"), and the first comment never again (src/worker/publish.ts).
ALTER TABLE schedules ADD COLUMN post_sent_at timestamptz, ADD COLUMN first_comment_sent_at timestamptz;
