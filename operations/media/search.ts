import { z } from 'zod';
import { MEDIA_PROVIDERS, mediaProvider, ProviderError } from '../../src/media/providers.js';
import { limit, text } from '../../src/registry/fields.js';
import { defineOperation } from '../../src/registry/operation.js';
import { MAX_UPLOAD_BYTES } from '../uploads/upload.js';

export const provider = z.enum(MEDIA_PROVIDERS).default('GIPHY').meta({ description: 'The GIF provider: GIPHY (the one this server offers).' });

export const ProviderResult = z
  .object({
    provider: z.enum(MEDIA_PROVIDERS),
    providerId: z.string().meta({ description: 'What POST /uploads/from-provider takes.' }),
    title: z.string(),
    previewUrl: z.string().meta({ description: 'A small rendition, on the provider.' }),
    previewWidth: z.number().int(),
    previewHeight: z.number().int(),
    width: z.number().int().meta({ description: 'Of the file imported.' }),
    height: z.number().int(),
    pageUrl: z.string(),
    attribution: z.object({ name: z.string(), url: z.string() }).meta({ description: 'Its uploader, or the provider.' }),
  })
  .meta({ id: 'ProviderResult' });

export default defineOperation({
  id: 'searchMedia',
  method: 'GET',
  path: '/media/search',
  visibility: 'public',
  summary: 'Search a GIF provider (GIPHY) for GIFs to attach',
  description: [
    'Asks the provider (GIPHY, with this server\'s key) for GIFs, best match first, each with a preview and whom to credit (show',
    '"Powered by GIPHY" beside results). Nothing is stored: attach one with POST /uploads/from-provider and its `providerId`. No',
    'GIPHY_API_KEY on this server: 400 VALIDATION_ERROR; the provider refusing or not answering: 502 PLATFORM_ERROR.',
  ].join('\n'),
  input: {
    query: z.object({
      query: text.trim().min(1).max(50).meta({ description: 'What to look for (at most 50 characters).' }),
      provider,
      limit: limit(24, 50),
      offset: z.coerce.number().int().min(0).max(4999).default(0).meta({ description: 'How many results to skip (paging).' }),
      rating: z.enum(['g', 'pg', 'pg-13', 'r']).default('pg-13').meta({ description: 'The most a result may be rated (GIPHY\'s ratings); pg-13 unless said.' }),
    }),
  },
  output: z
    .object({
      items: z.array(ProviderResult),
      total: z.number().int().meta({ description: 'How many the provider has for this query.' }),
      nextOffset: z.number().int().nullable().meta({ description: 'The `offset` of the next page; null at the end.' }),
    })
    .meta({ id: 'ProviderResults' }),
  errors: ['VALIDATION_ERROR', 'PLATFORM_ERROR'],
  async handler({ query, provider: name, limit, offset, rating }, { config, fail }) {
    const provider = mediaProvider(config, name, MAX_UPLOAD_BYTES);
    if ('unavailable' in provider) return fail('VALIDATION_ERROR', provider.unavailable);
    try {
      const { items, total } = await provider.search(query, { limit, offset, rating }, AbortSignal.timeout(15_000));
      const next = offset + items.length;
      return {
        items: items.map(({ url: _file, size: _size, ...shown }) => shown),
        total,
        nextOffset: items.length === limit && next < Math.min(total, 5000) ? next : null,
      };
    } catch (error) {
      if (error instanceof ProviderError) return fail('PLATFORM_ERROR', error.message);
      throw error;
    }
  },
});
