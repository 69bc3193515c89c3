import type { Schema } from '../api.js';
import { formatTime } from '../format.js';

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
  /** When the worker tries it again (set with the retry; null once an attempt begins or a person moves it). */
  nextAttemptAt?: string | null;
  scheduledAt?: string | null;
}

/**
 * A schedule whose last attempt failed and that waits for its next: SCHEDULED, with the failure said at once (the
 * worker writes it with the retry), so a post past its time never just reads "Scheduled".
 */
const isRetrying = (schedule: BadgeState) => schedule.status === 'SCHEDULED' && (schedule.retryCount ?? 0) > 0 && !!schedule.failureReason;

/** The worker's words for a failed attempt it retries (src/worker/publish-failures.ts): "<reason>: attempt N of M failed, …". */
const RETRYING_REASON = /^([\s\S]*): attempt (\d+) of (\d+) failed, and it is tried again automatically$/;

/**
 * What a retrying schedule says, wherever a schedule shows its status: "Retrying — attempt 2 of 4 at 9:30 AM: <reason>"
 * (the attempt to come, its time in `timeZone`, and why the last one failed); without `reason`, up to the time. Its time
 * is `nextAttemptAt`, or its `scheduledAt` still ahead once a person moved it. Null when it is not retrying.
 */
export function retryingText(schedule: BadgeState, timeZone: string | undefined, reason = true): string | null {
  if (!isRetrying(schedule)) return null;
  const said = RETRYING_REASON.exec(schedule.failureReason!);
  const next = (schedule.retryCount ?? 0) + 1;
  const attempt = said ? `attempt ${Number(said[2]) + 1} of ${said[3]}` : `attempt ${next}`;
  const scheduledAhead = schedule.scheduledAt && Date.parse(schedule.scheduledAt) > Date.now() ? schedule.scheduledAt : null;
  const at = schedule.nextAttemptAt ?? scheduledAhead;
  const when = at ? ` at ${formatTime(at, timeZone)}` : '';
  return `Retrying — ${attempt}${when}${reason ? `: ${said ? said[1] : schedule.failureReason}` : ''}`;
}

/**
 * A schedule's status as everywhere it is shown: its badge, and while it is retrying, the rest of retryingText after it
 * (so that it reads "Retrying — attempt 2 of 4 at 9:30 AM: <reason>"). `reason` false: up to the time (a small entry).
 */
export function StatusLine({ schedule, timeZone, reason = true }: { schedule: BadgeState; timeZone: string | undefined; reason?: boolean }) {
  const text = retryingText(schedule, timeZone, reason);
  if (!text) return <StatusBadge schedule={schedule} />;
  return (
    <span class="retrying-status">
      <StatusBadge schedule={schedule} />
      <span class="retrying-detail">{text.slice('Retrying'.length)}</span>
    </span>
  );
}

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
