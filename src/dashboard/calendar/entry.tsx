import type { CalendarSchedule } from './data.js';
import { platformLabel } from '../platforms.js';
import { excerpt, StatusLine } from './status.js';
import { formatTime } from '../format.js';

/** Whether a schedule's post waits for approval or was rejected: it does not publish, and cannot be moved or retried. */
export const heldForApproval = (schedule: CalendarSchedule) => schedule.approvalStatus === 'pending_review' || schedule.approvalStatus === 'rejected';

/**
 * Whether a schedule can be moved to another time: the API moves drafts, scheduled and failed ones, a thread by its
 * first, and none of a post held for approval.
 */
export const canMove = (schedule: CalendarSchedule) =>
  schedule.threadOrder === 0 && ['DRAFT', 'SCHEDULED', 'FAILED'].includes(schedule.status) && !heldForApproval(schedule);

/** The channel's avatar, or its initial when the platform gave none. */
export function ChannelAvatar({ integration, size = 'small' }: { integration: CalendarSchedule['integration']; size?: 'small' | 'large' }) {
  return integration.image ? (
    <img class={`entry-avatar ${size}`} src={integration.image} alt="" width={size === 'small' ? 20 : 40} height={size === 'small' ? 20 : 40} />
  ) : (
    <span class={`entry-avatar initial ${size}`} aria-hidden="true">
      {(integration.name.trim()[0] ?? '?').toUpperCase()}
    </span>
  );
}

/** The post's first image (its square crop once made), where it has one. */
export function Thumbnail({ schedule, size = 'small' }: { schedule: CalendarSchedule; size?: 'small' | 'large' }) {
  const thumbnail = schedule.post.thumbnail;
  if (!thumbnail) return null;
  // `IMAGE` or `VIDEO` (a video's preview is the video itself: no picture to show).
  if (/video/i.test(thumbnail.type)) {
    return <span class="entry-media">{schedule.post.attachmentCount > 1 ? `${schedule.post.attachmentCount} media` : 'Video'}</span>;
  }
  const px = size === 'small' ? 32 : 120;
  return <img class={`entry-thumb ${size}`} src={thumbnail.url} alt="" width={px} height={px} loading="lazy" />;
}

interface EntryProps {
  schedule: CalendarSchedule;
  timeZone: string;
  /** The agenda shows the failure's reason on the entry itself; the month and week in its dialog. */
  detailed?: boolean;
  onOpen: (schedule: CalendarSchedule) => void;
  onDragStart: (schedule: CalendarSchedule) => void;
  onDragEnd: () => void;
}

/**
 * One schedule on the calendar: a button (its name the time, status, channel and text) that opens its details and
 * actions; draggable to another day or hour when it can move (the "Move to…" dialog does the same by keyboard).
 */
export function Entry({ schedule, timeZone, detailed, onOpen, onDragStart, onDragEnd }: EntryProps) {
  const movable = canMove(schedule);
  return (
    <li
      class={`entry status-${schedule.status.toLowerCase()}${movable ? ' movable' : ''}`}
      data-schedule-id={schedule.id}
      draggable={movable}
      onDragStart={(event) => {
        if (!movable || !event.dataTransfer) return;
        event.dataTransfer.effectAllowed = 'move';
        event.dataTransfer.setData('text/plain', schedule.id);
        onDragStart(schedule);
      }}
      onDragEnd={onDragEnd}
    >
      <button type="button" class="entry-button" onClick={() => onOpen(schedule)} aria-haspopup="dialog">
        <span class="entry-head">
          <ChannelAvatar integration={schedule.integration} />
          <span class="entry-time">{schedule.scheduledAt ? formatTime(schedule.scheduledAt, timeZone) : ''}</span>
          <StatusLine schedule={schedule} timeZone={timeZone} reason={detailed === true} />
          {heldForApproval(schedule) && (
            <span class={`approval-state ${schedule.approvalStatus === 'rejected' ? 'rejected' : 'waiting'}`}>
              {schedule.approvalStatus === 'rejected' ? 'Rejected' : 'Needs approval'}
            </span>
          )}
        </span>
        <span class="entry-body">
          <Thumbnail schedule={schedule} />
          <span class="entry-text">
            <span class="entry-channel">
              {schedule.integration.name}
              <span class="visually-hidden"> ({platformLabel(schedule.integration.platform)})</span>
              {schedule.threadOrder > 0 && <span class="entry-part"> · part {schedule.threadOrder + 1}</span>}
            </span>
            <span class="entry-excerpt">{excerpt(schedule.scheduledContent, detailed ? 160 : 60)}</span>
            {detailed && schedule.status === 'FAILED' && schedule.failureReason && <span class="entry-failure">{schedule.failureReason}</span>}
          </span>
        </span>
      </button>
    </li>
  );
}
