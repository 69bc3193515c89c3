import { useEffect, useState } from 'preact/hooks';
import { api, call } from '../api.js';
import { POLL_MS } from '../calendar/data.js';
import { Link } from '../router.js';

/**
 * The posts whose schedules failed (FAILED) or wait for an automatic retry, of one channel or of all: GET /posts
 * `failing=true` (and `integrationId`), what a channel's flag and the frame's count link to.
 */
export const failingPostsUrl = (integrationId?: string) => `/posts?failing=true${integrationId ? `&integrationId=${integrationId}` : ''}`;

/**
 * How many schedules of the workspace are failing (FAILED, or retrying), in the frame: a link "3 failing" to their
 * posts, nothing when there are none. The sum of the channels' `failingSchedules` (GET /integrations: a few rows, each
 * counted from a partial index), read again every POLL_MS while the tab is visible, and at once when it becomes so, as
 * the calendar's polling does (calendar/data.ts).
 */
export function FailingCount() {
  const [count, setCount] = useState(0);
  useEffect(() => {
    let stopped = false;
    let timer: ReturnType<typeof setTimeout> | undefined;
    let reading = false;
    const read = async () => {
      if (stopped || reading) return;
      reading = true;
      if (document.visibilityState === 'visible') {
        const result = await call(api.GET('/integrations'));
        // A failed read keeps what was shown: the count is a hint, the pages say what went wrong.
        if (result.ok && !stopped) setCount(result.data.reduce((sum, channel) => sum + channel.failingSchedules, 0));
      }
      reading = false;
      if (!stopped) {
        clearTimeout(timer);
        timer = setTimeout(read, POLL_MS);
      }
    };
    const onVisibility = () => {
      if (document.visibilityState === 'visible') void read();
    };
    void read();
    document.addEventListener('visibilitychange', onVisibility);
    return () => {
      stopped = true;
      clearTimeout(timer);
      document.removeEventListener('visibilitychange', onVisibility);
    };
  }, []);
  if (count === 0) return null;
  return (
    <p class="failing-count">
      <Link href={failingPostsUrl()}>
        {count} failing<span class="visually-hidden"> {count === 1 ? 'schedule' : 'schedules'}: failed, or waiting to be retried</span>
      </Link>
    </p>
  );
}
