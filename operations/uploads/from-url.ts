import { z } from 'zod';
import { uuid } from '../../src/registry/fields.js';
import { defineOperation } from '../../src/registry/operation.js';
import { importImage } from './import.js';
import { MAX_UPLOAD_BYTES, scenarioId } from './upload.js';

export default defineOperation({
  id: 'importUploadFromUrl',
  method: 'POST',
  path: '/uploads/from-url',
  visibility: 'public',
  summary: 'Import an image from a URL: fetch it, store it and create its media',
  description: [
    'Fetches `url` on the server and answers `{ uploadId, publicUrl }`: a completed upload (named after the URL\'s last path segment)',
    'with its media, whose variants are queued (the media appears on completeUpload\'s answer; DELETE /uploads/{uploadId} deletes it).',
    'Only public addresses are fetched (unless the server\'s MEDIA_FETCH_ALLOW_HOSTS names the host), checked when connecting and',
    'again on every redirect (at most 3), so DNS rebinding fails: any other address, a user name or password in the URL, or a',
    `redirect to another scheme answers 400 URL_NOT_ALLOWED. An answer over ${MAX_UPLOAD_BYTES} bytes, not a JPEG, PNG, WebP or GIF by`,
    'its bytes (whatever its Content-Type), not a 2xx, unreachable, or not complete within 30 s answers 400 VALIDATION_ERROR. Both',
    'name the reason. The file spends the storage allowance as an upload does (403 STORAGE_QUOTA_EXCEEDED). A refusal leaves no',
    'upload, media or stored object behind.',
  ].join('\n'),
  input: { body: z.strictObject({ url: z.url({ protocol: /^https?$/ }).max(2048).meta({ description: 'An http(s) URL of an image.' }), scenarioId }) },
  output: z.object({ uploadId: uuid, publicUrl: z.string() }).meta({ id: 'ImportedUpload' }),
  errors: ['VALIDATION_ERROR', 'URL_NOT_ALLOWED', 'STORAGE_QUOTA_EXCEEDED'],
  idempotent: true,
  async handler({ url, scenarioId }, context) {
    const imported = await importImage(context, { url, scenarioId, fileName: lastPathSegment(url) });
    if ('code' in imported) return context.fail(imported.code, imported.code === 'STORAGE_QUOTA_EXCEEDED' ? imported.message : `url: ${imported.message}`);
    return { uploadId: imported.uploadId, publicUrl: imported.publicUrl };
  },
});

/** The URL's last path segment, percent-decoded where that is valid UTF-8 (`%zz` or `%E0` alone stay as sent). */
function lastPathSegment(url: string): string {
  const segment = new URL(url).pathname.split('/').pop() ?? '';
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}
