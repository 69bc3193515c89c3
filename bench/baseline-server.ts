/**
 * The baseline: a bare Express 5 app answering one GET route with constant bytes, in a process of its own.
 * Usage: baseline-server.ts PORT PATH BODY_BASE64. Prints "ready" once it listens.
 */
import express from 'express';

const [port, path, bodyBase64] = process.argv.slice(2);
if (!port || !path || !bodyBase64) {
  console.error('usage: baseline-server.ts PORT PATH BODY_BASE64');
  process.exit(2);
}
const body = Buffer.from(bodyBase64, 'base64');

const app = express();
// The same settings as the service's app (src/http/app.ts), so the difference measured is the pipeline.
app.disable('x-powered-by');
app.set('etag', false);
app.get(path, (_req, res) => {
  res.set('content-type', 'application/json; charset=utf-8').send(body);
});

const server = app.listen(Number(port), '127.0.0.1', (error?: Error) => {
  if (error) throw error;
  console.log('ready');
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
