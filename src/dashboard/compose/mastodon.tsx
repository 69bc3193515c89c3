import { useId, useState } from 'preact/hooks';
import { Settings2 } from 'lucide';
import { useFieldError } from '../components/form.js';
import { Icon } from '../components/icon.js';
import { channelLabel } from '../platforms.js';
import { isEditable, mastodonOptionsOf, rootsOf, VISIBILITIES, VISIBILITY_LABELS, type Channel, type ComposeState, type Dispatch, type MastodonOptions, type Post, type Visibility, type Where } from './state.js';

/**
 * A Mastodon post's own options, as its schedule's `settings` carry them to the publishing adapter
 * (src/platforms/mastodon.ts): who sees it, a content warning, and whether its images are sensitive. Mastodon's alone,
 * so named here (as `FACETS` names platforms in preview.tsx); the state and the settings sent are in state.ts.
 */

const VISIBILITY_HINTS: Record<Visibility | 'default', string> = {
  default: 'As the account posts by default (its server’s settings say which).',
  public: 'Anyone, on and off Mastodon: in public timelines, search and trends.',
  unlisted: 'Anyone who looks, but kept out of public timelines, search and trends.',
  private: 'Only the account’s followers.',
  direct: 'Only the people the text mentions (@name@server).',
};

const isSet = ({ visibility, spoilerText, sensitive }: MastodonOptions) => visibility !== null || spoilerText.trim() !== '' || sensitive;

/** The options in a few words, beside the button that shows them. */
function summaryOf({ visibility, spoilerText, sensitive }: MastodonOptions, withImages: boolean): string {
  const warning = spoilerText.trim();
  return [
    visibility ? VISIBILITY_LABELS[visibility] : 'The account’s default visibility',
    warning ? `content warning “${warning}”` : 'no content warning',
    ...(sensitive && withImages ? ['media marked sensitive'] : []),
  ].join(', ');
}

/** The options of each chosen Mastodon channel (none when no Mastodon channel is chosen). */
export function MastodonOptionsList({ chosen, state, post, dispatch, errorAt, refusalAt }: {
  chosen: Channel[];
  state: ComposeState;
  post: Post | undefined;
  dispatch: Dispatch;
  errorAt: (where: Where) => string | undefined;
  refusalAt: (where: Where) => string | undefined;
}) {
  return (
    <>
      {chosen
        .filter((channel) => channel.platform === 'MASTODON')
        .map((channel) => (
          <MastodonOptionsFields
            key={channel.id}
            channel={channel}
            options={mastodonOptionsOf(state, channel.id)}
            withImages={state.media.length > 0}
            // An edit changes the options of a schedule not yet publishing (as it changes its text).
            editable={!post || rootsOf(post).some((root) => root.integrationId === channel.id && isEditable(root))}
            dispatch={dispatch}
            error={errorAt(`options:${channel.id}`)}
            refusal={refusalAt(`options:${channel.id}`)}
          />
        ))}
    </>
  );
}

/**
 * One channel's options behind a button, said in a few words beside it while folded; open at first when one is set. Visibility (a
 * select: the account's default, or one of Mastodon's four), the content warning (counted with the text by the
 * text's counters) and, with images, "Mark media as sensitive". Under the warning, what stops the post being sent
 * because of it (a text and warning too long together, after an edit of the warning alone).
 */
function MastodonOptionsFields({ channel, options, withImages, editable, dispatch, error, refusal }: {
  channel: Channel;
  options: MastodonOptions;
  withImages: boolean;
  editable: boolean;
  dispatch: Dispatch;
  error: string | undefined;
  refusal: string | undefined;
}) {
  const id = useId();
  const [open, setOpen] = useState(() => isSet(options) || !!error || !!refusal);
  const [refused, changed] = useFieldError(refusal);
  const said = [error, refused].filter(Boolean).join(' ') || undefined;
  const change = (change: Partial<MastodonOptions>) => {
    changed();
    dispatch({ type: 'mastodon', id: channel.id, change });
  };
  const who = channelLabel(channel);
  return (
    <div class="mastodon-options">
      <div class="options-head">
        <button type="button" class="filter-toggle" aria-expanded={open ? 'true' : 'false'} aria-controls={`${id}-body`} aria-describedby={`${id}-summary`} onClick={() => setOpen(!open)}>
          <Icon icon={Settings2} />
          Mastodon options for {channel.name}
        </button>
        {/* Said beside the button while folded; open, the fields say it (it stays the button's description). */}
        <span class={open ? 'visually-hidden' : 'hint options-summary'} id={`${id}-summary`}>
          {summaryOf(options, withImages)}
        </span>
      </div>
      <div id={`${id}-body`} class="options-body" hidden={!open}>
        <fieldset class="bare" disabled={!editable}>
          <legend class="visually-hidden">Mastodon options for {who}</legend>
          {!editable && <p class="hint">Publishing or published on this channel: its options stay as they went out.</p>}
          <div class="options-row">
            <div class="field">
              <label for={`${id}-visibility`}>Visibility</label>
              <p class="hint" id={`${id}-visibility-hint`}>
                {VISIBILITY_HINTS[options.visibility ?? 'default']}
              </p>
              <select
                id={`${id}-visibility`}
                value={options.visibility ?? ''}
                onChange={(event) => change({ visibility: (event.currentTarget.value || null) as Visibility | null })}
                aria-describedby={`${id}-visibility-hint`}
              >
                <option value="">The account’s default</option>
                {VISIBILITIES.map((visibility) => (
                  <option key={visibility} value={visibility}>
                    {VISIBILITY_LABELS[visibility]}
                  </option>
                ))}
              </select>
            </div>
            <div class="field">
              <label for={`${id}-warning`}>
                Content warning<span class="optional"> (optional)</span>
              </label>
              <p class="hint" id={`${id}-warning-hint`}>
                Shown first, hiding the text and images until opened; counted with the text.
              </p>
              <input
                id={`${id}-warning`}
                type="text"
                value={options.spoilerText}
                onInput={(event) => change({ spoilerText: event.currentTarget.value })}
                aria-invalid={said ? 'true' : undefined}
                aria-describedby={[`${id}-warning-hint`, said && `${id}-warning-error`].filter(Boolean).join(' ')}
              />
              {said && (
                <p class="field-error" id={`${id}-warning-error`}>
                  {said}
                </p>
              )}
            </div>
          </div>
          {withImages && (
            <div class="options-sensitive">
              <label class="checkbox">
                <input type="checkbox" checked={options.sensitive} onChange={(event) => change({ sensitive: event.currentTarget.checked })} aria-describedby={`${id}-sensitive-hint`} />
                Mark media as sensitive
              </label>
              <p class="hint" id={`${id}-sensitive-hint`}>
                {options.spoilerText.trim() ? 'The content warning hides the images already.' : 'The images are hidden until a reader chooses to see them.'}
              </p>
            </div>
          )}
        </fieldset>
      </div>
    </div>
  );
}
