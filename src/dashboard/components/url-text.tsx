import { Fragment } from 'preact';

/**
 * An address as code that a narrow column breaks only between its parts (after `/`, `?`, `&`, `=`, `.` or `-`),
 * never inside a word.
 */
export function UrlText({ url }: { url: string }) {
  const parts = url.split(/(?<=[/?&=.-])/);
  return (
    <code class="url">
      {parts.map((part, index) => (
        <Fragment key={index}>
          {part}
          {index < parts.length - 1 && <wbr />}
        </Fragment>
      ))}
    </code>
  );
}
