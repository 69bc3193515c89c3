import { useEffect, useState } from 'preact/hooks';
import { api, call, inWords, type ApiError } from '../api.js';
import { retryingText, STATUS_LABELS } from '../calendar/status.js';
import { channelLabel, platformLabel } from '../platforms.js';
import { navigate } from '../router.js';
import { formatDateTime } from '../format.js';
import { rootsOf, type Action, type Post } from './state.js';

/** What blocks a submit, listed when one was tried (`role="alert"`); it takes the focus, and follows what is typed. */
export function Problems({ problems, focusRef }: { problems: string[]; focusRef: { current: HTMLDivElement | null } }) {
  return (
    <div ref={focusRef} tabIndex={-1} class={problems.length ? 'problems' : undefined} role={problems.length ? 'alert' : undefined}>
      {problems.length > 0 && (
        <>
          <p class="error">Not sent: {problems.length === 1 ? 'one thing needs' : `${problems.length} things need`} changing first.</p>
          <ul>
            {problems.map((problem) => (
              <li key={problem}>{problem}</li>
            ))}
          </ul>
        </>
      )}
    </div>
  );
}

const LEADS: Record<string, string> = {
  POST_QUOTA_EXCEEDED: 'The monthly post quota is spent.',
  PAYMENT_REQUIRED: 'Nothing can be scheduled or published now.',
  CONTENT_TOO_LONG: 'A text is too long for a channel.',
  MEDIA_RULE_VIOLATED: 'The images break a channel’s rules.',
  STORAGE_QUOTA_EXCEEDED: 'The storage allowance is spent.',
};

/** A refusal of the API (POST_QUOTA_EXCEEDED, PAYMENT_REQUIRED, CONTENT_TOO_LONG…): its message, the form kept as it was. */
export function SubmitError({ error }: { error: ApiError }) {
  return (
    <div class="submit-error" role="alert" tabIndex={-1}>
      <p class="error">
        {LEADS[error.code] ? `${LEADS[error.code]} ` : ''}
        {inWords(error.message)}
      </p>
      <p class="hint">Nothing was saved; what you wrote is kept.</p>
    </div>
  );
}

const LEAD: Record<Action, string> = {
  NEXT_WINDOW: 'Scheduled at the next free posting slot',
  SCHEDULED_TIME: 'Scheduled',
  PUBLISH_NOW: 'Publishing now',
  DRAFT: 'Saved as a draft',
  KEEP: 'Saved',
};

/**
 * What the save did: which slot or time each channel got (the answer of POST /posts names none, so the post is read
 * back), and after "Publish now", each channel's status until it is published or failed (read every second, then less often).
 */
export function Outcome({ postId, message, action, timeZone, editing }: { postId: string; message: string; action: Action; timeZone: string; editing: boolean }) {
  const [post, setPost] = useState<Post>();
  useEffect(() => {
    let stopped = false;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const started = Date.now();
    let polls = 0;
    const load = async () => {
      const result = await call(api.GET('/posts/{id}', { params: { path: { id: postId } } }));
      if (stopped || !result.ok) return;
      setPost(result.data);
      const waiting = result.data.schedules.some(
        (schedule) => schedule.threadOrder === 0 && (schedule.status === 'PUBLISHING' || (schedule.status === 'SCHEDULED' && Date.parse(schedule.scheduledAt ?? '') <= Date.now() + 5000)),
      );
      // Every second at first, then less often (the browser's calls count against the plan's rate limit).
      polls++;
      if (waiting && Date.now() - started < 120_000) timer = setTimeout(load, Math.min(1000 * 1.3 ** polls, 5000));
    };
    void load();
    return () => {
      stopped = true;
      clearTimeout(timer);
    };
  }, [postId]);
  const roots = rootsOf(post);
  return (
    <div class="outcome" role="status">
      <p class="success">
        {LEAD[action]}. {message}.
      </p>
      {roots.length > 0 && (
        <ul>
          {roots.map((schedule) => (
            <li key={schedule.id}>
              {channelLabel(schedule.integration)}: {retryingText(schedule, timeZone) ?? STATUS_LABELS[schedule.status]}
              {schedule.scheduledAt && schedule.status !== 'PUBLISHED' && !retryingText(schedule, timeZone) ? `, ${formatDateTime(schedule.scheduledAt, '—', timeZone)} (${timeZone})` : ''}
              {schedule.status === 'PUBLISHED' && schedule.releaseUrl && (
                <>
                  {' '}
                  <a href={schedule.releaseUrl} rel="noreferrer" target="_blank">
                    View on {platformLabel(schedule.integration.platform)}
                  </a>
                </>
              )}
              {schedule.status === 'FAILED' && schedule.failureReason ? `: ${schedule.failureReason}` : ''}
            </li>
          ))}
        </ul>
      )}
      {!editing && (
        <p>
          <a
            href={`/posts/${postId}`}
            onClick={(event) => {
              event.preventDefault();
              navigate(`/posts/${postId}`);
            }}
          >
            Open the post
          </a>
        </p>
      )}
    </div>
  );
}
