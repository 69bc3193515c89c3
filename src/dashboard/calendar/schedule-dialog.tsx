import { useEffect, useRef, useState } from 'preact/hooks';
import { api, call, errorFor, formError } from '../api.js';
import { ErrorMessage, Field, focusFirstInvalid, SubmitButton } from '../components/form.js';
import { Dialog } from '../components/dialog.js';
import { useAction } from '../hooks.js';
import { navigate } from '../router.js';
import type { CalendarSchedule } from './data.js';
import { canMove, ChannelAvatar, heldForApproval, Thumbnail } from './entry.js';
import { platformLabel } from '../platforms.js';
import { excerpt, retryingText, StatusBadge } from './status.js';
import { formatDateTime, formatDayLong, zoneName } from '../format.js';
import { dayOf, instantAt, timeOf } from '../zoned-time.js';

export type DialogStep = 'details' | 'move' | 'delete';

interface ScheduleDialogProps {
  /** The schedule as last read (the calendar's polling keeps it current while the dialog is open). */
  schedule: CalendarSchedule | undefined;
  step: DialogStep;
  setStep: (step: DialogStep) => void;
  timeZone: string;
  onClose: () => void;
  /** After a change: the calendar reads its range again, and says what happened. */
  onChanged: (message: string) => Promise<void>;
  /** Moves the schedule (the drop of a drag does the same). */
  move: (schedule: CalendarSchedule, scheduledAt: string) => Promise<{ ok: true } | { ok: false; message: string; field?: string }>;
  returnFocus: () => void;
}

/** A schedule's details and what can be done with it: open in the composer, move to another time, retry, delete. */
export function ScheduleDialog({ schedule, step, setStep, timeZone, onClose, onChanged, move, returnFocus }: ScheduleDialogProps) {
  const action = useAction();
  // Another schedule opened: the last one's refusal is not this one's.
  useEffect(() => action.clearError(), [schedule?.id]);
  const title = !schedule
    ? ''
    : step === 'move'
      ? 'Move to…'
      : step === 'delete'
        ? schedule.status === 'PUBLISHED'
          ? 'Delete the published post?'
          : 'Delete this schedule?'
        : `${platformLabel(schedule.integration.platform)} post on ${schedule.integration.name}`;

  const retry = async () => {
    if (!schedule) return;
    const result = await action.run(() => call(api.POST('/posts/schedules/{scheduleId}/retry', { params: { path: { scheduleId: schedule.id } } })));
    if (result.ok) await onChanged(`Retrying “${excerpt(schedule.scheduledContent, 40)}” on ${schedule.integration.name}: queued to publish now.`);
  };

  const remove = async () => {
    if (!schedule) return;
    const result = await action.run(() => call(api.DELETE('/schedules/{id}', { params: { path: { id: schedule.id } } })));
    if (!result.ok) return;
    onClose();
    await onChanged(
      schedule.status === 'PUBLISHED'
        ? `Deleted “${excerpt(schedule.scheduledContent, 40)}” from ${schedule.integration.name}.`
        : `Deleted the schedule of “${excerpt(schedule.scheduledContent, 40)}” on ${schedule.integration.name}.`,
    );
  };

  return (
    <Dialog
      open={!!schedule}
      title={title}
      step={step}
      busy={action.busy}
      onClose={() => (step === 'details' ? onClose() : setStep('details'))}
      returnFocus={returnFocus}
      class="schedule-dialog"
      // Deleting is confirmed in the dialog: its Cancel (or Escape) steps back to the details.
      confirm={schedule && step === 'delete' ? { label: 'Delete', busyLabel: 'Deleting…', error: action.error?.message, onConfirm: remove } : undefined}
    >
      {schedule && step === 'details' && (
        <>
          <Details schedule={schedule} timeZone={timeZone} />
          <ErrorMessage message={action.error?.message} />
          {/* The main action leads (a failed schedule's retry); Delete is last and quiet, never the first thing met. */}
          <div class="actions dialog-actions">
            {schedule.status === 'FAILED' && !heldForApproval(schedule) && (
              <button type="button" class="primary" onClick={retry} data-autofocus disabled={action.busy} aria-busy={action.busy ? 'true' : undefined}>
                {action.busy ? 'Retrying…' : 'Retry now'}
              </button>
            )}
            <a href={`/posts/${schedule.postId}`} class="button-link" data-autofocus onClick={followInApp}>
              Open in the composer
            </a>
            {canMove(schedule) && (
              <button
                type="button"
                onClick={() => {
                  action.clearError();
                  setStep('move');
                }}
              >
                Move to…
              </button>
            )}
            <button type="button" onClick={onClose}>
              Close
            </button>
            {schedule.status !== 'PUBLISHING' && !schedule.platformDeletedAt && (
              <button
                type="button"
                class="danger-quiet"
                onClick={() => {
                  action.clearError();
                  setStep('delete');
                }}
              >
                Delete…
              </button>
            )}
          </div>
        </>
      )}
      {schedule && step === 'move' && (
        <MoveForm schedule={schedule} timeZone={timeZone} move={move} onCancel={() => setStep('details')} onMoved={onClose} />
      )}
      {schedule && step === 'delete' && (
        <p>
          {schedule.status === 'PUBLISHED'
            ? `“${excerpt(schedule.scheduledContent, 80)}” is deleted from ${schedule.integration.name} on the platform.`
            : `“${excerpt(schedule.scheduledContent, 80)}” will not be published on ${schedule.integration.name}.`}{' '}
          {schedule.threadOrder === 0 && 'The parts of its thread go with it. '}The post and its other channels stay.
        </p>
      )}
    </Dialog>
  );
}

/** A plain click on a link of this site is followed in-app (as the router's Link does); others open as links do. */
export function followInApp(event: MouseEvent) {
  if (event.defaultPrevented || event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return;
  event.preventDefault();
  navigate((event.currentTarget as HTMLAnchorElement).getAttribute('href')!);
}

function Details({ schedule, timeZone }: { schedule: CalendarSchedule; timeZone: string }) {
  const detail = schedule.failureDetail;
  return (
    <div class="schedule-details">
      <div class="schedule-channel">
        <ChannelAvatar integration={schedule.integration} size="large" />
        <span>
          <strong>{schedule.integration.name}</strong> <span class="platform">{platformLabel(schedule.integration.platform)}</span>
        </span>
        <StatusBadge schedule={schedule} />
      </div>
      <dl class="schedule-facts">
        <div>
          <dt>When</dt>
          <dd>{schedule.scheduledAt ? `${formatDateTime(schedule.scheduledAt, '—', timeZone)} (${timeZone})` : 'No time'}</dd>
        </div>
        {schedule.publishedAt && (
          <div>
            <dt>Published</dt>
            <dd>{formatDateTime(schedule.publishedAt, '—', timeZone)}</dd>
          </div>
        )}
        {schedule.threadOrder > 0 && (
          <div>
            <dt>Thread</dt>
            <dd>Part {schedule.threadOrder + 1}: it moves with the thread’s first post.</dd>
          </div>
        )}
        {schedule.releaseUrl && (
          <div>
            <dt>On the platform</dt>
            <dd>
              <a href={schedule.releaseUrl} rel="noreferrer" target="_blank">
                {schedule.releaseUrl}
              </a>
            </dd>
          </div>
        )}
      </dl>
      {retryingText(schedule, timeZone) && (
        <div class="failure" role="group" aria-label="Why it is retried">
          <p>
            {retryingText(schedule, timeZone)}
            {schedule.lastAttempt && <span class="status-detail"> (last tried {formatDateTime(schedule.lastAttempt, '—', timeZone)})</span>}
          </p>
        </div>
      )}
      {schedule.status === 'FAILED' && (
        <div class="failure" role="group" aria-label="Why it failed">
          <p>
            <strong>Why it failed:</strong> {schedule.failureReason ?? 'No reason was recorded.'}
          </p>
          {detail?.platformMessage && (
            <p>
              <strong>The platform said:</strong> {detail.platformMessage}
              {(detail.status || detail.platformCode) && (
                <span class="status-detail">
                  {' '}
                  ({[detail.status && `HTTP ${detail.status}`, detail.platformCode].filter(Boolean).join(', ')})
                </span>
              )}
            </p>
          )}
          {schedule.retryCount > 0 && <p class="status-detail">Tried {schedule.retryCount + 1} times.</p>}
        </div>
      )}
      <div class="schedule-content">
        <Thumbnail schedule={schedule} size="large" />
        <p class="schedule-text">{schedule.scheduledContent}</p>
      </div>
    </div>
  );
}

interface MoveFormProps {
  schedule: CalendarSchedule;
  timeZone: string;
  move: ScheduleDialogProps['move'];
  onCancel: () => void;
  onMoved: () => void;
}

/** The keyboard's way to reschedule: a date and a time, in the workspace's time zone. */
function MoveForm({ schedule, timeZone, move, onCancel, onMoved }: MoveFormProps) {
  const form = useRef<HTMLFormElement>(null);
  const [date, setDate] = useState(schedule.scheduledAt ? dayOf(schedule.scheduledAt, timeZone) : dayOf(new Date(), timeZone));
  const [time, setTime] = useState(schedule.scheduledAt ? timeOf(schedule.scheduledAt, timeZone) : '09:00');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<{ message: string; field?: string }>();

  const submit = async (event: Event) => {
    event.preventDefault();
    if (busy) return;
    if (!date || !time) {
      setError({ message: 'scheduledAt: choose a date and a time', field: date ? 'time' : 'date' });
      return focusFirstInvalid(form.current);
    }
    setBusy(true);
    setError(undefined);
    const result = await move(schedule, instantAt(date, time, timeZone));
    setBusy(false);
    if (result.ok) return onMoved();
    setError(result);
    focusFirstInvalid(form.current);
  };

  const asApiError = error ? { code: 'VALIDATION_ERROR', message: error.message, status: 400 } : undefined;
  const fieldError = errorFor(asApiError, 'scheduledAt');
  return (
    <form ref={form} onSubmit={submit} aria-busy={busy ? 'true' : undefined}>
      <p>
        “{excerpt(schedule.scheduledContent, 60)}” on {schedule.integration.name}
        {schedule.status === 'FAILED' && ': it is scheduled again at the new time'}. Times are in {timeZone} ({zoneName(timeZone)}).
      </p>
      <Field label="Date" type="date" name="date" value={date} onInput={setDate} required error={error?.field === 'date' ? error.message : fieldError} />
      <Field label="Time" type="time" name="time" value={time} onInput={setTime} required error={error?.field === 'time' ? error.message : undefined} />
      {date && <p class="hint">{formatDayLong(date)}</p>}
      <ErrorMessage message={asApiError && !fieldError && !error?.field ? formError(asApiError, ['scheduledAt']) : undefined} />
      <div class="actions">
        <button type="button" onClick={onCancel} disabled={busy}>
          Back
        </button>
        <SubmitButton busy={busy} busyLabel="Moving…">
          Move
        </SubmitButton>
      </div>
    </form>
  );
}
