import { blueskyFacets, linkedinFacets, segments, type TextFacet } from '../../platforms/facets.js';
import { rules, type Platform } from '../platforms.js';
import { Avatar } from './avatar.js';

/**
 * Where the platforms differ in how a post looks, and the only place in the dashboard that names them one by one: the
 * links, mentions and hashtags each platform makes of a text, detected as the server detects them when it publishes
 * (src/platforms/facets.ts). A platform without an entry here is previewed as plain text. Its look beyond that is
 * `.preview-<platform>` in styles.css; whether it shows a thread is its rules' `threads`.
 */
const FACETS: Partial<Record<Platform, (text: string) => TextFacet[]>> = { BLUESKY: blueskyFacets, LINKEDIN: linkedinFacets };

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
 * replies (on a platform with threads) and the first comment under it.
 */
export function PostPreview({ platform, name, avatar, text, thread, firstComment, images }: PreviewProps) {
  return (
    <article class={`preview preview-${platform.toLowerCase()}`} aria-label={`Preview on ${rules[platform].label}: ${name}`}>
      <PreviewPost platform={platform} name={name} avatar={avatar} text={text} images={images} />
      {rules[platform].threads &&
        thread.filter((part) => part.trim()).map((part, index) => <PreviewPost key={index} platform={platform} name={name} avatar={avatar} text={part} images={[]} reply={`Thread, part ${index + 2}`} />)}
      {firstComment.trim() && <PreviewPost platform={platform} name={name} avatar={avatar} text={firstComment} images={[]} reply="First comment" />}
    </article>
  );
}

function PreviewPost({ platform, name, avatar, text, images, reply }: { platform: Platform; name: string; avatar: string | null; text: string; images: PreviewImage[]; reply?: string }) {
  return (
    <div class={reply ? 'preview-post preview-reply' : 'preview-post'}>
      <div class="preview-head">
        <Avatar name={name} image={avatar} class="preview-avatar" size={36} />
        <span class="preview-name">{name}</span>
        {reply && <span class="preview-kind">{reply}</span>}
      </div>
      <p class="preview-text">{text ? <Highlighted text={text} facets={FACETS[platform]?.(text) ?? []} /> : <span class="preview-empty">Nothing written yet</span>}</p>
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
