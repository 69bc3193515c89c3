import { useState } from 'preact/hooks';
import { api, call, type Schema } from '../api.js';
import { PostPreview } from '../compose/preview.js';
import { previewShown } from '../compose/state.js';
import { ErrorMessage } from '../components/form.js';
import { Loading, Page, refocusIfLost, type PageProps } from '../components/page.js';
import { formatDateTime } from '../format.js';
import { useAction, useLoad } from '../hooks.js';

type Post = Schema<'Post'>;

/**
 * The queue of posts waiting for a person (docs/publishing.md "Approval before publishing"): each post as every
 * channel will show it, with its times, approved or rejected with a note for its author. The oldest request first.
 */
export function ApprovalsPage(_props: PageProps) {
  const queue = useLoad(() => call(api.GET('/approvals', { params: { query: { limit: 20 } } })));
  const [done, setDone] = useState('');

  return (
    <Page
      title="Approvals"
      intro="Posts that wait for a person before they publish: written under the workspace's approval rule, or with an API key or by a connected app that requires approval. Nothing of theirs publishes, and no quota is spent, until one is approved."
    >
      <p role="status" class="success">
        {done}
      </p>
      <section aria-labelledby="queue">
        <h2 id="queue">Waiting for approval</h2>
        <ErrorMessage message={queue.error?.message} />
        {!queue.data && !queue.error && <Loading what="the posts waiting for approval" />}
        {queue.data && queue.data.items.length === 0 && <p>No post is waiting for approval.</p>}
        {queue.data?.items.map((post) => (
          <PendingPost
            key={post.id}
            post={post}
            onReviewed={async (message) => {
              setDone(message);
              await queue.reload();
              refocusIfLost('queue');
            }}
          />
        ))}
        {queue.data?.nextCursor && <p class="hint">More posts are waiting: approve or reject these to see the next.</p>}
      </section>
    </Page>
  );
}

function PendingPost({ post, onReviewed }: { post: Post; onReviewed: (message: string) => Promise<void> }) {
  const [note, setNote] = useState('');
  const review = useAction();
  const author = post.user?.name ?? 'a former member';
  // The key or connected app an agent or a script wrote it with: what an approver most wants to know about a post they did not write.
  const key = post.createdBy?.kind === 'key' ? post.createdBy : undefined;
  const app = post.createdBy?.kind === 'app' ? post.createdBy : undefined;
  const headingId = `post-${post.id}`;
  const noteId = `note-${post.id}`;
  const roots = post.schedules.filter((schedule) => schedule.threadOrder === 0);
  const images = post.attachments.flatMap((attachment) =>
    attachment.media ? [{ key: attachment.id, src: attachment.media.url, alt: attachment.altText ?? '' }] : [],
  );

  const decide = async (verdict: 'approve' | 'reject') => {
    if (review.busy) return;
    const options = { params: { path: { id: post.id } }, body: note.trim() ? { note: note.trim() } : {} };
    const result = await review.run(() =>
      call(verdict === 'approve' ? api.POST('/posts/{id}/approve', options) : api.POST('/posts/{id}/reject', options)),
    );
    if (!result.ok) return;
    await onReviewed(
      verdict === 'approve'
        ? `Approved the post by ${author}: it is queued for publishing.`
        : `Rejected the post by ${author}; it comes back here when it is changed.`,
    );
  };

  return (
    <article class="approval" aria-labelledby={headingId} aria-busy={review.busy ? 'true' : undefined}>
      <h3 id={headingId}>
        Post by {author}, waiting since {formatDateTime(post.approvalRequestedAt)}
      </h3>
      {key && (
        <p class="hint" data-api-key-id={key.apiKeyId ?? undefined}>
          Written with the API key <strong>{key.name}</strong>
          {!key.apiKeyId && ' (a key since deleted)'}
        </p>
      )}
      {app && (
        <p class="hint">
          Written by the connected app <strong>{app.name}</strong>
        </p>
      )}
      <ul class="approval-channels">
        {roots.map((root) => (
          <li key={root.id}>
            <p class="hint">
              {root.integration.name}: {root.scheduledAt ? `publishes ${formatDateTime(root.scheduledAt)}` : 'no time yet'}
              {root.scheduledAt && Date.parse(root.scheduledAt) < Date.now() && ' (passed: publishes at once when approved)'}
            </p>
            <PostPreview
              platform={root.integration.platform}
              name={root.integration.name}
              avatar={null}
              text={root.scheduledContent}
              thread={post.schedules
                .filter((part) => part.threadRootScheduleId === root.id)
                .sort((a, b) => a.threadOrder - b.threadOrder)
                .map((part) => part.scheduledContent)}
              firstComment={root.firstComment ?? ''}
              images={images}
              shown={previewShown(root.settings)}
            />
          </li>
        ))}
      </ul>
      <div class="field">
        <label for={noteId}>Note for the author (optional)</label>
        <textarea id={noteId} name="note" rows={2} maxLength={2000} value={note} onInput={(event) => setNote(event.currentTarget.value)} />
      </div>
      <ErrorMessage message={review.error?.message} />
      <div class="actions">
        <button type="button" aria-describedby={headingId} disabled={review.busy} onClick={() => decide('approve')}>
          Approve<span class="visually-hidden"> the post by {author} of {formatDateTime(post.approvalRequestedAt)}</span>
        </button>
        <button type="button" class="danger" aria-describedby={headingId} disabled={review.busy} onClick={() => decide('reject')}>
          Reject<span class="visually-hidden"> the post by {author} of {formatDateTime(post.approvalRequestedAt)}</span>
        </button>
      </div>
    </article>
  );
}
