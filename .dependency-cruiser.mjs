// What may import what (docs/architecture.md, "The map"): checked by test/imports.test.ts on every `npm test`.
// Type imports count (tsPreCompilationDeps): a circle of types is still a circle for the reader.

/** Our own code; packages and Node's modules are not limited here. */
const ours = '^(src|operations|migrations|test|bench|tools|bin)/';

/** A rule every import must keep. */
const rule = (name, comment, from, to) => ({ name, severity: 'error', comment, from, to });

export default {
  forbidden: [
    rule('no-circular', 'No import circle, type imports included.', {}, { circular: true }),
    rule('registry-knows-no-operation', 'The registry defines operations and runs them; it never names one.', { path: '^src/registry/' }, { path: '^operations/' }),
    rule(
      'dashboard-is-a-client',
      'The dashboard is bundled for the browser: it imports its own files and only the shared modules its build hashes ' +
        '(sourceHash in src/http/dashboard.ts).',
      { path: '^src/dashboard/' },
      { path: ours, pathNot: ['^src/dashboard/', '^src/platforms/(rules|facets)\\.ts$', '^operations/events/types\\.ts$', '^src/oauth/scopes\\.ts$'] },
    ),
    rule(
      'dashboard-shared-modules-are-leaves',
      'What the dashboard shares with the server imports nothing else of ours, so the bundle holds no server code.',
      { path: '^(src/platforms/(rules|facets)|operations/events/types|src/oauth/scopes)\\.ts$' },
      { path: ours, pathNot: '^src/platforms/(rules|facets)\\.ts$' },
    ),
    rule(
      'cli-is-a-client',
      'The command-line client speaks HTTP to a server: it imports no server module (docs/cli.md), only the file lock ' +
        'it shares (around the renewal of an app sign-in) and a request\'s deadline (bin/postwise.mjs hashes them into the bundle\'s name).',
      { path: '^(src/cli/|bin/)' },
      { path: ours, pathNot: ['^src/cli/', '^src/db/file-lock\\.ts$', '^src/process/deadline\\.ts$'] },
    ),
    rule(
      'cli-shared-modules-are-leaves',
      'What the command-line client shares with the server imports nothing else of ours, so the client holds no server code.',
      { path: '^src/(db/file-lock|process/startup|process/deadline)\\.ts$' },
      { path: ours, pathNot: '^src/process/startup\\.ts$' },
    ),
    rule(
      'foundations-stay-below',
      'The process, the database, the object store, the platforms, media and auth are used by the rest and use none of it.',
      { path: '^src/(process|db|storage|platforms|media|auth)/' },
      { path: '^(operations/|src/(registry|http|mcp|worker|service|channels|admin|dashboard|cli)/)' },
    ),
    rule(
      'wiring-only-from-entry-points',
      'src/service builds and starts every part: only the entry points (and tests and benchmarks) import it.',
      { path: '^(src|operations)/', pathNot: ['^src/main\\.ts$', '^src/admin/main\\.ts$', '^src/mcp/stdio\\.ts$', '^src/service/'] },
      { path: '^src/service/' },
    ),
    rule('product-code-imports-no-test', 'Tests and benchmarks use the product, never the other way.', { path: '^(src|operations)/' }, { path: '^(test|bench)/' }),
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { extensions: ['.ts', '.tsx', '.js', '.mjs', '.json'] },
  },
};
