import { ImagePlus } from 'lucide';
import { Icon } from '../components/icon.js';
import { useRef, useState } from 'preact/hooks';
import { api, call, inWords } from '../api.js';
import { formatBytes, formatNumber } from '../format.js';
import { platformLabel } from '../platforms.js';
import { MAX_UPLOAD_BYTES, rulesFor, UPLOAD_IMAGE_TYPES, type ContentRules } from '../../platforms/rules.js';
import { pixelsOf, type Channel, type Dispatch, type MediaItem } from './state.js';
import { fileRefusal, uploadFile, withdrawn } from './upload.js';
import { GifPicker } from './gif-picker.js';
import { importedGif, pickedGif, type GifResult } from './gif-search.js';

let nextKey = 0;

/**
 * The images: picked or dropped, each uploaded at once with its progress, its alt text, and the platforms' rules; and,
 * when the server offers GIF search, GIFs found on GIPHY (compose/gif-picker.tsx), each copied into the store as it is
 * picked and then attached as an uploaded image is.
 */
/** `gifs`: whether this server offers GIF search (GET /workspace's `gifProvider`): the GIF button shows only then. */
export function MediaPicker({ media, dispatch, chosen, error, gifs }: { media: MediaItem[]; dispatch: Dispatch; chosen: Channel[]; error?: string | undefined; gifs: boolean }) {
  const [dragging, setDragging] = useState(false);
  const [refused, setRefused] = useState<string[]>([]);
  const [said, setSaid] = useState('');
  /** GIFs removed while being copied: their copy, once made, is deleted at once. */
  const abandoned = useRef(new Set<string>());
  const update = (key: string, change: Partial<MediaItem>) => dispatch({ type: 'media', key, change });

  const addGif = (gif: GifResult) => {
    const key = `gif-${++nextKey}`;
    const item = pickedGif(gif, key);
    dispatch({ type: 'addMedia', item });
    setSaid(`Adding ${item.name} from ${gif.provider}…`);
    void call(api.POST('/uploads/from-provider', { body: { provider: gif.provider, providerId: gif.providerId, scenarioId: 'post_attachments' } })).then((result) => {
      if (result.ok && abandoned.current.has(key)) void withdrawn(result.data.uploadId, null);
      else if (result.ok) {
        update(key, importedGif(result.data));
        setSaid(`${item.name} added.`);
      } else {
        update(key, { step: 'failed', error: inWords(result.error.message) });
        setSaid(`${item.name} could not be added.`);
      }
    });
  };

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
      dispatch({ type: 'addMedia', item: { key, name: file.name, mimeType: file.type, size: file.size, src: '', step: 'hashing', progress: 0, altText: '' } });
      const reader = new FileReader();
      reader.onload = () => update(key, { src: String(reader.result) });
      reader.readAsDataURL(file);
      void uploadFile(
        file,
        (step, progress) => update(key, { step, progress }),
        (uploadId) => update(key, { uploadId }),
      ).then((result) => {
        if (result.ok) {
          const source = result.data.variants.source;
          update(key, { step: 'done', progress: 1, mediaId: result.data.mediaId, variantsStatus: result.data.variantsStatus, publishedBytes: source?.sizeBytes ?? null, publishedPixels: pixelsOf(source) });
        } else update(key, { step: 'failed', error: inWords(result.error.message) });
      });
    }
    setRefused(refusals);
  };

  const ruled = rulesOf(chosen);
  return (
    <fieldset class="media">
      <legend class="visually-hidden">Images</legend>
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
        <input
          id="compose-files"
          class="file-input"
          type="file"
          multiple
          accept={UPLOAD_IMAGE_TYPES.join(',')}
          aria-describedby="compose-files-hint"
          onChange={(event) => {
            add(event.currentTarget.files);
            event.currentTarget.value = '';
          }}
        />
        <label for="compose-files" class="file-button">
          <Icon icon={ImagePlus} />
          Add images
        </label>
        {gifs && <GifPicker onPick={addGif} />}
        <p class="hint" id="compose-files-hint">
          or drop them here (JPEG, PNG, WebP, GIF; {formatBytes(MAX_UPLOAD_BYTES)} each)
        </p>
      </div>
      <p class="visually-hidden" role="status">
        {said}
      </p>
      {error && <p class="field-error">{error}</p>}
      {refused.map((refusal) => (
        <p key={refusal} class="error" role="alert">
          {refusal}
        </p>
      ))}
      {ruled.length > 0 && media.length > 0 && (
        <ul class="media-rules">
          {ruled.map(({ key, label, limits }) => {
            return (
              <li key={key}>
                <strong>{label}:</strong> at most {limits.images} images
                {taken(limits).length < UPLOAD_IMAGE_TYPES.length ? `, ${taken(limits).map((type) => type.replace('image/', '').toUpperCase()).join(', ')} only` : ''}
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
                  {item.name} <span class="hint">({sourceOf(item)})</span>
                </p>
                {item.step === 'importing' && (
                  <p class="media-progress">
                    <progress aria-label={`Adding ${item.name}`} /> <span>Copying it from {item.provider}…</span>
                  </p>
                )}
                {item.step !== 'done' && item.step !== 'failed' && item.step !== 'importing' && (
                  <p class="media-progress">
                    <progress max={100} value={Math.round(item.progress * 100)} aria-label={`Uploading ${item.name}`} />{' '}
                    <span>{item.step === 'hashing' ? 'Computing its checksum…' : item.step === 'uploading' ? `Uploading… ${Math.round(item.progress * 100)} %` : 'Finishing…'}</span>
                  </p>
                )}
                {item.step === 'done' && <p class="success">{item.provider ? 'Added' : 'Uploaded'}</p>}
                {item.step === 'failed' && (
                  <p class="error">
                    {item.provider ? 'Not added' : 'Not uploaded'}: {item.error}
                  </p>
                )}
                <div class="field">
                  <label for={`${item.key}-alt`}>Alt text for {item.name}</label>
                  <textarea id={`${item.key}-alt`} rows={2} value={item.altText} onInput={(event) => update(item.key, { altText: event.currentTarget.value })} />
                </div>
                <button
                  type="button"
                  onClick={() => {
                    // An image uploaded here and not saved yet is deleted, so it stops counting against the allowance.
                    if (item.uploadId) void withdrawn(item.uploadId, null);
                    else if (item.step === 'importing') abandoned.current.add(item.key);
                    dispatch({ type: 'removeMedia', key: item.key });
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

/** Where an image comes from, beside its name: its size when uploaded; a GIF's provider (and whom it credits). */
function sourceOf(item: MediaItem): string {
  if (!item.provider) return formatBytes(item.size);
  return [`GIF from ${item.provider}`, item.credit && `by ${item.credit}`, item.size > 0 && formatBytes(item.size)].filter(Boolean).join(', ');
}

/**
 * The rules the chosen channels' images are checked by, once each: a platform's, or on Mastodon each instance's (named
 * by its channels when the chosen ones are on instances with different limits).
 */
function rulesOf(chosen: Channel[]): { key: string; label: string; limits: ContentRules['limits'] }[] {
  const groups = new Map<string, { platform: Channel['platform']; names: string[]; limits: ContentRules['limits'] }>();
  for (const channel of chosen) {
    const key = `${channel.platform} ${JSON.stringify(channel.limits ?? null)}`;
    const group = groups.get(key);
    if (group) group.names.push(channel.name);
    else groups.set(key, { platform: channel.platform, names: [channel.name], limits: rulesFor(channel).limits });
  }
  const entries = [...groups.entries()];
  return entries.map(([key, { platform, names, limits }]) => {
    const label = platformLabel(platform);
    const shared = entries.filter(([, other]) => other.platform === platform).length > 1;
    return { key, label: shared ? `${label} (${names.join(', ')})` : label, limits };
  });
}

/** The types of upload a platform's (or instance's) rules take. */
const taken = (limits: ContentRules['limits']) => UPLOAD_IMAGE_TYPES.filter((type) => limits.imageTypes.includes(type));
