import { api, call, type Result, type Schema } from '../api.js';
import { MAX_UPLOAD_BYTES, UPLOAD_IMAGE_TYPES } from '../../platforms/rules.js';

/**
 * One file's upload, from the browser, in the API's three steps (docs/media.md#uploads): initiate (its type, size and
 * SHA-256), the signed PUT straight to the object store (XMLHttpRequest, for its upload progress), then complete.
 */

/** Why the API would refuse the file before anything is sent, or undefined. */
export function fileRefusal(file: File): string | undefined {
  if (!(UPLOAD_IMAGE_TYPES as readonly string[]).includes(file.type)) return `${file.name} is ${file.type || 'of an unknown type'}: JPEG, PNG, WebP or GIF images only`;
  if (file.size > MAX_UPLOAD_BYTES) return `${file.name} is ${file.size} bytes; uploads take at most ${MAX_UPLOAD_BYTES} bytes (20 MiB)`;
  if (file.size === 0) return `${file.name} is empty`;
  return undefined;
}

/** The SHA-256 of the bytes as base64 of the digest, as initiate, complete and `x-amz-checksum-sha256` take it. */
export async function sha256Base64(bytes: ArrayBuffer): Promise<string> {
  const digest = new Uint8Array(await crypto.subtle.digest('SHA-256', bytes));
  let binary = '';
  for (const byte of digest) binary += String.fromCharCode(byte);
  return btoa(binary);
}

/** PUTs `body` to the signed URL with its required headers (the browser sets Content-Length), reporting progress 0–1. */
export function putSigned(url: string, headers: Record<string, string>, body: Blob, onProgress: (fraction: number) => void): Promise<Result<null>> {
  return new Promise((resolve) => {
    const request = new XMLHttpRequest();
    request.open('PUT', url);
    for (const [name, value] of Object.entries(headers)) request.setRequestHeader(name, value);
    request.upload.onprogress = (event) => {
      if (event.lengthComputable) onProgress(event.loaded / event.total);
    };
    request.onload = () => {
      if (request.status >= 200 && request.status < 300) {
        resolve({ ok: true, data: null });
      } else {
        const code = /<Code>([^<]+)<\/Code>/.exec(request.responseText)?.[1] ?? `HTTP_${request.status}`;
        resolve({ ok: false, error: { code, message: `The object store refused the file (${request.status} ${code})`, status: request.status } });
      }
    };
    request.onerror = () =>
      resolve({ ok: false, error: { code: 'NETWORK', message: 'The object store could not be reached (or refused this page\'s origin: see docs/media.md, CORS)', status: 0 } });
    request.send(body);
  });
}

export type Uploaded = Schema<'UploadResult'>;

/**
 * The whole flow for one file; `onStep` says where it is (for the progress bar and its label), `onInitiated` gives the
 * upload's id (to delete it if the image is removed). A failure after initiate deletes the upload, so that nothing of
 * the storage allowance stays reserved for it; any failure, a thrown one included, is an answer, never a rejection.
 */
export async function uploadFile(
  file: File,
  onStep: (step: 'hashing' | 'uploading' | 'completing', fraction: number) => void,
  onInitiated: (uploadId: string) => void = () => {},
): Promise<Result<Uploaded>> {
  let uploadId: string | undefined;
  try {
    onStep('hashing', 0);
    const bytes = await file.arrayBuffer();
    const checksum = await sha256Base64(bytes);
    const initiated = await call(
      api.POST('/uploads/initiate', {
        body: { scenarioId: 'post_attachments', fileName: file.name, fileType: file.type as (typeof UPLOAD_IMAGE_TYPES)[number], fileSize: file.size, checksum },
      }),
    );
    if (!initiated.ok) return initiated;
    uploadId = initiated.data.uploadId;
    onInitiated(uploadId);
    onStep('uploading', 0);
    const put = await putSigned(initiated.data.signedUrl, initiated.data.requiredHeaders, new Blob([bytes], { type: file.type }), (fraction) => onStep('uploading', fraction));
    if (!put.ok) return await withdrawn(uploadId, put);
    onStep('completing', 1);
    const completed = await call(api.POST('/uploads/complete', { body: { uploadId, checksum } }));
    return completed.ok ? completed : await withdrawn(uploadId, completed);
  } catch (error) {
    // No crypto.subtle outside a secure context (HTTPS or loopback), or the file could not be read.
    const failure: Result<Uploaded> = { ok: false, error: { code: 'BROWSER', message: `This browser could not upload it (${String(error)})`, status: 0 } };
    return uploadId ? withdrawn(uploadId, failure) : failure;
  }
}

/** Deletes an upload that will not be used, so it stops counting against the storage allowance; answers `failure`. */
export async function withdrawn<T>(uploadId: string, failure: T): Promise<T> {
  await call(api.DELETE('/uploads/{uploadId}', { params: { path: { uploadId } } }));
  return failure;
}
