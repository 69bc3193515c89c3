import { retryingText, STATUS_LABELS, StatusLine } from '../calendar/status.js';
import { channelLabel } from '../platforms.js';
import { Link } from '../router.js';
import { formatDateTime } from '../format.js';
import { Avatar } from './avatar.js';
import { countedFor, hasOwnText, rootsOf, type ComposeState, type Dispatch, type Integration, type Post, type Where } from './state.js';
import { countersOf, TextArea } from './text-field.js';

/**
 * The channels: the workspace's connected ones as checkboxes for a new post; for a post being edited, its own, each
 * with its schedule's status and time (PATCH cannot add or remove a channel).
 */
export function ChannelChoices({ channels, post, selected, timeZone, dispatch }: { channels: Integration[]; post: Post | undefined; selected: string[]; timeZone: string; dispatch: Dispatch }) {
  const publishable = channels.filter((channel) => channel.connectStatus === 'ACTIVE' || post);
  return (
    <fieldset>
      <legend>Channels</legend>
      {post ? (
        <ul class="channel-choices">
          {rootsOf(post).map((root) => {
            const channel = channels.find((candidate) => candidate.id === root.integrationId);
            return (
              <li key={root.id} class="channel-choice">
                <Avatar name={root.integration.name} image={channel?.image ?? null} class="avatar small" size={28} />
                <span>
                  {channelLabel(root.integration)}{' '}
                  {/* A retry says the attempt to come, its time and why, as everywhere a schedule shows. */}
                  {retryingText(root, timeZone) ? (
                    <StatusLine schedule={root} timeZone={timeZone} />
                  ) : (
                    <>
                      <span class="badge">{STATUS_LABELS[root.status]}</span>
                      {root.scheduledAt && <span class="hint"> {formatDateTime(root.scheduledAt, '—', timeZone)}</span>}
                    </>
                  )}
                  {channel && !retryingText(root, timeZone) && <FailingNote channel={channel} />}
                </span>
              </li>
            );
          })}
        </ul>
      ) : publishable.length === 0 ? (
        <p>
          No channel yet: <Link href="/channels">connect one</Link> first.
        </p>
      ) : (
        <ul class="channel-choices">
          {publishable.map((channel) => (
            <li key={channel.id} class="channel-choice">
              <label class="checkbox">
                <input type="checkbox" checked={selected.includes(channel.id)} onChange={(event) => dispatch({ type: 'channel', id: channel.id, chosen: event.currentTarget.checked })} />
                <Avatar name={channel.name} image={channel.image} class="avatar small" size={28} />
                {channelLabel(channel)}
              </label>
              <FailingNote channel={channel} />
              {channel.tokenStatus !== 'VALID' && channel.tokenStatus !== 'EXPIRING' && <span class="hint">
                  {' '}
                  Not connected<span class="visually-hidden">: its posts fail until it is (see Channels)</span>
                </span>}
            </li>
          ))}
        </ul>
      )}
    </fieldset>
  );
}

/**
 * "Failing" beside a channel whose schedules failed or wait for a retry (its `failingSchedules`), with the latest reason
 * read out and shown on hover; Channels has the rest.
 */
function FailingNote({ channel }: { channel: Integration }) {
  if (channel.failingSchedules === 0) return null;
  const reason = channel.lastFailure?.reason;
  return (
    <span class="failing-note" title={reason ?? undefined}>
      {' '}
      Failing{reason && <span class="visually-hidden">: {reason}</span>}
    </span>
  );
}

/** "Different text for …": a text of its own per chosen channel, starting as the post's. */
export function ChannelTexts({ chosen, state, dispatch, errorAt, refusalAt }: { chosen: Integration[]; state: ComposeState; dispatch: Dispatch; errorAt: (where: Where) => string | undefined; refusalAt: (where: Where) => string | undefined }) {
  return (
    <>
      {chosen.map((channel) => {
        const own = hasOwnText(state, channel.id);
        return (
          <div key={channel.id} class="override">
            <label class="checkbox">
              <input type="checkbox" checked={own} onChange={(event) => dispatch({ type: 'ownText', id: channel.id, on: event.currentTarget.checked })} />
              Different text for {channelLabel(channel)}
            </label>
            {own && (
              <TextArea
                label={`Text for ${channel.name}`}
                value={state.overrides[channel.id]!}
                onInput={(value) => dispatch({ type: 'override', id: channel.id, value })}
                rows={4}
                counters={countersOf([channel], state.overrides[channel.id]!, 'post', (one) => countedFor(state, one))}
                error={errorAt(`channel:${channel.id}`)}
                refusal={refusalAt(`channel:${channel.id}`)}
              />
            )}
          </div>
        );
      })}
    </>
  );
}
