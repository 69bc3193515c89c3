import events from 'node:events';
import http from 'node:http';
import express from 'express';

/** An express app listening on loopback at a free port, as the strict platform fakes start: its `host` (`127.0.0.1:port`) and `url`. */
export async function startLoopbackApp() {
  const app = express();
  app.disable('x-powered-by');
  const server = http.createServer(app);
  server.listen(0, '127.0.0.1');
  await events.once(server, 'listening');
  const host = `127.0.0.1:${(server.address() as { port: number }).port}`;
  return { app, server, host, url: `http://${host}` };
}

/** A request's headers as one string each (repeated ones joined), for a fake's request log. */
export function flatHeaders(headers: http.IncomingHttpHeaders): Record<string, string> {
  return Object.fromEntries(Object.entries(headers).map(([name, value]) => [name, Array.isArray(value) ? value.join(', ') : (value ?? '')]));
}

export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);
}

/** A fake's HTML page (its consent and error pages), titled with the server it plays. */
export function htmlPage(server: string, title: string, body: string): string {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${escapeHtml(title)} - ${server}</title></head><body><main><h1>${escapeHtml(title)}</h1>${body}</main></body></html>`;
}
