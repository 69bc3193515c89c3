import { useState } from 'preact/hooks';

/** A channel's picture, or its initial when it has none or it does not load (a platform's CDN refusing it). */
export function Avatar({ name, image, class: className, size }: { name: string; image: string | null; class: string; size: number }) {
  const [broken, setBroken] = useState(false);
  if (image && !broken) return <img class={className} src={image} alt="" width={size} height={size} onError={() => setBroken(true)} />;
  return (
    <span class={`${className} initial`} aria-hidden="true">
      {(name.trim()[0] ?? '?').toUpperCase()}
    </span>
  );
}
