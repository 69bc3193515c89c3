import { createHash, randomBytes } from 'node:crypto';
import { mkdir, readdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import * as esbuild from 'esbuild';
import express, { type Request, type Response, type Router } from 'express';
import type { Logger } from '../process/logger.js';

/**
 * The dashboard: one HTML shell for every page URL, and the script and stylesheet it loads, bundled by esbuild
 * from src/dashboard at the first start and cached by content hash, so `npm install && npm start` is all it needs
 * (no separate build step, no CDN). See docs/dashboard.md.
 */

/** The page URLs; the client renders each. `/` goes to the channels. */
export const DASHBOARD_PAGES = [
  '/login',
  '/setup',
  '/invite',
  '/compose',
  '/posts',
  '/posts/:id',
  '/approvals',
  '/recycling',
  '/calendar',
  '/channels',
  '/usage',
  '/settings/api-keys',
  '/settings/webhooks',
  '/settings/members',
  '/settings/workspace',
  '/authorize/:uid',
];

const ASSET_PREFIX = '/dashboard/assets/';
/** Paths that belong to the API, MCP and the server's own pages, never to the dashboard. */
const NOT_PAGES = /^\/(api|mcp|auth|oauth|connect|dashboard)(\/|$)/;
const projectRoot = fileURLToPath(new URL('../../', import.meta.url));
const sourceDir = fileURLToPath(new URL('../dashboard/', import.meta.url));
const defaultCacheDir = join(projectRoot, 'node_modules', '.cache', 'postwise-dashboard');

/**
 * The shell's policy: scripts and styles from this origin only (so no inline script and no style attribute), calls
 * to this origin and to the object store's (the composer PUTs files to its signed URLs: docs/media.md); images may come
 * from elsewhere because channel avatars live on the platforms' CDNs, and the store's media is named all the same.
 */
export function contentSecurityPolicy(store?: { upload: string; public: string }): string {
  return [
    "default-src 'none'",
    "script-src 'self'",
    "style-src 'self'",
    `img-src 'self' data: https: http:${store ? ` ${store.public}` : ''}`,
    `connect-src 'self'${store ? ` ${store.upload}` : ''}`,
    "form-action 'self'",
    "base-uri 'none'",
    "frame-ancestors 'none'",
  ].join('; ');
}

interface Asset {
  type: string;
  body: Buffer;
  gzipped: Buffer;
}

export interface DashboardBuild {
  /** The hashed file names, as served under /dashboard/assets/. */
  script: string;
  stylesheet: string;
  /** Where the cached build lives, and whether this start made it. */
  directory: string;
  built: boolean;
}

/**
 * The dashboard's Router: mount it with `app.use(...)` after /api/v1. Builds (or finds cached) the assets before it
 * answers, so the first start after a change to src/dashboard takes a moment longer (see docs/dashboard.md).
 */
export async function dashboardPages(app: { logger: Logger; storage?: { origins: { upload: string; public: string } } }, options: { cacheDir?: string } = {}): Promise<Router> {
  const started = performance.now();
  const build = await buildDashboard(options.cacheDir ?? defaultCacheDir);
  app.logger.info(build.built ? 'dashboard built' : 'dashboard build reused', {
    directory: build.directory,
    ms: Math.round(performance.now() - started),
  });
  const assets = new Map<string, Asset>();
  for (const [name, type] of [
    [build.script, 'text/javascript; charset=utf-8'],
    [build.stylesheet, 'text/css; charset=utf-8'],
  ] as const) {
    const body = await readFile(join(build.directory, name));
    assets.set(name, { type, body, gzipped: gzipSync(body, { level: 9 }) });
  }
  const shell = shellHtml(build);
  const policy = contentSecurityPolicy(app.storage?.origins);

  const router = express.Router();
  router.get(`${ASSET_PREFIX}:file`, (req: Request, res: Response, next) => {
    const asset = assets.get(String(req.params.file));
    if (!asset) return next();
    const gzip = req.acceptsEncodings('gzip', 'identity') === 'gzip';
    res.set({
      'Content-Type': asset.type,
      'Cache-Control': 'public, max-age=31536000, immutable',
      'X-Content-Type-Options': 'nosniff',
      Vary: 'Accept-Encoding',
      ...(gzip && { 'Content-Encoding': 'gzip' }),
    });
    res.send(gzip ? asset.gzipped : asset.body);
  });
  router.get('/', (_req: Request, res: Response) => res.redirect(302, '/channels'));
  const sendShell = (res: Response, status: number) => {
    res.status(status).set({
      'Content-Type': 'text/html; charset=utf-8',
      'Cache-Control': 'no-store',
      'Content-Security-Policy': policy,
      'X-Content-Type-Options': 'nosniff',
      'X-Frame-Options': 'DENY',
      // The setup and invitation links carry their token in the URL: never hand it to another site.
      'Referrer-Policy': 'no-referrer',
      'Cross-Origin-Opener-Policy': 'same-origin',
    });
    res.send(shell);
  };
  router.get(DASHBOARD_PAGES, (_req: Request, res: Response) => sendShell(res, 200));
  // A browser asking for a page that does not exist gets the shell, which says so inside the dashboard's frame; any
  // other client (an API client, curl) keeps the JSON 404 of the rest of the service.
  router.get('/{*path}', (req: Request, res: Response, next) => {
    if (NOT_PAGES.test(req.path) || req.accepts(['json', 'html']) !== 'html') return next();
    sendShell(res, 404);
  });
  return router;
}

function shellHtml(build: DashboardBuild): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Postwise</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="${ASSET_PREFIX}${build.stylesheet}">
<script type="module" src="${ASSET_PREFIX}${build.script}"></script>
</head>
<body>
<div id="app"><noscript><p>The Postwise dashboard needs JavaScript.</p></noscript></div>
</body>
</html>
`;
}

/**
 * The assets for the current sources: the cached build of the same content hash, or a new one. Many processes may
 * start at once (the tests do), so each builds into a directory of its own and renames it into place; a process that
 * loses the race uses the winner's, which is the same content.
 */
export async function buildDashboard(cacheDir: string = defaultCacheDir): Promise<DashboardBuild> {
  const hash = await sourceHash();
  const directory = join(cacheDir, hash);
  const cached = await readManifest(directory);
  if (cached) return { ...cached, directory, built: false };

  await mkdir(cacheDir, { recursive: true });
  const temporary = join(cacheDir, `.${hash}-${process.pid}-${randomBytes(4).toString('hex')}`);
  try {
    const manifest = await bundle(temporary);
    await writeFile(join(temporary, 'manifest.json'), JSON.stringify(manifest));
    try {
      await rename(temporary, directory);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code !== 'ENOTEMPTY' && code !== 'EEXIST' && code !== 'EPERM') throw error;
      const winner = await readManifest(directory);
      if (!winner) throw error;
      return { ...winner, directory, built: false };
    }
    await pruneOldBuilds(cacheDir, hash);
    return { ...manifest, directory, built: true };
  } finally {
    await rm(temporary, { recursive: true, force: true });
  }
}

/** Older builds are not reused once the sources have moved on; a process still serving one holds it in memory. */
const PRUNE_AFTER_MS = 60 * 60_000;

async function pruneOldBuilds(cacheDir: string, current: string) {
  for (const entry of await readdir(cacheDir).catch(() => [])) {
    if (entry === current || entry.startsWith(`.${current}-`)) continue;
    const path = join(cacheDir, entry);
    const modified = await stat(path).then((stats) => stats.mtimeMs, () => Date.now());
    // Not one another process is writing or reading right now (an older checkout starting at the same moment).
    if (Date.now() - modified > PRUNE_AFTER_MS) await rm(path, { recursive: true, force: true });
  }
}

async function bundle(outdir: string): Promise<Pick<DashboardBuild, 'script' | 'stylesheet'>> {
  const result = await esbuild.build({
    absWorkingDir: projectRoot,
    entryPoints: { main: join(sourceDir, 'main.tsx'), styles: join(sourceDir, 'styles.css') },
    outdir,
    entryNames: '[name]-[hash]',
    bundle: true,
    minify: true,
    format: 'esm',
    // Browsers of the last few years: native ES modules, optional chaining, <dialog>.
    target: ['chrome100', 'firefox100', 'safari15.4', 'edge100'],
    jsx: 'automatic',
    jsxImportSource: 'preact',
    define: { 'process.env.NODE_ENV': '"production"' },
    legalComments: 'none',
    metafile: true,
    logLevel: 'silent',
  });
  const outputs = Object.entries(result.metafile.outputs);
  const nameOf = (entry: string) => {
    const found = outputs.find(([, output]) => output.entryPoint?.endsWith(entry));
    if (!found) throw new Error(`the dashboard build made no output for ${entry}`);
    return relative(outdir, join(projectRoot, found[0]));
  };
  return { script: nameOf('main.tsx'), stylesheet: nameOf('styles.css') };
}

async function readManifest(directory: string): Promise<Pick<DashboardBuild, 'script' | 'stylesheet'> | undefined> {
  try {
    const manifest = JSON.parse(await readFile(join(directory, 'manifest.json'), 'utf8')) as { script: string; stylesheet: string };
    return { script: manifest.script, stylesheet: manifest.stylesheet };
  } catch {
    return undefined;
  }
}

/**
 * What the build depends on: every file of src/dashboard, the shared modules it imports (src/platforms' rules.ts and
 * facets.ts, operations/events/types.ts, src/oauth/scopes.ts), this file (the build options), and the versions of esbuild and of the bundled packages. The same sources give the same hash on every machine.
 */
async function sourceHash(): Promise<string> {
  const hash = createHash('sha256');
  hash.update(`esbuild ${esbuild.version}\n`);
  // @atproto/api and tlds: the composer's preview bundles @atproto/api's facet detection (src/platforms/facets.ts).
  for (const name of ['preact', 'openapi-fetch', '@atproto/api', 'tlds']) {
    const manifest = await readFile(join(projectRoot, 'node_modules', name, 'package.json'), 'utf8').catch(() => '{}');
    hash.update(`${name} ${(JSON.parse(manifest) as { version?: string }).version ?? 'unknown'}\n`);
  }
  const shared = ['../platforms/rules.ts', '../platforms/facets.ts', '../../operations/events/types.ts', '../oauth/scopes.ts'].map((name) => fileURLToPath(new URL(name, import.meta.url)));
  const files = [fileURLToPath(import.meta.url), ...shared, ...(await filesUnder(sourceDir))];
  for (const file of files) {
    hash.update(`${relative(projectRoot, file)}\n`);
    hash.update(await readFile(file));
  }
  return hash.digest('hex').slice(0, 16);
}

async function filesUnder(directory: string): Promise<string[]> {
  const entries = await readdir(directory, { withFileTypes: true, recursive: true });
  return entries
    .filter((entry) => entry.isFile())
    .map((entry) => join(entry.parentPath, entry.name))
    .sort();
}
