/**
 * The baseline: a bare Express 5 app answering GET routes with constant bytes, in a process of its own.
 * Usage: baseline-server.ts PORT, with the routes on stdin as JSON `{ "<path>": "<body in base64>", ... }`
 * (stdin, because a list's bytes can outgrow a command line). Prints "ready" once it listens.
 */
import { text } from 'node:stream/consumers';
import express from 'express';
import { parse as parseQuery } from 'qs';

const [port] = process.argv.slice(2);
if (!port) {
  console.error('usage: baseline-server.ts PORT < {"<path>": "<body in base64>", ...}');
  process.exit(2);
}
const routes = JSON.parse(await text(process.stdin)) as Record<string, string>;

const app = express();
// The same settings as the service's app (src/http/app.ts), so the difference measured is the pipeline.
app.disable('x-powered-by');
app.set('etag', false);
app.set('query parser', (query: string) => parseQuery(query, { depth: 2, arrayLimit: 100, parameterLimit: 1000 }));
for (const [path, bodyBase64] of Object.entries(routes)) {
  const body = Buffer.from(bodyBase64, 'base64');
  app.get(path, (_req, res) => {
    res.set('content-type', 'application/json; charset=utf-8').send(body);
  });
}

const server = app.listen(Number(port), '127.0.0.1', (error?: Error) => {
  if (error) throw error;
  console.log('ready');
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
