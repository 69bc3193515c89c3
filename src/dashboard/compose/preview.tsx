import { useState } from 'preact/hooks';
import { blueskyFacets, linkedinFacets, segments, type TextFacet } from '../../platforms/facets.js';
import type { Platform } from '../../platforms/rules.js';

export interface PreviewImage {
  key: string;
  src: string;
  alt: string;
}

interface PreviewProps {
  platform: Platform;
  name: string;
  avatar: string | null;
  text: string;
  thread: string[];
  firstComment: string;
  images: PreviewImage[];
}

/**
 * One channel's post as its platform will show it: the text with its links, mentions and hashtags highlighted where
 * the published facets will be (src/platforms/facets.ts, the server's own detection), the image grid, the thread's
 * replies (Bluesky) and the first comment under it.
 */
export function PostPreview({ platform, name, avatar, text, thread, firstComment, images }: PreviewProps) {
  const label = platform === 'BLUESKY' ? 'Bluesky' : 'LinkedIn';
  return (
    <article class={`preview preview-${platform.toLowerCase()}`} aria-label={`Preview on ${label}: ${name}`}>
      <PreviewPost platform={platform} name={name} avatar={avatar} text={text} images={images} />
      {platform === 'BLUESKY' &&
        thread.filter((part) => part.trim()).map((part, index) => <PreviewPost key={index} platform={platform} name={name} avatar={avatar} text={part} images={[]} reply={`Thread, part ${index + 2}`} />)}
      {firstComment.trim() && <PreviewPost platform={platform} name={name} avatar={avatar} text={firstComment} images={[]} reply="First comment" />}
    </article>
  );
}

function PreviewPost({ platform, name, avatar, text, images, reply }: { platform: Platform; name: string; avatar: string | null; text: string; images: PreviewImage[]; reply?: string }) {
  return (
    <div class={reply ? 'preview-post preview-reply' : 'preview-post'}>
      <div class="preview-head">
        <Avatar name={name} avatar={avatar} />
        <span class="preview-name">{name}</span>
        {reply && <span class="preview-kind">{reply}</span>}
      </div>
      <p class="preview-text">{text ? <Highlighted text={text} facets={platform === 'BLUESKY' ? blueskyFacets(text) : linkedinFacets(text)} /> : <span class="preview-empty">Nothing written yet</span>}</p>
      {images.length > 0 && (
        <ul class={`preview-grid preview-grid-${Math.min(images.length, 4)}`} aria-label={`${images.length} image${images.length === 1 ? '' : 's'}`}>
          {images.map((image) => (
            <li key={image.key}>
              <img src={image.src} alt={image.alt} />
            </li>
          ))}
        </ul>
      )}
    </div>
  );
}

/** The channel's picture, or its initial when it has none or it does not load (a platform's CDN refusing it). */
function Avatar({ name, avatar }: { name: string; avatar: string | null }) {
  const [broken, setBroken] = useState(false);
  if (avatar && !broken) return <img class="preview-avatar" src={avatar} alt="" width={36} height={36} onError={() => setBroken(true)} />;
  return (
    <span class="preview-avatar initial" aria-hidden="true">
      {(name.trim()[0] ?? '?').toUpperCase()}
    </span>
  );
}

const FACET_TITLES = { link: 'Link', mention: 'Mention', tag: 'Hashtag' };

function Highlighted({ text, facets }: { text: string; facets: TextFacet[] }) {
  return (
    <>
      {segments(text, facets).map((part, index) =>
        part.facet ? (
          <span key={index} class={`facet facet-${part.facet.kind}`} data-facet={part.facet.kind} title={`${FACET_TITLES[part.facet.kind]}: ${part.facet.value}`}>
            {part.text}
          </span>
        ) : (
          part.text
        ),
      )}
    </>
  );
}
