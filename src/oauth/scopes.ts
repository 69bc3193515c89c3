/**
 * What a connected app may be allowed to do, each scope a set of public operations: the consent page and the
 * Developer API page show these words (the dashboard imports this file: it imports nothing), and the pipeline
 * refuses a call whose operation's scope the app was not given.
 */
export const SCOPES = {
  'posts:read': 'Read posts, schedules, tags, channels, events and usage',
  'posts:write': 'Create, change, delete and reschedule posts',
  'media:write': 'Upload images and import them from links',
  'channels:write': 'Connect channels',
} as const;

export type Scope = keyof typeof SCOPES;
export const SCOPE_NAMES = Object.keys(SCOPES) as Scope[];
export const isScope = (name: string): name is Scope => Object.hasOwn(SCOPES, name);

/**
 * The scope a public operation needs, read from what it is rather than declared on each: uploads write media,
 * connecting a channel writes channels, other changes write posts, and every read reads.
 */
export function scopeOf(operation: { method: string; path: string }): Scope {
  if (operation.path.startsWith('/uploads')) return 'media:write';
  if (operation.method === 'GET') return 'posts:read';
  if (operation.path.startsWith('/integrations')) return 'channels:write';
  return 'posts:write';
}
