import { useState } from 'preact/hooks';
import { api, call, type Schema } from '../api.js';
import { ErrorMessage, IdChoices } from '../components/form.js';
import { useAction } from '../hooks.js';
import type { Dispatch } from './state.js';

type Tag = Schema<'Tag'>;

/** The workspace's tags as checkboxes, and a new one made with POST /tags and chosen at once. */
export function TagPicker({ tags, tagIds, dispatch, onTagCreated }: { tags: Tag[]; tagIds: string[]; dispatch: Dispatch; onTagCreated: (tag: Tag) => void }) {
  const [name, setName] = useState('');
  const create = useAction();
  const add = async () => {
    if (!name.trim() || create.busy) return;
    const result = await create.run(() => call(api.POST('/tags', { body: { name: name.trim() } })));
    if (!result.ok) return;
    onTagCreated(result.data);
    dispatch({ type: 'tagAdded', id: result.data.id });
    setName('');
  };
  return (
    <fieldset class="tags">
      <legend>Tags</legend>
      {tags.length === 0 && <p class="hint">No tags yet.</p>}
      <IdChoices items={tags} idOf={(tag) => tag.id} labelOf={(tag) => tag.name} chosen={tagIds} onChange={(ids) => dispatch({ type: 'set', change: { tagIds: ids } })} />
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
