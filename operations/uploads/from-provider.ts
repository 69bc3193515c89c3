import { z } from 'zod';
import { MEDIA_PROVIDERS, mediaProvider, ProviderError } from '../../src/media/providers.js';
import { text } from '../../src/registry/fields.js';
import { defineOperation } from '../../src/registry/operation.js';
import { uuid } from '../../src/registry/fields.js';
import { provider } from '../media/search.js';
import { importImage } from './import.js';
import { MAX_UPLOAD_BYTES, scenarioId } from './upload.js';

export default defineOperation({
  id: 'importProviderMedia',
  method: 'POST',
  path: '/uploads/from-provider',
  visibility: 'public',
  summary: 'Attach a GIF found with searchMedia: copy it into this workspace\'s media',
  description: [
    'Copies the GIF `providerId` names (from searchMedia) into this workspace: fetched through the same guard as POST',
    '/uploads/from-url and stored as an upload whose media has `provider` GIPHY, so a post never depends on the provider\'s link.',
    '`mediaId` is what rows[].media takes (variants made by the worker). Unknown GIF: 404 NOT_FOUND; no GIPHY_API_KEY: 400;',
    'the provider failing: 502 PLATFORM_ERROR; the storage allowance: 403. A refusal leaves nothing behind.',
  ].join('\n'),
  input: {
    body: z.strictObject({
      provider,
      providerId: text.min(1).max(100).meta({ description: 'The GIF\'s id at the provider (searchMedia\'s `providerId`).' }),
      scenarioId,
    }),
  },
  output: z
    .object({ uploadId: uuid, mediaId: uuid, publicUrl: z.string(), provider: z.enum(MEDIA_PROVIDERS) })
    .meta({ id: 'ProviderUpload' }),
  errors: ['VALIDATION_ERROR', 'NOT_FOUND', 'PLATFORM_ERROR', 'URL_NOT_ALLOWED', 'STORAGE_QUOTA_EXCEEDED'],
  idempotent: true,
  async handler({ provider: name, providerId, scenarioId }, context) {
    const { config, fail } = context;
    const provider = mediaProvider(config, name, MAX_UPLOAD_BYTES);
    if ('unavailable' in provider) return fail('VALIDATION_ERROR', provider.unavailable);
    let item;
    try {
      item = await provider.get(providerId, AbortSignal.timeout(15_000));
    } catch (error) {
      if (error instanceof ProviderError) return fail('PLATFORM_ERROR', error.message);
      throw error;
    }
    if (!item) return fail('NOT_FOUND', `${name} has no GIF ${providerId}`);
    const imported = await importImage(context, { url: item.url, scenarioId, fileName: `${name.toLowerCase()}-${providerId}.gif`, provider: { name, id: providerId } });
    if ('code' in imported) {
      // The provider's file, not the caller's URL: a refusal of it is the provider's failure.
      return fail(imported.code === 'STORAGE_QUOTA_EXCEEDED' ? imported.code : 'PLATFORM_ERROR', imported.code === 'STORAGE_QUOTA_EXCEEDED' ? imported.message : `${name}'s file could not be imported: ${imported.message}`);
    }
    return { uploadId: imported.uploadId, mediaId: imported.mediaId, publicUrl: imported.publicUrl, provider: name };
  },
});
