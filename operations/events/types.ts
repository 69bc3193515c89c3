import { z } from 'zod';

/** The event types, by the resource their `data` is; docs/events.md says which change emits each. */
export const EVENT_TYPES = {
  post: ['post.created', 'post.updated', 'post.deleted'],
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
export const eventType = z.enum(Object.values(EVENT_TYPES).flat() as [string, ...string[]]);
