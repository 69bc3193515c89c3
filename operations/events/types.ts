/**
 * The event types, by the resource their `data` is; docs/events.md says which change emits each. Plain data, no
 * imports: the dashboard's Webhooks page offers the same list (src/http/dashboard.ts hashes this file with its sources).
 */
export const EVENT_TYPES = {
  post: ['post.created', 'post.updated', 'post.deleted', 'post.approval_requested', 'post.approved', 'post.rejected', 'post.recycled'],
  schedule: [
    'schedule.scheduled',
    'schedule.rescheduled',
    'schedule.publishing',
    'schedule.published',
    'schedule.failed',
    'schedule.retrying',
    'schedule.deleted',
  ],
  integration: ['integration.connected', 'integration.disconnected', 'integration.error', 'integration.token_expiring'],
  upload: ['upload.completed'],
  endpoint: ['endpoint.disabled'],
} as const;

export type PostEventType = (typeof EVENT_TYPES.post)[number];
export type ScheduleEventType = (typeof EVENT_TYPES.schedule)[number];
export type IntegrationEventType = (typeof EVENT_TYPES.integration)[number];
export type EventType = (typeof EVENT_TYPES)[keyof typeof EVENT_TYPES][number];
export const EVENT_TYPE_NAMES = Object.values(EVENT_TYPES).flat() as EventType[];
