/** The part of language-tags (2.x, no types of its own) that src/platforms/languages.ts uses. */
declare module 'language-tags' {
  interface Tag {
    /** Whether the tag is well-formed and every subtag is in the IANA Language Subtag Registry (and not deprecated). */
    valid(): boolean;
  }
  export default function tags(tag: string): Tag;
}
