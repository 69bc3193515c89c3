import { createHash } from 'node:crypto';
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { readFile } from 'node:fs/promises';
import { basename, extname } from 'node:path';
import { fileTypeFromBuffer } from 'file-type';
import { newIdempotencyKey, send, succeeded, type ClientOptions } from './client.js';
import { CliFailure, EXIT, usage } from './failure.js';

const BY_EXTENSION: Record<string, string> = { '.jpg': 'image/jpeg', '.jpeg': 'image/jpeg', '.png': 'image/png', '.webp': 'image/webp', '.gif': 'image/gif' };

/** Reports the bytes sent of a file (a bar on a terminal, nothing otherwise). */
export type Progress = (name: string, sent: number, total: number) => void;

/** A progress bar on stderr, redrawn in place: `photo.jpg [########------------]  40%`. */
export function progressBar(stream: NodeJS.WriteStream): Progress {
  return (name, sent, total) => {
    const share = total ? sent / total : 1;
    const filled = Math.round(share * 20);
    stream.write(`\r${name} [${'#'.repeat(filled)}${'-'.repeat(20 - filled)}] ${String(Math.round(share * 100)).padStart(3)}%${sent === total ? '\n' : ''}`);
  };
}

/**
 * Uploads one file as any client does (docs/media.md): its SHA-256 computed here, `POST /uploads/initiate` (under an
 * Idempotency-Key), the signed PUT straight to the object store, `POST /uploads/complete`. Answers complete's result.
 */
export async function uploadFile(client: ClientOptions, file: string, progress?: Progress): Promise<Record<string, unknown>> {
  const bytes = await readFile(file).catch((error: Error) => {
    throw usage(`${file}: ${error.message}`);
  });
  const fileType = (await fileTypeFromBuffer(bytes))?.mime ?? BY_EXTENSION[extname(file).toLowerCase()];
  if (!fileType) throw usage(`${file}: not an image this service takes (JPEG, PNG, WebP or GIF)`);
  const checksum = createHash('sha256').update(bytes).digest('base64');
  const started = succeeded(
    await send(client, {
      method: 'POST',
      path: '/uploads/initiate',
      body: { scenarioId: 'post_attachments', fileName: basename(file), fileType, fileSize: bytes.length, checksum },
      idempotencyKey: newIdempotencyKey(),
    }),
  ).json as { uploadId: string; signedUrl: string; requiredHeaders: Record<string, string> };
  client.trace?.('> PUT (the signed URL, not shown)');
  await put(started.signedUrl, bytes, started.requiredHeaders, (sent) => progress?.(basename(file), sent, bytes.length));
  return succeeded(await send(client, { method: 'POST', path: '/uploads/complete', body: { uploadId: started.uploadId, checksum } })).json as Record<string, unknown>;
}

/** The signed PUT, written in chunks so that its progress can be told (fetch cannot report an upload's progress). */
function put(url: string, bytes: Buffer, headers: Record<string, string>, sent: (bytes: number) => void): Promise<void> {
  const CHUNK = 64 * 1024;
  return new Promise((resolve, reject) => {
    const target = new URL(url);
    const request = (target.protocol === 'https:' ? httpsRequest : httpRequest)(target, { method: 'PUT', headers: { ...headers, 'content-length': bytes.length } }, (response) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.on('end', () => {
        if ((response.statusCode ?? 0) < 300) return resolve();
        // The store's own words (S3's XML <Message>), without the URL.
        const message = /<Message>([^<]*)<\/Message>/.exec(Buffer.concat(chunks).toString())?.[1] ?? `HTTP ${response.statusCode}`;
        reject(new CliFailure('UPLOAD_REFUSED', `The object store refused the file: ${message}`, EXIT.other));
      });
    });
    request.on('error', (error) => reject(new CliFailure('UNREACHABLE', `The object store could not be reached (${error.message})`, EXIT.unreachable)));
    let offset = 0;
    const next = () => {
      while (offset < bytes.length) {
        const chunk = bytes.subarray(offset, offset + CHUNK);
        offset += chunk.length;
        const more = request.write(chunk);
        sent(offset);
        if (!more) return void request.once('drain', next);
      }
      if (bytes.length === 0) sent(0);
      request.end();
    };
    next();
  });
}
