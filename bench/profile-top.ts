/**
 * Summarises a V8 .cpuprofile (from `node --cpu-prof`): the functions with the most self time, the most
 * inclusive time, and self time by package or source file.
 * Usage: tsx bench/profile-top.ts FILE.cpuprofile [ROWS] [FROM-TO seconds into the profile]
 */
import { readFileSync } from 'node:fs';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

const [file, rowsArg, windowArg] = process.argv.slice(2);
if (!file) {
  console.error('usage: tsx bench/profile-top.ts FILE.cpuprofile [ROWS] [FROM-TO]');
  process.exit(2);
}
const rows = Number(rowsArg ?? 25);
const profile = JSON.parse(readFileSync(file, 'utf8')) as Profile;

const byId = new Map(profile.nodes.map((node) => [node.id, node]));
const parentOf = new Map<number, number>();
for (const node of profile.nodes) for (const child of node.children ?? []) parentOf.set(child, node.id);

const shortUrl = (url: string) => url.replace(/^file:\/\//, '').replace(/^.*\/node_modules\//, 'node_modules/').replace(process.cwd() + '/', '');
const label = ({ callFrame: { functionName, url, lineNumber } }: ProfileNode) =>
  `${functionName || '(anonymous)'} ${url ? `${shortUrl(url)}:${lineNumber + 1}` : ''}`.trim();
/** node_modules/<package>, a project file, node:internal, or V8's own entries such as (garbage collector). */
const groupOf = ({ callFrame: { url, functionName } }: ProfileNode) => {
  if (!url) return functionName;
  const short = shortUrl(url);
  const pkg = /^node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(short)?.[1];
  return pkg ?? (short.startsWith('node:') ? short.split('/').slice(0, 2).join('/') : short);
};

const self = new Map<string, number>();
const inclusive = new Map<string, number>();
const groups = new Map<string, number>();
const add = (map: Map<string, number>, key: string, us: number) => map.set(key, (map.get(key) ?? 0) + us);
let total = 0;
// FROM-TO: only the samples taken that many seconds after the profile began (a burst within a longer run).
const [from, to] = windowArg ? windowArg.split('-').map((s) => Number(s) * 1e6) : [0, Infinity];
let elapsed = 0;
profile.samples.forEach((id, i) => {
  const us = profile.timeDeltas[i] ?? 0;
  elapsed += us;
  if (elapsed < from! || elapsed >= to!) return;
  total += us;
  const node = byId.get(id)!;
  add(self, label(node), us);
  add(groups, groupOf(node), us);
  const seen = new Set<string>();
  for (let at: number | undefined = id; at !== undefined; at = parentOf.get(at)) seen.add(label(byId.get(at)!));
  for (const key of seen) add(inclusive, key, us);
});

const table = (title: string, map: Map<string, number>) => {
  console.log(`\n${title}`);
  for (const [key, us] of [...map].sort((a, b) => b[1] - a[1]).slice(0, rows)) {
    console.log(`${((100 * us) / total).toFixed(1).padStart(5)}%  ${(us / 1000).toFixed(0).padStart(6)} ms  ${key}`);
  }
};
console.log(`${file}: ${(total / 1e6).toFixed(1)} s sampled`);
table('Self time by function', self);
table('Self time by package or file', groups);
table('Inclusive time by function', inclusive);
