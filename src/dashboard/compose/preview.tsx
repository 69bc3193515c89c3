import { useState } from 'preact/hooks';
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
  /**
   * What the schedule's settings change in how it shows (a Mastodon post's options): `warning`, a content warning
   * shown instead of the text and images until opened; `sensitive`, images hidden until asked for (as they are with
   * a warning, which Mastodon makes sensitive too); `audience`, who
   * sees it, in words. The warning and the images are the post's; its replies (thread parts, first comment) are seen
   * by whom the post is, as src/platforms/mastodon.ts publishes them.
   */
  shown?: PreviewSettings;
}

export interface PreviewSettings {
  warning?: string;
  sensitive?: boolean;
  audience?: string;
}

/**
 * One channel's post as its platform will show it: the text with its links, mentions and hashtags highlighted where
 * the published facets will be (src/platforms/facets.ts, the server's own detection), the image grid, the thread's
 * replies (on a platform with threads) and the first comment under it; behind its content warning, and its images
 * behind a cover when sensitive, as Mastodon shows them.
 */
export function PostPreview({ platform, name, avatar, text, thread, firstComment, images, shown = {} }: PreviewProps) {
  const replies = shown.audience ? { audience: shown.audience } : {};
  return (
    <article class={`preview preview-${platform.toLowerCase()}`} aria-label={`Preview on ${rules[platform].label}: ${name}`}>
      <PreviewPost platform={platform} name={name} avatar={avatar} text={text} images={images} shown={shown} />
      {rules[platform].threads &&
        thread
          .filter((part) => part.trim())
          .map((part, index) => <PreviewPost key={index} platform={platform} name={name} avatar={avatar} text={part} images={[]} reply={`Thread, part ${index + 2}`} shown={replies} />)}
      {firstComment.trim() && <PreviewPost platform={platform} name={name} avatar={avatar} text={firstComment} images={[]} reply="First comment" shown={replies} />}
    </article>
  );
}

function PreviewPost({ platform, name, avatar, text, images, reply, shown = {} }: { platform: Platform; name: string; avatar: string | null; text: string; images: PreviewImage[]; reply?: string; shown?: PreviewSettings }) {
  const [opened, setOpened] = useState(false);
  const [mediaShown, setMediaShown] = useState(false);
  const { warning, sensitive, audience } = shown;
  const behindWarning = !!warning && !opened;
  return (
    <div class={reply ? 'preview-post preview-reply' : 'preview-post'}>
      <div class="preview-head">
        <Avatar name={name} image={avatar} class="preview-avatar" size={36} />
        <span class="preview-name">{name}</span>
        {reply && <span class="preview-kind">{reply}</span>}
        {audience && <span class="preview-kind preview-audience">{audience}</span>}
      </div>
      {warning && (
        <div class="preview-warning">
          <p>{warning}</p>
          <button type="button" class="preview-reveal" aria-expanded={opened ? 'true' : 'false'} onClick={() => setOpened(!opened)}>
            {opened ? 'Show less' : 'Show more'}
          </button>
        </div>
      )}
      {!behindWarning && (
        <>
          <p class="preview-text">{text ? <Highlighted text={text} facets={FACETS[platform]?.(text) ?? []} /> : <span class="preview-empty">Nothing written yet</span>}</p>
          {images.length > 0 &&
            // Mastodon marks the images of a post with a content warning sensitive whatever was asked.
            ((sensitive || warning) && !mediaShown ? (
              <div class="preview-sensitive">
                <span>Sensitive content</span>
                <button type="button" class="preview-reveal" onClick={() => setMediaShown(true)}>
                  Show {images.length === 1 ? 'the image' : `the ${images.length} images`}
                </button>
              </div>
            ) : (
              <ul class={`preview-grid preview-grid-${Math.min(images.length, 4)}`} aria-label={`${images.length} image${images.length === 1 ? '' : 's'}`}>
                {images.map((image) => (
                  <li key={image.key}>
                    <img src={image.src} alt={image.alt} />
                  </li>
                ))}
              </ul>
            ))}
        </>
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
