import { useEffect, useId, useMemo, useRef, useState } from 'preact/hooks';
import { api, call, type ApiError, type Result, type Schema } from '../api.js';
import type { PageProps } from '../app.js';
import { ErrorMessage, IdChoices } from '../components/form.js';
import { Loading, Page } from '../components/page.js';
import { PostPreview } from '../compose/preview.js';
import { fileRefusal, uploadFile, withdrawn } from '../compose/upload.js';
import { formatSlotInZone, isoToZoned, zonedToIso } from '../zoned-time.js';
import { formatBytes, formatNumber } from '../format.js';
import { ApprovalBadge } from '../calendar/status.js';
import { useAction, useLoad } from '../hooks.js';
import { Link, navigate } from '../router.js';
import {
  contentTooLongMessage,
  mediaRuleMessage,
  measure,
  rules,
  threadRefusedMessage,
  UPLOAD_IMAGE_TYPES,
  type AttachedImage,
  type Platform,
} from '../../platforms/rules.js';

type Integration = Schema<'Integration'>;
type Tag = Schema<'Tag'>;
type Post = Schema<'Post'>;
type Action = 'DRAFT' | 'NEXT_WINDOW' | 'SCHEDULED_TIME' | 'PUBLISH_NOW' | 'KEEP';

const PLATFORM_LABELS: Record<Platform, string> = { BLUESKY: 'Bluesky', LINKEDIN: 'LinkedIn' };

/** A file being uploaded, or media already attached (editing a post). */
interface MediaItem {
  key: string;
  name: string;
  mimeType: string;
  size: number;
  /** What the preview shows: the file read as a data: URL (the CSP allows data: images), then the stored image. */
  src: string;
  step: 'hashing' | 'uploading' | 'completing' | 'done' | 'failed';
  progress: number;
  error?: string;
  mediaId?: string;
  /** An upload made on this page (not one the post already had): deleted again if the image is removed before saving. */
  uploadId?: string;
  variantsStatus?: AttachedImage['variantsStatus'];
  publishedBytes?: number | null;
  altText: string;
}

/** The composer: `/compose` for a new post, `/posts/{id}` to change one (GET, then PATCH /posts/{id}). */
export function ComposePage({ postId }: PageProps & { postId?: string }) {
  const channels = useLoad(() => call(api.GET('/integrations')));
  const tags = useLoad(() => call(api.GET('/tags', { params: { query: { limit: 100 } } })));
  const workspace = useLoad(() => call(api.GET('/workspace')));
  const post = useLoad<Post | null>(async () => (postId ? call(api.GET('/posts/{id}', { params: { path: { id: postId } } })) : { ok: true, data: null }), [postId]);
  const error = channels.error ?? tags.error ?? workspace.error ?? post.error;
  // After a move from one post (or /compose) to another, the composer waits for the post now asked for.
  const ready = channels.data && tags.data && workspace.data && (postId ? post.data?.id === postId : post.data === null);
  return (
    <Page
      title={postId ? 'Edit post' : 'Compose'}
      intro={postId ? 'Change the post’s text, comment, images and tags, or schedule its drafts.' : 'Write a post once, for every channel you choose.'}
    >
      <ErrorMessage message={error?.message} />
      {ready && post.data && <ApprovalBadge post={post.data} />}
      {!ready && !error && <Loading what="the composer" />}
      {ready && (
        <Composer
          key={post.data?.id ?? 'new'}
          channels={channels.data!}
          tags={tags.data!.items}
          onTagCreated={(tag) => tags.setData((list) => list && { ...list, items: [...list.items, tag].sort((a, b) => a.slug.localeCompare(b.slug)) })}
          timeZone={workspace.data!.timeZone}
          post={post.data ?? undefined}
          onSaved={() => void post.reload()}
        />
      )}
    </Page>
  );
}

interface ComposerProps {
  channels: Integration[];
  tags: Tag[];
  onTagCreated: (tag: Tag) => void;
  timeZone: string;
  post: Post | undefined;
  onSaved: () => void;
}

let nextKey = 0;

function Composer({ channels, tags, onTagCreated, timeZone, post, onSaved }: ComposerProps) {
  const editing = !!post;
  const roots = post?.schedules.filter((schedule) => schedule.threadOrder === 0) ?? [];
  const form = useRef<HTMLFormElement>(null);
  const summary = useRef<HTMLDivElement>(null);
  const [selected, setSelected] = useState<string[]>(() => (post ? roots.map((root) => root.integrationId) : []));
  const [content, setContent] = useState(post?.content ?? '');
  const [overrides, setOverrides] = useState<Record<string, string>>(() =>
    Object.fromEntries(roots.filter((root) => root.scheduledContent !== post!.content).map((root) => [root.integrationId, root.scheduledContent])),
  );
  const [thread, setThread] = useState<string[]>(() => (post ? threadOf(post) : []));
  const [firstComment, setFirstComment] = useState(roots[0]?.firstComment ?? '');
  const [tagIds, setTagIds] = useState<string[]>(post?.tagIds ?? []);
  const [evergreen, setEvergreen] = useState(post?.isEvergreen ?? false);
  const [media, setMedia] = useState<MediaItem[]>(() => (post ? post.attachments.map(attachedItem) : []));
  const hasDrafts = roots.some((root) => root.status === 'DRAFT');
  const [action, setAction] = useState<Action>(editing ? 'KEEP' : 'NEXT_WINDOW');
  const draftAt = roots.find((root) => root.scheduledAt)?.scheduledAt;
  const [date, setDate] = useState(() => (draftAt ? isoToZoned(draftAt, timeZone).date : ''));
  const [time, setTime] = useState(() => (draftAt ? isoToZoned(draftAt, timeZone).time : ''));
  const [problemsShown, setProblemsShown] = useState<string[]>([]);
  const [done, setDone] = useState<{ postId: string; message: string; action: Action } | undefined>();
  const submit = useAction();
  const idempotencyKey = useRef<string | undefined>(undefined);

  const chosen = channels.filter((channel) => selected.includes(channel.id));
  const textFor = (id: string) => overrides[id] ?? content;
  const threadParts = thread.filter((part) => part.trim() !== '');

  /** What the API would refuse, worded and numbered as it words them, in the order it checks them. */
  const problems = useMemo(() => {
    const found: string[] = [];
    const images = attachedImages(media);
    const tooLong = (field: string, channel: Pick<Integration, 'name' | 'platform'>, text: string, as: 'post' | 'comment' = 'post') => {
      const refusal = contentTooLongMessage(field, { name: channel.name, platform: channel.platform }, text, as);
      if (refusal) found.push(refusal);
    };
    if (post) {
      // Editing: what the PATCH changes, checked where the API checks it; a publishing or published schedule takes nothing.
      const edits = textEdits(post, content, overrides, thread);
      const live = roots.filter(isEditable);
      edits.schedules.forEach((edit, index) => tooLong(`body.schedules[${index}].content`, edit.integration, edit.content));
      if (edits.content !== undefined) {
        for (const root of live) if (follows(post, root) && !edits.schedules.some((edit) => edit.id === root.id)) tooLong('body.content', root.integration, edits.content);
      }
      if (firstComment.trim() && firstComment !== (roots[0]?.firstComment ?? '')) for (const root of live) tooLong('body.firstComment', root.integration, firstComment, 'comment');
      for (const root of live) {
        const violation = mediaRuleMessage('body.media', root.integration, images);
        if (violation) found.push(violation);
      }
      return found;
    }
    const overrideIndex = chosen.filter((channel) => overrides[channel.id] !== undefined).map((channel) => channel.id);
    chosen.forEach((channel) => {
      const target = { name: channel.name, platform: channel.platform };
      if (threadParts.length) {
        const refused = threadRefusedMessage('rows[0].thread', target);
        if (refused) found.push(refused);
      }
      const own = overrides[channel.id] !== undefined;
      tooLong(own ? `rows[0].overrides[${overrideIndex.indexOf(channel.id)}].content` : 'rows[0].content', channel, textFor(channel.id));
      if (rules[channel.platform].threads) threadParts.forEach((part, index) => tooLong(`rows[0].thread[${index}].content`, channel, part));
      if (firstComment.trim()) tooLong('rows[0].firstComment', channel, firstComment, 'comment');
      const violation = mediaRuleMessage('rows[0].media', target, images);
      if (violation) found.push(violation);
    });
    return found;
  }, [chosen, content, overrides, thread, firstComment, media, post]);

  /** What must be done before anything is sent (not a platform's rule): no channel, no text, uploads under way. */
  const missing = [
    chosen.length === 0 ? 'Choose at least one channel.' : '',
    content.trim() === '' ? 'Write the post’s text.' : '',
    chosen.some((channel) => overrides[channel.id] !== undefined && overrides[channel.id]!.trim() === '') ? 'A channel’s own text is empty: write it, or use the post’s text.' : '',
    editing && thread.some((part) => part.trim() === '') ? 'A thread part is empty: write it (a part is removed by deleting its schedule in the calendar).' : '',
    media.some((item) => item.step !== 'done' && item.step !== 'failed') ? 'Wait for the images to finish uploading.' : '',
    media.some((item) => item.step === 'failed') ? 'Remove the images that could not be uploaded.' : '',
    action === 'SCHEDULED_TIME' && !zonedToIso(date, time, timeZone) ? `Choose the date and time (${timeZone}).` : '',
    action === 'SCHEDULED_TIME' && zonedToIso(date, time, timeZone) && Date.parse(zonedToIso(date, time, timeZone)!) <= Date.now() ? 'The chosen time is in the past.' : '',
  ].filter(Boolean);

  // A change after a refusal makes the refusal's list stale: it follows what is typed now.
  useEffect(() => {
    if (problemsShown.length) setProblemsShown([...missing, ...problems]);
  }, [problems.join('\n'), missing.join('\n')]);

  const onSubmit = async (event: Event) => {
    event.preventDefault();
    if (submit.busy) return;
    setDone(undefined);
    submit.clearError();
    const blocking = [...missing, ...problems];
    setProblemsShown(blocking);
    if (blocking.length) {
      requestAnimationFrame(() => summary.current?.focus());
      return;
    }
    const mediaList = media.map((item) => ({ id: item.mediaId!, ...(item.altText.trim() && { altText: item.altText.trim() }) }));
    const scheduledAt = action === 'SCHEDULED_TIME' ? zonedToIso(date, time, timeZone)! : undefined;
    let saved: Result<{ postId: string; message: string }>;
    if (!post) {
      const overrideList = chosen.filter((channel) => overrides[channel.id] !== undefined).map((channel) => ({ integrationId: channel.id, content: overrides[channel.id]! }));
      const body = {
        rows: [
          {
            content,
            ...(scheduledAt && { scheduledAt }),
            ...(tagIds.length && { tagIds }),
            ...(evergreen && { isEvergreen: true }),
            ...(firstComment.trim() && { firstComment }),
            ...(threadParts.length && { thread: threadParts.map((part) => ({ content: part })) }),
            ...(overrideList.length && { overrides: overrideList }),
            ...(mediaList.length && { media: mediaList }),
          },
        ],
        shared: { selectedIntegrations: chosen.map((channel) => channel.id) },
        postAction: action as Exclude<Action, 'KEEP'>,
      };
      // One key per post being written, kept across retries of a submit whose answer was lost, so a retry creates one post.
      idempotencyKey.current ??= newIdempotencyKey();
      const key = idempotencyKey.current;
      saved = await submit.run(() => call(api.POST('/posts', { body, headers: { 'Idempotency-Key': key } })));
    } else {
      // Only what changed: a schedule that turned PUBLISHING since the page loaded refuses any change named to it, and
      // replacing the media or tags with the same list would still rewrite them.
      const edits = textEdits(post, content, overrides, thread);
      const comment = firstComment.trim() ? firstComment : null;
      const body = {
        ...(edits.content !== undefined && { content: edits.content }),
        ...(!sameList(tagIds, post.tagIds) && { tagIds }),
        ...(evergreen !== post.isEvergreen && { isEvergreen: evergreen }),
        ...(comment !== (roots[0]?.firstComment ?? null) && { firstComment: comment }),
        ...(!sameList(mediaList, post.attachments.map((a) => ({ id: a.mediaId, ...(a.altText && { altText: a.altText }) }))) && { media: mediaList }),
        ...(edits.schedules.length && { schedules: edits.schedules.map(({ id, content }) => ({ id, content })) }),
        ...(action !== 'KEEP' && action !== 'DRAFT' && hasDrafts && { postAction: action, ...(scheduledAt && { scheduledAt }) }),
      };
      saved = await submit.run(() => call(api.PATCH('/posts/{id}', { params: { path: { id: post.id } }, body })));
    }
    if (!saved.ok) {
      requestAnimationFrame(() => form.current?.querySelector<HTMLElement>('.submit-error')?.focus());
      return;
    }
    setProblemsShown([]);
    setDone({ postId: saved.data.postId, message: saved.data.message, action });
    // Saved images belong to the post now: removing one from the form must not delete its upload.
    setMedia((list) => list.map(({ uploadId: _saved, ...item }) => item));
    if (post) onSaved();
    else {
      idempotencyKey.current = undefined;
      setContent('');
      setOverrides({});
      setThread([]);
      setFirstComment('');
      setTagIds([]);
      setEvergreen(false);
      setMedia([]);
      setSelected([]);
      setDate('');
      setTime('');
    }
  };

  const labelOf = (channel: Pick<Integration, 'name' | 'platform'>) => `${channel.name} (${PLATFORM_LABELS[channel.platform]})`;
  /** A thread part's field, counted for the channels that publish it. */
  const partField = (index: number, part: string, channels: CounterSpec['channel'][]) => (
    <TextArea
      label={`Thread part ${index + 2}`}
      value={part}
      onInput={(value) => setThread((list) => list.map((item, at) => (at === index ? value : item)))}
      rows={3}
      counters={channels.map((channel) => ({ channel, text: part, as: 'post' as const }))}
    />
  );
  const publishable = channels.filter((channel) => channel.connectStatus === 'ACTIVE' || editing);

  return (
    <div class="composer">
      <form ref={form} class="compose-form" onSubmit={onSubmit} aria-busy={submit.busy ? 'true' : undefined} noValidate>
        <fieldset>
          <legend>Channels</legend>
          {editing ? (
            <ul class="channel-choices">
              {roots.map((root) => {
                const channel = channels.find((candidate) => candidate.id === root.integrationId);
                return (
                  <li key={root.id} class="channel-choice">
                    <ChannelAvatar name={root.integration.name} image={channel?.image ?? null} />
                    <span>
                      {labelOf(root.integration)} <span class="badge">{STATUS_LABELS[root.status]}</span>
                      {root.scheduledAt && <span class="hint"> {formatSlotInZone(root.scheduledAt, timeZone)}</span>}
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
                    <input
                      type="checkbox"
                      checked={selected.includes(channel.id)}
                      onChange={(event) =>
                        setSelected((list) => (event.currentTarget.checked ? [...list, channel.id] : list.filter((id) => id !== channel.id)))
                      }
                    />
                    <ChannelAvatar name={channel.name} image={channel.image} />
                    {labelOf(channel)}
                  </label>
                  {channel.tokenStatus !== 'VALID' && channel.tokenStatus !== 'EXPIRING' && (
                    <span class="hint"> not connected: its posts fail until it is (see Channels)</span>
                  )}
                </li>
              ))}
            </ul>
          )}
        </fieldset>

        <TextArea
          label="Text"
          value={content}
          onInput={setContent}
          rows={6}
          hint={chosen.length > 1 ? 'Published on every channel that has no text of its own.' : undefined}
          counters={chosen.filter((channel) => overrides[channel.id] === undefined).map((channel) => ({ channel, text: content, as: 'post' as const }))}
        />

        {chosen.map((channel) => {
          const own = overrides[channel.id] !== undefined;
          return (
            <div key={channel.id} class="override">
              <label class="checkbox">
                <input
                  type="checkbox"
                  checked={own}
                  onChange={(event) => {
                    const on = event.currentTarget.checked;
                    setOverrides((map) => {
                      const next = { ...map };
                      if (on) next[channel.id] = content;
                      else delete next[channel.id];
                      return next;
                    });
                  }}
                />
                Different text for {labelOf(channel)}
              </label>
              {own && (
                <TextArea
                  label={`Text for ${channel.name}`}
                  value={overrides[channel.id]!}
                  onInput={(value) => setOverrides((map) => ({ ...map, [channel.id]: value }))}
                  rows={4}
                  counters={[{ channel, text: overrides[channel.id]!, as: 'post' }]}
                />
              )}
            </div>
          );
        })}

        <fieldset>
          <legend>Thread</legend>
          {editing ? (
            thread.length ? (
              <>
                <p class="hint">A part is changed here while it is not published; it is removed by deleting its schedule in the calendar.</p>
                {thread.map((part, index) =>
                  partsAt(post, index + 1).some(isEditable) ? (
                    <div key={index} class="thread-part">
                      {partField(index, part, partsAt(post, index + 1).filter(isEditable).map((schedule) => schedule.integration))}
                    </div>
                  ) : (
                    <p key={index} class="thread-readonly">
                      <strong>Thread part {index + 2}</strong> ({STATUS_LABELS[partsAt(post, index + 1)[0]!.status]}): {part}
                    </p>
                  ),
                )}
              </>
            ) : (
              <p class="hint">No thread parts. Parts are added when a post is written.</p>
            )
          ) : (
            <>
              <p class="hint">Replies published under the post, in order: Bluesky only (LinkedIn has no threads).</p>
              {thread.map((part, index) => (
                <div key={index} class="thread-part">
                  {partField(index, part, chosen.filter((channel) => rules[channel.platform].threads))}
                  <button type="button" onClick={() => setThread((list) => list.filter((_, at) => at !== index))}>
                    Remove thread part {index + 2}
                  </button>
                </div>
              ))}
              {thread.length < 25 && (
                <button type="button" onClick={() => setThread((list) => [...list, ''])}>
                  Add a thread part
                </button>
              )}
            </>
          )}
        </fieldset>

        <TextArea
          label="First comment"
          optional
          value={firstComment}
          onInput={setFirstComment}
          rows={3}
          hint="Published as the first reply under the post, on every channel."
          counters={firstComment ? chosen.map((channel) => ({ channel, text: firstComment, as: 'comment' as const })) : []}
        />

        <MediaPicker media={media} setMedia={setMedia} chosen={chosen} />

        <TagPicker tags={tags} tagIds={tagIds} setTagIds={setTagIds} onTagCreated={onTagCreated} />

        <div class="evergreen-choice">
          <label class="checkbox">
            <input type="checkbox" name="isEvergreen" checked={evergreen} onChange={(event) => setEvergreen(event.currentTarget.checked)} aria-describedby="compose-evergreen-hint" />
            Evergreen
          </label>
          <p class="hint" id="compose-evergreen-hint">
            Worth posting again: the workspace’s recycle rules (Recycling) post it again once it has been published.
          </p>
        </div>

        <fieldset class="when">
          <legend>When</legend>
          {(editing
            ? ([['KEEP', hasDrafts ? 'Keep drafts as drafts' : 'Keep the schedule as it is']] as [Action, string][]).concat(
                hasDrafts
                  ? [
                      ['NEXT_WINDOW', 'Next free posting slot'],
                      ['SCHEDULED_TIME', 'At a chosen time'],
                      ['PUBLISH_NOW', 'Publish now'],
                    ]
                  : [],
              )
            : ([
                ['DRAFT', 'Save as a draft'],
                ['NEXT_WINDOW', 'Next free posting slot'],
                ['SCHEDULED_TIME', 'At a chosen time'],
                ['PUBLISH_NOW', 'Publish now'],
              ] as [Action, string][])
          ).map(([value, label]) => (
            <label key={value} class="radio">
              <input type="radio" name="when" value={value} checked={action === value} onChange={() => setAction(value)} />
              {label}
            </label>
          ))}
          {action === 'SCHEDULED_TIME' && (
            <div class="when-time">
              <p class="hint" id="when-zone">
                In the workspace’s time zone, {timeZone.replaceAll('_', ' ')}.
              </p>
              <label>
                Date
                <input type="date" value={date} onInput={(event) => setDate(event.currentTarget.value)} aria-describedby="when-zone" />
              </label>
              <label>
                Time
                <input type="time" value={time} onInput={(event) => setTime(event.currentTarget.value)} aria-describedby="when-zone" />
              </label>
            </div>
          )}
          {action === 'NEXT_WINDOW' && <p class="hint">The earliest free slot of the workspace’s posting windows, per channel; the answer says which.</p>}
        </fieldset>

        <div ref={summary} tabIndex={-1} class={problemsShown.length ? 'problems' : undefined} role={problemsShown.length ? 'alert' : undefined}>
          {problemsShown.length > 0 && (
            <>
              <p class="error">Not sent: {problemsShown.length === 1 ? 'one thing needs' : `${problemsShown.length} things need`} changing first.</p>
              <ul>
                {problemsShown.map((problem) => (
                  <li key={problem}>{problem}</li>
                ))}
              </ul>
            </>
          )}
        </div>
        {submit.error && <SubmitError error={submit.error} />}
        <div class="actions">
          <button type="submit" class="primary" disabled={submit.busy} aria-busy={submit.busy ? 'true' : undefined}>
            {submit.busy ? 'Saving…' : submitLabel(action, editing)}
          </button>
        </div>
        {done && <Outcome postId={done.postId} message={done.message} action={done.action} timeZone={timeZone} editing={editing} />}
      </form>

      <section class="previews" aria-labelledby="preview-heading">
        <h2 id="preview-heading">Preview</h2>
        {chosen.length === 0 && <p class="hint">Choose a channel to see the post as it will look there.</p>}
        {chosen.map((channel) => (
          <PostPreview
            key={channel.id}
            platform={channel.platform}
            name={channel.name}
            avatar={channel.image}
            text={textFor(channel.id)}
            thread={editing || rules[channel.platform].threads ? threadParts : []}
            firstComment={firstComment}
            images={media.map((item) => ({ key: item.key, src: item.src, alt: item.altText }))}
          />
        ))}
      </section>
    </div>
  );
}

const STATUS_LABELS: Record<Schema<'Schedule'>['status'], string> = {
  DRAFT: 'Draft',
  SCHEDULED: 'Scheduled',
  PUBLISHING: 'Publishing',
  PUBLISHED: 'Published',
  FAILED: 'Failed',
};

const sameList = (a: unknown[], b: unknown[]) => JSON.stringify(a) === JSON.stringify(b);

/** Whether PATCH /posts/{id} may change the schedule (not while it is publishing or published). */
const isEditable = (schedule: Schema<'Schedule'>) => schedule.status === 'DRAFT' || schedule.status === 'FAILED' || schedule.status === 'SCHEDULED';

/** Whether the schedule publishes the post's own text, so that a change of `content` reaches it (as the API decides). */
const follows = (post: Post, root: Schema<'Schedule'>) => root.scheduledContent === post.content;

/**
 * The texts an edit changes, as PATCH /posts/{id} takes them: `content` when the post's text changed, and in
 * `schedules` only the changeable schedules whose text is their own and changed (an override added, changed or removed;
 * a thread part rewritten), so that one which started publishing meanwhile is not named, and nothing unchanged is sent.
 */
function textEdits(post: Post, content: string, overrides: Record<string, string>, thread: string[]) {
  const written = threadOf(post);
  const textOf = (schedule: Schema<'Schedule'>) =>
    schedule.threadOrder === 0
      ? (overrides[schedule.integrationId] ?? content)
      : thread[schedule.threadOrder - 1] !== written[schedule.threadOrder - 1]
        ? thread[schedule.threadOrder - 1]!
        : schedule.scheduledContent;
  return {
    content: content === post.content ? undefined : content,
    schedules: post.schedules
      .filter((schedule) => isEditable(schedule) && textOf(schedule) !== schedule.scheduledContent)
      // A first schedule publishing the post's text follows `content` without being named.
      .filter((schedule) => !(schedule.threadOrder === 0 && follows(post, schedule) && textOf(schedule) === content))
      .map((schedule) => ({ id: schedule.id, content: textOf(schedule), integration: schedule.integration })),
  };
}

function submitLabel(action: Action, editing: boolean): string {
  if (editing) return action === 'KEEP' ? 'Save changes' : action === 'PUBLISH_NOW' ? 'Save and publish now' : 'Save and schedule';
  return { DRAFT: 'Save draft', NEXT_WINDOW: 'Schedule at the next free slot', SCHEDULED_TIME: 'Schedule', PUBLISH_NOW: 'Publish now', KEEP: 'Save' }[action];
}

/** The post's thread parts at `order` (1 is the second part), one per channel that has a thread. */
const partsAt = (post: Post, order: number) => post.schedules.filter((schedule) => schedule.threadOrder === order);

function threadOf(post: Post): string[] {
  const first = post.schedules.find((schedule) => schedule.threadOrder === 0);
  return post.schedules
    .filter((schedule) => schedule.threadOrder > 0 && schedule.threadRootScheduleId === first?.id)
    .sort((a, b) => a.threadOrder - b.threadOrder)
    .map((schedule) => schedule.scheduledContent);
}

function attachedItem(attachment: Post['attachments'][number]): MediaItem {
  const media = attachment.media;
  return {
    key: `attached-${attachment.id}`,
    name: media?.url.split('/').pop() ?? 'image',
    mimeType: mimeOf(media?.url ?? ''),
    size: media?.size ?? 0,
    src: media?.variants['1:1']?.url ?? media?.url ?? '',
    step: 'done',
    progress: 1,
    mediaId: attachment.mediaId,
    variantsStatus: media?.variantsStatus,
    publishedBytes: media?.variants.source?.sizeBytes ?? null,
    altText: attachment.altText ?? '',
  };
}

function mimeOf(url: string): string {
  const extension = /\.(\w+)$/.exec(url)?.[1]?.toLowerCase();
  return extension === 'png' ? 'image/png' : extension === 'gif' ? 'image/gif' : extension === 'webp' ? 'image/webp' : 'image/jpeg';
}

/** The media as the platform rules see them (src/platforms/rules.ts): what the API checks at submit. */
function attachedImages(media: MediaItem[]): AttachedImage[] {
  return media.map((item) => ({
    mimeType: item.mimeType,
    altText: item.altText.trim() || null,
    variantsStatus: item.variantsStatus ?? 'pending',
    publishedBytes: item.publishedBytes ?? null,
  }));
}

function ChannelAvatar({ name, image }: { name: string; image: string | null }) {
  const [broken, setBroken] = useState(false);
  if (image && !broken) return <img class="avatar small" src={image} alt="" width={28} height={28} onError={() => setBroken(true)} />;
  return (
    <span class="avatar small initial" aria-hidden="true">
      {(name.trim()[0] ?? '?').toUpperCase()}
    </span>
  );
}

interface CounterSpec {
  channel: Pick<Integration, 'id' | 'name' | 'platform'>;
  text: string;
  as: 'post' | 'comment';
}

/**
 * A text field with one counter per channel that publishes it, counted by the platform's own rule (the module the
 * API checks with). A counter warns from 90 % of the limit and turns into an error the moment the text passes it; a
 * polite live region says so when it changes state (not at every key).
 */
function TextArea({ label, value, onInput, rows, hint, optional, counters }: { label: string; value: string; onInput: (value: string) => void; rows: number; hint?: string; optional?: boolean; counters: CounterSpec[] }) {
  const id = useId();
  const states = counters.map((counter) => counterState(counter));
  const over = states.some((state) => state.tone === 'over');
  const announcement = states
    .filter((state) => state.tone !== 'ok')
    .map((state) => state.announce)
    .join(' ');
  return (
    <div class="field">
      <label for={id}>
        {label}
        {optional && <span class="optional"> (optional)</span>}
      </label>
      {hint && (
        <p class="hint" id={`${id}-hint`}>
          {hint}
        </p>
      )}
      <textarea
        id={id}
        class="compose-text"
        rows={rows}
        value={value}
        onInput={(event) => onInput(event.currentTarget.value)}
        aria-invalid={over ? 'true' : undefined}
        aria-describedby={[hint && `${id}-hint`, counters.length && `${id}-counters`].filter(Boolean).join(' ') || undefined}
      />
      {counters.length > 0 && (
        <ul class="counters" id={`${id}-counters`}>
          {states.map((state) => (
            <li key={state.key} class={`counter ${state.tone}`} data-channel={state.name}>
              {state.text}
            </li>
          ))}
        </ul>
      )}
      <p class="visually-hidden" aria-live="polite">
        {announcement}
      </p>
    </div>
  );
}

function counterState({ channel, text, as }: CounterSpec) {
  const measured = measure(text);
  const limits = rules[channel.platform].limits[as === 'comment' ? 'comment' : 'text'];
  // The limit nearest to being passed is the one shown (Bluesky: characters, or bytes for text of many multi-byte ones).
  const nearest = limits.map((limit) => ({ ...limit, used: measured[limit.unit] })).sort((a, b) => b.used / b.limit - a.used / a.limit)[0]!;
  // Over is the API's own judgement (the shared rule), and when over, its numbers are the ones shown.
  const found = rules[channel.platform].checkText(text, as);
  const tone = found ? 'over' : nearest.used >= nearest.limit * 0.9 ? 'warn' : 'ok';
  const who = `${channel.name} (${PLATFORM_LABELS[channel.platform]})`;
  const shown = found ? { used: found.length, limit: found.limit, label: limits.find((limit) => limit.unit === found.unit)?.label ?? found.unit } : nearest;
  const counted = `${formatNumber(shown.used)} / ${formatNumber(shown.limit)} ${shown.label}`;
  const text_ = found
    ? `${who}: ${counted}, ${formatNumber(found.length - found.limit)} over the limit (${found.length} ${found.unit}; ${rules[channel.platform].label} allows at most ${found.limit})`
    : `${who}: ${counted}`;
  const announce = tone === 'over' ? `${who}: over the limit.` : `${who}: ${formatNumber(nearest.limit - nearest.used)} ${nearest.label} left.`;
  return { key: `${channel.id}-${as}`, name: channel.name, tone, text: text_, announce: tone === 'warn' ? announce.replace(/\d[\d,]* (\w+) left/, 'near the limit') : announce };
}

/** The images: picked or dropped, each uploaded at once with its progress, its alt text, and the platforms' rules. */
function MediaPicker({ media, setMedia, chosen }: { media: MediaItem[]; setMedia: (update: (list: MediaItem[]) => MediaItem[]) => void; chosen: Integration[] }) {
  const [dragging, setDragging] = useState(false);
  const [refused, setRefused] = useState<string[]>([]);
  const update = (key: string, change: Partial<MediaItem>) => setMedia((list) => list.map((item) => (item.key === key ? { ...item, ...change } : item)));

  const add = (files: FileList | null) => {
    if (!files) return;
    const refusals: string[] = [];
    for (const file of [...files]) {
      const refusal = fileRefusal(file);
      if (refusal) {
        refusals.push(refusal);
        continue;
      }
      const key = `upload-${++nextKey}`;
      setMedia((list) => [...list, { key, name: file.name, mimeType: file.type, size: file.size, src: '', step: 'hashing', progress: 0, altText: '' }]);
      const reader = new FileReader();
      reader.onload = () => update(key, { src: String(reader.result) });
      reader.readAsDataURL(file);
      void uploadFile(
        file,
        (step, progress) => update(key, { step, progress }),
        (uploadId) => update(key, { uploadId }),
      ).then((result) => {
        if (result.ok) {
          update(key, { step: 'done', progress: 1, mediaId: result.data.mediaId, variantsStatus: result.data.variantsStatus, publishedBytes: result.data.variants.source?.sizeBytes ?? null });
        } else update(key, { step: 'failed', error: result.error.message });
      });
    }
    setRefused(refusals);
  };

  const platforms = [...new Set(chosen.map((channel) => channel.platform))];
  return (
    <fieldset class="media">
      <legend>Images</legend>
      <div
        class={dragging ? 'dropzone dragging' : 'dropzone'}
        onDragOver={(event) => {
          event.preventDefault();
          setDragging(true);
        }}
        onDragLeave={() => setDragging(false)}
        onDrop={(event) => {
          event.preventDefault();
          setDragging(false);
          add(event.dataTransfer?.files ?? null);
        }}
      >
        <label for="compose-files">Add images</label>
        <p class="hint" id="compose-files-hint">
          Drop images here, or choose them: JPEG, PNG, WebP or GIF, up to {formatBytes(20 * 1024 * 1024)} each.
        </p>
        <input
          id="compose-files"
          type="file"
          multiple
          accept={UPLOAD_IMAGE_TYPES.join(',')}
          aria-describedby="compose-files-hint"
          onChange={(event) => {
            add(event.currentTarget.files);
            event.currentTarget.value = '';
          }}
        />
      </div>
      {refused.map((refusal) => (
        <p key={refusal} class="error" role="alert">
          {refusal}
        </p>
      ))}
      {platforms.length > 0 && (
        <ul class="media-rules">
          {platforms.map((platform) => {
            const limits = rules[platform].limits;
            return (
              <li key={platform}>
                <strong>{PLATFORM_LABELS[platform]}:</strong> at most {limits.images} images
                {limits.imageTypes.length < UPLOAD_IMAGE_TYPES.length ? `, ${limits.imageTypes.map((type) => type.replace('image/', '').toUpperCase()).join(', ')} only` : ''}
                {limits.imageBytes ? `, each published at most ${formatNumber(limits.imageBytes)} bytes (made to fit)` : ''}; alt text up to {formatNumber(limits.altText.limit)}{' '}
                {limits.altText.unit === 'graphemes' ? 'characters' : 'characters (UTF-16)'}.
              </li>
            );
          })}
        </ul>
      )}
      {media.length > 0 && (
        <ul class="media-list">
          {media.map((item, index) => (
            <li key={item.key} class="media-item">
              {item.src ? <img src={item.src} alt="" class="media-thumb" /> : <span class="media-thumb" />}
              <div class="media-body">
                <p class="media-name">
                  {item.name} <span class="hint">({formatBytes(item.size)})</span>
                </p>
                {item.step !== 'done' && item.step !== 'failed' && (
                  <p class="media-progress">
                    <progress max={100} value={Math.round(item.progress * 100)} aria-label={`Uploading ${item.name}`} />{' '}
                    <span>{item.step === 'hashing' ? 'Computing its checksum…' : item.step === 'uploading' ? `Uploading… ${Math.round(item.progress * 100)} %` : 'Finishing…'}</span>
                  </p>
                )}
                {item.step === 'done' && <p class="success">Uploaded</p>}
                {item.step === 'failed' && <p class="error">Not uploaded: {item.error}</p>}
                <div class="field">
                  <label for={`${item.key}-alt`}>Alt text for {item.name}</label>
                  <textarea
                    id={`${item.key}-alt`}
                    rows={2}
                    value={item.altText}
                    onInput={(event) => update(item.key, { altText: event.currentTarget.value })}
                  />
                </div>
                <button
                  type="button"
                  onClick={() => {
                    // An image uploaded here and not saved yet is deleted, so it stops counting against the allowance.
                    if (item.uploadId) void withdrawn(item.uploadId, null);
                    setMedia((list) => list.filter((other) => other.key !== item.key));
                  }}
                >
                  Remove image {index + 1}
                  <span class="visually-hidden"> ({item.name})</span>
                </button>
              </div>
            </li>
          ))}
        </ul>
      )}
    </fieldset>
  );
}

function TagPicker({ tags, tagIds, setTagIds, onTagCreated }: { tags: Tag[]; tagIds: string[]; setTagIds: (update: (list: string[]) => string[]) => void; onTagCreated: (tag: Tag) => void }) {
  const [name, setName] = useState('');
  const create = useAction();
  const add = async () => {
    if (!name.trim() || create.busy) return;
    const result = await create.run(() => call(api.POST('/tags', { body: { name: name.trim() } })));
    if (!result.ok) return;
    onTagCreated(result.data);
    setTagIds((list) => [...list, result.data.id]);
    setName('');
  };
  return (
    <fieldset class="tags">
      <legend>Tags</legend>
      {tags.length === 0 && <p class="hint">No tags yet.</p>}
      <IdChoices items={tags} idOf={(tag) => tag.id} labelOf={(tag) => tag.name} chosen={tagIds} onChange={(ids) => setTagIds(() => ids)} />
      <div class="new-tag">
        <label for="compose-new-tag">New tag</label>
        <input
          id="compose-new-tag"
          type="text"
          value={name}
          onInput={(event) => setName(event.currentTarget.value)}
          onKeyDown={(event) => {
            if (event.key === 'Enter') {
              event.preventDefault();
              void add();
            }
          }}
        />
        <button type="button" onClick={add} disabled={create.busy} aria-busy={create.busy ? 'true' : undefined}>
          {create.busy ? 'Creating…' : 'Create tag'}
        </button>
      </div>
      <ErrorMessage message={create.error?.message} />
    </fieldset>
  );
}

/** A refusal of the API (POST_QUOTA_EXCEEDED, PAYMENT_REQUIRED, CONTENT_TOO_LONG…): its message, the form kept as it was. */
function SubmitError({ error }: { error: ApiError }) {
  const lead: Record<string, string> = {
    POST_QUOTA_EXCEEDED: 'The monthly post quota is spent.',
    PAYMENT_REQUIRED: 'Nothing can be scheduled or published now.',
    CONTENT_TOO_LONG: 'A text is too long for a channel.',
    MEDIA_RULE_VIOLATED: 'The images break a channel’s rules.',
    STORAGE_QUOTA_EXCEEDED: 'The storage allowance is spent.',
  };
  return (
    <div class="submit-error" role="alert" tabIndex={-1}>
      <p class="error">
        {lead[error.code] ? `${lead[error.code]} ` : ''}
        {error.message}
      </p>
      <p class="hint">Nothing was saved; what you wrote is kept.</p>
    </div>
  );
}

/**
 * What the save did: which slot or time each channel got (the answer of POST /posts names none, so the post is read
 * back), and after "Publish now", each channel's status until it is published or failed (read every second, then less often).
 */
function Outcome({ postId, message, action, timeZone, editing }: { postId: string; message: string; action: Action; timeZone: string; editing: boolean }) {
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
  const roots = post?.schedules.filter((schedule) => schedule.threadOrder === 0) ?? [];
  const lead =
    action === 'NEXT_WINDOW' ? 'Scheduled at the next free posting slot' : action === 'SCHEDULED_TIME' ? 'Scheduled' : action === 'PUBLISH_NOW' ? 'Publishing now' : action === 'DRAFT' ? 'Saved as a draft' : 'Saved';
  return (
    <div class="outcome" role="status">
      <p class="success">
        {lead}. {message}.
      </p>
      {roots.length > 0 && (
        <ul>
          {roots.map((schedule) => (
            <li key={schedule.id}>
              {schedule.integration.name} ({PLATFORM_LABELS[schedule.integration.platform]}): {STATUS_LABELS[schedule.status]}
              {schedule.scheduledAt && schedule.status !== 'PUBLISHED' ? `, ${formatSlotInZone(schedule.scheduledAt, timeZone)} (${timeZone})` : ''}
              {schedule.status === 'PUBLISHED' && schedule.releaseUrl && (
                <>
                  {' '}
                  <a href={schedule.releaseUrl} rel="noreferrer" target="_blank">
                    View on {PLATFORM_LABELS[schedule.integration.platform]}
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

/** A fresh Idempotency-Key: a UUID where the browser makes one (secure contexts), else 128 random bits in hex. */
function newIdempotencyKey(): string {
  if (typeof crypto.randomUUID === 'function') return crypto.randomUUID();
  return [...crypto.getRandomValues(new Uint8Array(16))].map((byte) => byte.toString(16).padStart(2, '0')).join('');
}
