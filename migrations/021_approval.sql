-- Approval before publishing (operations/posts/approval.ts): who needs it is set for the workspace and for each API
-- key; a post that waits keeps who asked, who may approve, who reviewed it and why. Its schedules carry the same state
-- (the Schedule shape shows it) and whether their post spent its monthly quota: a post spends it once, when first made
-- live without a rule, or when approved.
ALTER TABLE organizations
  ADD COLUMN posts_need_approval boolean NOT NULL DEFAULT false,
  ADD COLUMN approver_ids uuid[] NOT NULL DEFAULT '{}';
ALTER TABLE api_keys
  ADD COLUMN posts_need_approval boolean NOT NULL DEFAULT false;
ALTER TABLE posts
  ADD COLUMN approval_reviewer_id uuid REFERENCES users (id) ON DELETE SET NULL,
  ADD COLUMN approval_note text;
ALTER TABLE schedules ADD COLUMN quota_spent boolean NOT NULL DEFAULT false;
UPDATE schedules SET quota_spent = true WHERE status <> 'DRAFT' AND thread_order = 0;
CREATE INDEX posts_approval_queue_idx ON posts (organization_id, approval_requested_at, id) WHERE approval_status = 'pending_review';
