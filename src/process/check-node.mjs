// Run before anything else by the npm scripts, in syntax any Node can read: an older Node would otherwise
// fail on a flag or a language feature with a message that does not say what is wrong.
import { readFileSync } from 'fs';

var wanted = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')).engines.node; // ">=20.19"
var need = wanted.replace('>=', '').split('.').map(Number);
var have = process.versions.node.split('.').map(Number);
if (have[0] < need[0] || (have[0] === need[0] && have[1] < (need[1] || 0))) {
  process.stderr.write('postwise: Node ' + process.versions.node + ' is too old; Postwise needs Node ' + wanted + ' (install a newer Node, e.g. the current LTS)\n');
  process.exit(1);
}
