import type { Response } from 'express';

/**
 * Answers with JSON text. Express's `send` copies the text into a Buffer to count its bytes; here they are counted
 * in place and the text goes to the socket as it is: for a page of posts that copy was a measurable part of a REST call's
 * CPU (docs/benchmarks.md).
 */
export function sendJsonText(res: Response, status: number, text: string): void {
  res.statusCode = status;
  res.setHeader('content-type', 'application/json; charset=utf-8');
  res.setHeader('content-length', Buffer.byteLength(text));
  res.end(text);
}

export const sendJson = (res: Response, status: number, body: unknown): void => sendJsonText(res, status, JSON.stringify(body));
