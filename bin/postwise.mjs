#!/usr/bin/env node
/**
 * The command-line client (src/cli/main.ts). It runs from one file bundled by esbuild (a dependency already, for the
 * dashboard), made at the first run and again whenever src/cli changes, under node_modules/.cache/postwise-cli/:
 * a command then starts in about 0.2 s instead of the 0.6 s of compiling its TypeScript through tsx at every run.
 * Where the bundle cannot be written (a read-only install), it runs through tsx as the service does.
 */
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const sources = `${root}src/cli/`;
const cacheDir = `${root}node_modules/.cache/postwise-cli/`;
/** The modules outside src/cli that the client shares with the server (.dependency-cruiser.mjs: cli-shared-modules-are-leaves). */
const shared = ['src/db/file-lock.ts', 'src/process/startup.ts', 'src/process/deadline.ts'];

async function bundled() {
  const esbuild = await import('esbuild');
  const hash = createHash('sha256').update(`esbuild ${esbuild.version}\n`);
  for (const name of readdirSync(sources).sort()) hash.update(`${name}\n`).update(readFileSync(sources + name));
  for (const name of shared) hash.update(`${name}\n`).update(readFileSync(root + name));
  // The bundle holds package.json's version (postwise --version).
  hash.update(readFileSync(`${root}package.json`));
  const file = `${cacheDir}${hash.digest('hex').slice(0, 16)}.mjs`;
  if (existsSync(file)) return file;
  mkdirSync(cacheDir, { recursive: true });
  // Written aside and renamed, so that a run starting meanwhile never imports half a file.
  const partial = `${file}.${process.pid}.tmp`;
  await esbuild.build({
    entryPoints: [`${sources}main.ts`],
    outfile: partial,
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    logLevel: 'silent',
    // Loaded from node_modules when a browser is to be opened (login --web): it finds its own files beside it.
    external: ['open'],
    // The CommonJS packages inside (commander, qs) require Node's modules.
    banner: { js: "import { createRequire as __createRequire } from 'node:module'; const require = __createRequire(import.meta.url);" },
  });
  renameSync(partial, file);
  for (const old of readdirSync(cacheDir)) if (`${cacheDir}${old}` !== file && !old.endsWith('.tmp')) rmSync(`${cacheDir}${old}`, { force: true });
  return file;
}

let entry;
try {
  entry = await bundled();
} catch {
  entry = undefined;
}
if (entry) await import(pathToFileURL(entry).href);
else {
  const { register } = await import('tsx/esm/api');
  register();
  await import('../src/cli/main.ts');
}
