import { useState } from 'preact/hooks';
import { api, call } from '../api.js';
import { ErrorMessage } from '../components/form.js';
import { formatDateTime } from '../format.js';
import { useAction } from '../hooks.js';
import { channelLabel } from '../platforms.js';
import { EvergreenChoice } from './evergreen.js';
import { navigate } from '../router.js';
import type { Post } from './state.js';

/** Whether what the post says has gone out everywhere it was to go: then it is history, shown as it went, not a form. */
export const isHistory = (post: Post) => {
  const firsts = post.schedules.filter((schedule) => schedule.threadOrder === 0);
  return firsts.length > 0 && firsts.every((schedule) => schedule.status === 'PUBLISHED' || schedule.status === 'PUBLISHING');
};

/**
 * A published post, read-only: each channel's text as it went out (with its thread and first comment), when, and its
 * link; what was published is never rewritten (the API refuses it too), so its action is a copy to write anew. What
 * changes no published text stays changeable: whether it is evergreen (what recycle rules post again).
 */
export function PublishedPost({ post, onSaved }: { post: Post; onSaved: () => void }) {
  const duplicate = useAction();
  const save = useAction();
  const [evergreen, setEvergreen] = useState(post.isEvergreen);
  const [saved, setSaved] = useState<string>();
  const onSave = async (event: Event) => {
    event.preventDefault();
    setSaved(undefined);
    const result = await save.run(() => call(api.PATCH('/posts/{id}', { params: { path: { id: post.id } }, body: { isEvergreen: evergreen } })));
    if (result.ok) {
      setSaved(result.data.message);
      onSaved();
    }
  };
  const onDuplicate = async () => {
    const copied = await duplicate.run(() => call(api.POST('/posts/{id}/duplicate', { params: { path: { id: post.id } }, body: {} })));
    if (copied.ok) navigate(`/posts/${copied.data.postId}`);
  };
  const firsts = post.schedules.filter((schedule) => schedule.threadOrder === 0);
  return (
    <section class="published-post" aria-labelledby="published-heading">
      <h2 id="published-heading">What went out, on each channel</h2>
      <ul class="published-channels">
        {firsts.map((first) => {
          const parts = post.schedules.filter((schedule) => schedule.threadRootScheduleId === first.id);
          return (
            <li key={first.id} data-schedule-id={first.id}>
              <h3>{channelLabel(first.integration)}</h3>
              <p class="published-when">
                {first.status === 'PUBLISHED' ? `Published ${formatDateTime(first.publishedAt)}` : 'Publishing now'}
                {first.releaseUrl && (
                  <>
                    {' · '}
                    <a href={first.releaseUrl} target="_blank" rel="noopener noreferrer">
                      View the post
                    </a>
                  </>
                )}
              </p>
              <blockquote class="published-text">{first.scheduledContent}</blockquote>
              {parts.map((part) => (
                <blockquote key={part.id} class="published-text" aria-label={`Thread part ${part.threadOrder}`}>
                  {part.scheduledContent}
                </blockquote>
              ))}
              {first.firstComment && <p class="published-comment">First comment: {first.firstComment}</p>}
            </li>
          );
        })}
      </ul>
      <form class="evergreen-choice" onSubmit={onSave} aria-busy={save.busy ? 'true' : undefined}>
        <EvergreenChoice
          id="published-evergreen-hint"
          checked={evergreen}
          onChange={setEvergreen}
          hint="Worth posting again: the workspace’s recycle rules (Recycling) post it again."
        />
        <ErrorMessage message={save.error?.message} />
        <button type="submit" disabled={save.busy}>
          {save.busy ? 'Saving…' : 'Save changes'}
        </button>
        <p role="status">{saved}</p>
      </form>
      <ErrorMessage message={duplicate.error?.message} />
      <button type="button" class="primary" onClick={onDuplicate} disabled={duplicate.busy}>
        {duplicate.busy ? 'Duplicating…' : 'Duplicate as a new post'}
      </button>
    </section>
  );
}
