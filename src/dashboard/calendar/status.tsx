import type { Schema } from '../api.js';

export type ScheduleStatus = Schema<'CalendarSchedule'>['status'];

export const STATUSES: readonly ScheduleStatus[] = ['DRAFT', 'SCHEDULED', 'PUBLISHING', 'PUBLISHED', 'FAILED'];

/** Each status in words: the colour of an entry is never its only cue. */
export const STATUS_LABELS: Record<ScheduleStatus, string> = {
  DRAFT: 'Draft',
  SCHEDULED: 'Scheduled',
  PUBLISHING: 'Publishing',
  PUBLISHED: 'Published',
  FAILED: 'Failed',
};

export const STATUS_MEANINGS: Record<ScheduleStatus, string> = {
  DRAFT: 'held at a time, not published',
  SCHEDULED: 'will be published at its time',
  PUBLISHING: 'being published now',
  PUBLISHED: 'on the platform',
  FAILED: 'could not be published',
};

/** What a badge reads of a schedule: its status, and whether an attempt failed that the worker will try again. */
export interface BadgeState {
  status: ScheduleStatus;
  retryCount?: number;
  failureReason?: string | null;
}

/**
 * A schedule whose last attempt failed and that waits for its next: SCHEDULED, with the failure said at once (the
 * worker writes it with the retry), so a post past its time never just reads "Scheduled".
 */
export const isRetrying = (schedule: BadgeState) => schedule.status === 'SCHEDULED' && (schedule.retryCount ?? 0) > 0 && !!schedule.failureReason;

/** A status as a labelled chip in its colour; "Retrying" (in the colour of a failure) while a failed attempt waits its next. */
export function StatusBadge({ schedule }: { schedule: BadgeState }) {
  if (isRetrying(schedule)) return <span class="status-badge status-retrying">Retrying</span>;
  return <span class={`status-badge status-${schedule.status.toLowerCase()}`}>{STATUS_LABELS[schedule.status]}</span>;
}

/** The colours and what each means, in words. */
export function StatusLegend() {
  return (
    <ul class="status-legend" aria-label="Status colours">
      {STATUSES.map((status) => (
        <li key={status}>
          <span class={`status-swatch status-${status.toLowerCase()}`} aria-hidden="true" />
          <span>
            {STATUS_LABELS[status]}
            <span class="visually-hidden">: {STATUS_MEANINGS[status]}</span>
          </span>
        </li>
      ))}
    </ul>
  );
}

/** The first words of a text, for a row or an entry. */
export function excerpt(text: string, length = 80): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length <= length ? flat : `${flat.slice(0, length - 1).trimEnd()}…`;
}

/** A post held for approval says so above its schedules' statuses, which stay SCHEDULED while it waits. */
export function ApprovalBadge({ post }: { post: { approvalStatus: 'pending_review' | 'approved' | 'rejected' | null; approvalNote: string | null } }) {
  if (post.approvalStatus === 'pending_review') return <p class="approval-state waiting">Waiting for approval</p>;
  if (post.approvalStatus === 'rejected') {
    return <p class="approval-state rejected">Rejected{post.approvalNote ? `: ${post.approvalNote}` : ''}</p>;
  }
  return null;
}
