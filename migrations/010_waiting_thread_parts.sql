-- The recovery sweep (src/worker/publish.ts recoverAbandoned) looks for due thread parts still waiting: few at any time,
-- among every part ever published.
CREATE INDEX schedules_waiting_parts_idx ON schedules (scheduled_at)
  WHERE status = 'SCHEDULED' AND thread_root_schedule_id IS NOT NULL;
