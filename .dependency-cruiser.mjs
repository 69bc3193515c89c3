// What may import what (docs/architecture.md, "The map"): checked by test/imports.test.ts on every `npm test`.
// Type imports count (tsPreCompilationDeps): a circle of types is still a circle for the reader.

/** Our own code; packages and Node's modules are not limited here. */
const ours = '^(src|operations|migrations|test|bench|tools|bin)/';

export default {
  forbidden: [
    { name: 'no-circular', severity: 'error', comment: 'No import circle, type imports included.', from: {}, to: { circular: true } },
    {
      name: 'registry-knows-no-operation',
      severity: 'error',
      comment: 'The registry defines operations and runs them; it never names one.',
      from: { path: '^src/registry/' },
      to: { path: '^operations/' },
    },
    {
      name: 'dashboard-is-a-client',
      severity: 'error',
      comment:
        'The dashboard is bundled for the browser: it imports its own files and only the shared modules its build hashes ' +
        '(sourceHash in src/http/dashboard.ts).',
      from: { path: '^src/dashboard/' },
      to: { path: ours, pathNot: ['^src/dashboard/', '^src/platforms/(rules|facets)\\.ts$', '^operations/events/types\\.ts$'] },
    },
    {
      name: 'dashboard-shared-modules-are-leaves',
      severity: 'error',
      comment: 'What the dashboard shares with the server imports nothing else of ours, so the bundle holds no server code.',
      from: { path: '^(src/platforms/(rules|facets)|operations/events/types)\\.ts$' },
      to: { path: ours, pathNot: '^src/platforms/(rules|facets)\\.ts$' },
    },
    {
      name: 'cli-is-a-client',
      severity: 'error',
      comment: 'The command-line client speaks HTTP to a server: it imports no server module (docs/cli.md).',
      from: { path: '^(src/cli/|bin/)' },
      to: { path: ours, pathNot: '^src/cli/' },
    },
    {
      name: 'foundations-stay-below',
      severity: 'error',
      comment: 'The process, the database, the object store, the platforms, media and auth are used by the rest and use none of it.',
      from: { path: '^src/(process|db|storage|platforms|media|auth)/' },
      to: { path: '^(operations/|src/(registry|http|mcp|worker|service|channels|admin|dashboard|cli)/)' },
    },
    {
      name: 'wiring-only-from-entry-points',
      severity: 'error',
      comment: 'src/service builds and starts every part: only the entry points (and tests and benchmarks) import it.',
      from: { path: '^(src|operations)/', pathNot: ['^src/main\\.ts$', '^src/admin/main\\.ts$', '^src/mcp/stdio\\.ts$', '^src/service/'] },
      to: { path: '^src/service/' },
    },
    {
      name: 'product-code-imports-no-test',
      severity: 'error',
      from: { path: '^(src|operations)/' },
      to: { path: '^(test|bench)/' },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { extensions: ['.ts', '.tsx', '.js', '.mjs', '.json'] },
  },
};
