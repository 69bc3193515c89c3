import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import { text, timestamp, uuid } from '../../src/registry/fields.js';
import { defineOperation } from '../../src/registry/operation.js';
import { enqueueUploadExpiry } from '../../src/worker/queue.js';
import { checksum, IMAGE_TYPES, keyName, MAX_UPLOAD_BYTES, reserveStorage, scenarioId, type ImageType } from './upload.js';

const imageTypes = Object.keys(IMAGE_TYPES) as ImageType[];

export default defineOperation({
  id: 'initiateUpload',
  method: 'POST',
  path: '/uploads/initiate',
  visibility: 'public',
  summary: 'Start an upload: reserve storage and get a signed URL to PUT the file to',
  description: [
    'Answers a URL that takes one `PUT` of the file until `expiresAt`: exactly `fileSize` bytes, with the `requiredHeaders`',
    '(Content-Type `fileType`, and `x-amz-checksum-sha256`, the checksum in base64), all covered by the signature. Then call',
    '`POST /uploads/complete`.',
    '',
    `Images only: ${imageTypes.join(', ')}, up to ${MAX_UPLOAD_BYTES} bytes (20 MiB). The size is reserved from the workspace's storage`,
    'allowance (its plan\'s; variants do not count) until the upload is completed, deleted, or its URL expires; over the allowance',
    'answers 403 STORAGE_QUOTA_EXCEEDED naming the limit, the usage and the plan. Takes an Idempotency-Key: a retry answers the same upload.',
  ].join('\n'),
  input: {
    body: z.strictObject({
      scenarioId,
      fileName: text.min(1).max(255).meta({ description: 'The file\'s name; kept (made safe) in the object key.' }),
      fileType: z.enum(imageTypes).meta({ description: 'The file\'s media type; complete checks the bytes\' real type.' }),
      fileSize: z.number().int().min(1).max(MAX_UPLOAD_BYTES).meta({ description: 'Bytes; the signed URL takes exactly this many.' }),
      checksum,
    }),
  },
  output: z
    .object({
      uploadType: z.enum(['single']).meta({ description: '`single`: one PUT of the whole file.' }),
      uploadId: uuid,
      signedUrl: z.string().meta({ description: 'PUT the bytes here with `requiredHeaders`; a secret until it expires: do not log it.' }),
      requiredHeaders: z.record(z.string(), z.string()),
      expiresAt: timestamp,
    })
    .meta({ id: 'InitiatedUpload' }),
  errors: ['STORAGE_QUOTA_EXCEEDED'],
  idempotent: true,
  async handler({ scenarioId, fileName, fileType, fileSize, checksum }, { db, storage, config, auth, fail }) {
    const uploadId = randomUUID();
    const objectKey = `uploads/${auth.workspaceId}/${uploadId}/${keyName(fileName)}`;
    const signedAt = new Date();
    const expiresAt = new Date(signedAt.getTime() + config.uploadUrlTtlSeconds * 1000);
    await db.begin(async (tx) => {
      const refusal = await reserveStorage(tx, auth.workspaceId, fileSize);
      if (refusal) fail('STORAGE_QUOTA_EXCEEDED', refusal);
      await tx`
        INSERT INTO uploads (id, organization_id, user_id, scenario_id, file_name, declared_type, size, checksum, object_key, expires_at)
        VALUES (${uploadId}, ${auth.workspaceId}, ${auth.userId}, ${scenarioId}, ${fileName}, ${fileType}, ${fileSize}, ${checksum}, ${objectKey}, ${expiresAt})`;
      await enqueueUploadExpiry(tx, uploadId, expiresAt);
    });
    const { url, requiredHeaders } = await storage.presignPut({
      key: objectKey,
      contentType: fileType,
      size: fileSize,
      sha256Base64: checksum,
      signedAt,
      expiresInSeconds: config.uploadUrlTtlSeconds,
    });
    return { uploadType: 'single' as const, uploadId, signedUrl: url, requiredHeaders, expiresAt: expiresAt.toISOString() };
  },
});
