// Builds a native dependency from package.json's postinstall (`node tools/build-native.mjs node_modules/better-sqlite3`),
// in place of its own install script, which package.json's allowScripts keeps npm from running. The steps are the
// package's (prebuild-install if its install script uses it, else or when no prebuilt binary can be had, node-gyp
// clean, configure and build), with one fix between configure and build: gyp's make generator (node-gyp's
// gyp/pylib/gyp/generator/make.py) writes an action's output directories and LD_LIBRARY_PATH into its shell command
// unquoted, as absolute paths (`mkdir -p $(obj)/gen/sqlite3`), so in a checkout at `/tmp/x/my project` the shell
// splits them and `mkdir -p` creates `/tmp/x/my`. Here they are quoted. It cannot be done where npm runs the package's
// own script: npm ignores its node-gyp setting for a dependency's scripts, and patches/ are applied only after them.
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { basename, join, resolve } from 'node:path';

const dir = resolve(process.argv[2] ?? '.');
const name = basename(dir);
if (!existsSync(join(dir, 'binding.gyp'))) process.exit(0); // not installed (npm ci --omit=dev leaves dev dependencies out)

/** True when a binary in build/Release loads in this Node: one built for another Node's ABI is built again. */
function built() {
  const release = join(dir, 'build', 'Release');
  const binaries = existsSync(release) ? readdirSync(release).filter((file) => file.endsWith('.node')) : [];
  return binaries.some((file) => {
    try {
      process.dlopen({ exports: {} }, join(release, file));
      return true;
    } catch {
      return false;
    }
  });
}

/** Runs a node script in the package's directory; its output is shown only when it fails, as npm does. */
function step(script, args) {
  const result = spawnSync(process.execPath, [script, ...args], { cwd: dir, encoding: 'utf8', maxBuffer: 256 * 1024 * 1024 });
  return { ok: result.status === 0, output: `${result.stdout}${result.stderr}${result.error ?? ''}` };
}

function mustStep(script, args) {
  const { ok, output } = step(script, args);
  if (ok) return;
  process.stderr.write(`${output}\npostwise: building ${name} failed (node-gyp ${args.join(' ')}, above)\n`);
  process.exit(1);
}

/** Quotes, in the `cmd_` lines of build/**\/*.mk, the directories after `mkdir -p` and the LD_LIBRARY_PATH (LIBPATH) value. */
function quoteActionPaths() {
  for (const file of readdirSync(join(dir, 'build'), { recursive: true, encoding: 'utf8' }).filter((path) => path.endsWith('.mk'))) {
    const path = join(dir, 'build', file);
    const text = readFileSync(path, 'utf8');
    const quoted = text.replace(/^cmd_.*$/gm, (line) =>
      line
        .replace(/\b(LD_LIBRARY_PATH|LIBPATH)=([^;"]+);/, '$1="$2";')
        .replace(/\bmkdir -p ([^;"]+);/, (_, dirs) => `mkdir -p ${dirs.split(' ').map((each) => `"${each}"`).join(' ')};`),
    );
    if (quoted !== text) writeFileSync(path, quoted);
  }
}

if (built()) process.exit(0);
const install = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')).scripts?.install ?? '';
if (/\bprebuild-install\b/.test(install) && step(createRequire(join(dir, 'package.json')).resolve('prebuild-install/bin.js'), []).ok) process.exit(0);

if (!process.env.npm_execpath) {
  process.stderr.write('postwise: tools/build-native.mjs uses the node-gyp of the npm that runs it: run it through npm (npm run postinstall)\n');
  process.exit(1);
}
const nodeGyp = createRequire(process.env.npm_execpath).resolve('node-gyp/bin/node-gyp.js');
process.stdout.write(`postwise: building ${name} from source with node-gyp (a minute or two)\n`);
mustStep(nodeGyp, ['clean', 'configure', '--release']);
quoteActionPaths();
mustStep(nodeGyp, ['build', '--release']);
