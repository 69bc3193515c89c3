import { useEffect, useReducer, useRef, useState } from 'preact/hooks';
import { api, call, errorParts, type Result, type Schema } from '../api.js';
import { ApprovalBadge } from '../calendar/status.js';
import { ErrorMessage } from '../components/form.js';
import { Loading, Page, type PageProps } from '../components/page.js';
import { ChannelChoices, ChannelTexts } from '../compose/channels.js';
import { MediaPicker } from '../compose/media.js';
import { Outcome, Problems, SubmitError } from '../compose/outcome.js';
import { PostPreview } from '../compose/preview.js';
import { EvergreenChoice } from '../compose/evergreen.js';
import { isHistory, PublishedPost } from '../compose/published.js';
import { MastodonOptionsList } from '../compose/mastodon.js';
import {
  chosenOf,
  compose,
  countedFor,
  createBody,
  hasOwnText,
  initialState,
  missing,
  patchBody,
  problemAt,
  previewShown,
  problems,
  settingsFor,
  summaryOf,
  textFor,
  whereOf,
  writtenParts,
  type Action,
  type Integration,
  type Post,
  type Problem,
  type Where,
} from '../compose/state.js';
import { TagPicker } from '../compose/tags.js';
import { countersOf, TextArea } from '../compose/text-field.js';
import { ThreadFields } from '../compose/thread.js';
import { submitLabel, WhenFields } from '../compose/when.js';
import { useAction, useLoad } from '../hooks.js';
import { MessageSquarePlus, Tag } from 'lucide';
import { Icon } from '../components/icon.js';

type TagItem = Schema<'Tag'>;

/** The composer: `/compose` for a new post, `/posts/{id}` to change one (GET, then PATCH /posts/{id}). */
export function ComposePage({ postId }: PageProps & { postId?: string }) {
  const channels = useLoad(() => call(api.GET('/integrations')));
  const tags = useLoad(() => call(api.GET('/tags', { params: { query: { limit: 100 } } })));
  const workspace = useLoad(() => call(api.GET('/workspace')));
  const post = useLoad<Post | null>(async () => (postId ? call(api.GET('/posts/{id}', { params: { path: { id: postId } } })) : { ok: true, data: null }), [postId]);
  const error = channels.error ?? tags.error ?? workspace.error ?? post.error;
  // After a move from one post (or /compose) to another, the composer waits for the post now asked for.
  const ready = channels.data && tags.data && workspace.data && (postId ? post.data?.id === postId : post.data === null);
  const history = ready && post.data && isHistory(post.data) ? post.data : undefined;
  if (history) {
    return (
      <Page title="Published post" intro="What was published is kept as it went out. To say it again or differently, duplicate it as a new draft.">
        <PublishedPost key={history.id} post={history} onSaved={() => void post.reload()} />
      </Page>
    );
  }
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
          gifs={workspace.data!.gifProvider !== null}
          post={post.data ?? undefined}
          onSaved={() => void post.reload()}
        />
      )}
    </Page>
  );
}

interface ComposerProps {
  channels: Integration[];
  tags: TagItem[];
  onTagCreated: (tag: TagItem) => void;
  timeZone: string;
  /** Whether this server offers GIF search (GET /workspace's `gifProvider`). */
  gifs: boolean;
  post: Post | undefined;
  onSaved: () => void;
}

/** The form and the previews, wired to the composer's state (compose/state.ts), which holds all but the submit's own. */
function Composer({ channels, tags, onTagCreated, timeZone, gifs, post, onSaved }: ComposerProps) {
  const editing = !!post;
  const form = useRef<HTMLFormElement>(null);
  const summary = useRef<HTMLDivElement>(null);
  const [state, dispatch] = useReducer(compose, undefined, () => initialState(post, timeZone));
  const [problemsShown, setProblemsShown] = useState<Problem[]>([]);
  const [done, setDone] = useState<{ postId: string; message: string; action: Action } | undefined>();
  const submit = useAction();
  const idempotencyKey = useRef<string | undefined>(undefined);
  const [commentOpen, setCommentOpen] = useState(false);
  const [tagsOpen, setTagsOpen] = useState(false);

  const chosen = chosenOf(state, channels);
  const blocking: Problem[] = [...missing(state, chosen, { editing, timeZone }).map((sentence) => ({ where: '' as const, sentence })), ...problems(state, chosen, post)];
  const at = (where: Where) => problemAt(problemsShown, where);
  // The API's refusal, each part under the field it names (and whole above the button): gone once that field changes.
  const refusedAt = (where: Where) =>
    errorParts(submit.error)
      .filter((part) => part.path && whereOf(part.path, state, chosen, post) === where)
      .map((part) => part.sentence)
      .join(' ') || undefined;
  const bothAt = (where: Where) => [at(where), refusedAt(where)].filter(Boolean).join(' ') || undefined;

  // A change after a refusal makes the refusal's list stale: it follows what is typed now.
  useEffect(() => {
    if (problemsShown.length) setProblemsShown(blocking);
  }, [blocking.map((problem) => problem.sentence).join('\n')]);

  const onSubmit = async (event: Event) => {
    event.preventDefault();
    if (submit.busy) return;
    setDone(undefined);
    submit.clearError();
    setProblemsShown(blocking);
    if (blocking.length) {
      requestAnimationFrame(() => summary.current?.focus());
      return;
    }
    let saved: Result<{ postId: string; message: string }>;
    if (!post) {
      const body = createBody(state, chosen, timeZone);
      // One key per post being written, kept across retries of a submit whose answer was lost, so a retry creates one post.
      idempotencyKey.current ??= newIdempotencyKey();
      const key = idempotencyKey.current;
      saved = await submit.run(() => call(api.POST('/posts', { body, headers: { 'Idempotency-Key': key } })));
    } else {
      const body = patchBody(state, post, timeZone);
      saved = await submit.run(() => call(api.PATCH('/posts/{id}', { params: { path: { id: post.id } }, body })));
    }
    if (!saved.ok) {
      requestAnimationFrame(() => form.current?.querySelector<HTMLElement>('.submit-error')?.focus());
      return;
    }
    setProblemsShown([]);
    setDone({ postId: saved.data.postId, message: saved.data.message, action: state.action });
    dispatch({ type: 'saved', editing });
    if (post) onSaved();
    else idempotencyKey.current = undefined;
  };

  const { content, firstComment } = state;
  const parts = writtenParts(state);
  const showComment = commentOpen || !!firstComment;
  const showTags = tagsOpen || state.tagIds.length > 0;
  return (
    <div class="composer">
      <form ref={form} class="compose-form" onSubmit={onSubmit} aria-busy={submit.busy ? 'true' : undefined} noValidate>
        <ChannelChoices channels={channels} post={post} selected={state.selected} timeZone={timeZone} dispatch={dispatch} />

        <TextArea
          label="Text"
          value={content}
          onInput={(value) => dispatch({ type: 'set', change: { content: value } })}
          rows={4}
          hint={chosen.length > 1 ? 'Published on every channel that has no text of its own.' : undefined}
          counters={countersOf(
            chosen.filter((channel) => !hasOwnText(state, channel.id)),
            content,
            'post',
            (channel) => countedFor(state, channel),
          )}
          error={at('content')}
          refusal={refusedAt('content')}
        />

        <ChannelTexts chosen={chosen} state={state} dispatch={dispatch} errorAt={at} refusalAt={refusedAt} />

        <MediaPicker media={state.media} dispatch={dispatch} chosen={chosen} error={bothAt('media')} gifs={gifs} />

        <MastodonOptionsList chosen={chosen} state={state} post={post} dispatch={dispatch} errorAt={at} refusalAt={refusedAt} />

        {/* What a post may also have, folded until used: the parts in use first, then the buttons that add the others. */}
        <div class="compose-extras">
          <ThreadFields thread={state.thread} post={post} chosen={chosen} dispatch={dispatch} errorAt={at} refusalAt={refusedAt} />
          {showComment && (
            <TextArea
              label="First comment"
              optional
              value={firstComment}
              onInput={(value) => dispatch({ type: 'set', change: { firstComment: value } })}
              rows={3}
              hint="Published as the first reply under the post, on every channel."
              counters={firstComment ? countersOf(chosen, firstComment, 'comment') : []}
              focusOnMount={!firstComment}
              error={at('firstComment')}
              refusal={refusedAt('firstComment')}
            />
          )}
          {showTags && <TagPicker tags={tags} tagIds={state.tagIds} dispatch={dispatch} onTagCreated={onTagCreated} />}
          {!showComment && (
            <button type="button" class="compose-adder" onClick={() => setCommentOpen(true)}>
              <Icon icon={MessageSquarePlus} />
              Add a first comment
            </button>
          )}
          {!showTags && (
            <button
              type="button"
              class="compose-adder"
              onClick={() => {
                setTagsOpen(true);
                requestAnimationFrame(() => form.current?.querySelector<HTMLElement>('.tags input')?.focus());
              }}
            >
              <Icon icon={Tag} />
              Add tags
            </button>
          )}
          <div class="evergreen-choice">
            <EvergreenChoice
              id="compose-evergreen-hint"
              checked={state.evergreen}
              onChange={(evergreen) => dispatch({ type: 'set', change: { evergreen } })}
              hint="Worth posting again: the workspace’s recycle rules (Recycling) post it again once it has been published."
            />
          </div>
        </div>

        <WhenFields state={state} post={post} timeZone={timeZone} dispatch={dispatch} />

        <Problems problems={problemsShown.map(summaryOf)} focusRef={summary} />
        {submit.error && <SubmitError error={submit.error} />}
        <div class="actions compose-actions">
          <button type="submit" class="primary" disabled={submit.busy} aria-busy={submit.busy ? 'true' : undefined}>
            {submit.busy ? 'Saving…' : submitLabel(state.action, editing)}
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
            text={textFor(state, channel.id)}
            thread={parts}
            firstComment={firstComment}
            images={state.media.map((item) => ({ key: item.key, src: item.src, alt: item.altText }))}
            shown={previewShown(settingsFor(state, channel))}
          />
        ))}
      </section>
    </div>
  );
}

/** A fresh Idempotency-Key: a UUID where the browser makes one (secure contexts), else 128 random bits in hex. */
function newIdempotencyKey(): string {
  if (typeof crypto.randomUUID === 'function') return crypto.randomUUID();
  return [...crypto.getRandomValues(new Uint8Array(16))].map((byte) => byte.toString(16).padStart(2, '0')).join('');
}
