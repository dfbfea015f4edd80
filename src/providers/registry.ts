import type { AdapterKind } from '../catalog/catalog-types';
import type { Catalog } from '../catalog/catalog.service';
import { resolveVendorConnection } from '../catalog/vendor-connection';
import type { Config } from '../config';
import { ApiError } from '../errors';
import { createDevProvider } from './dev/dev-provider';
import { pooledProvider } from './key-pool';
import { observeProvider, type VendorCallObserver } from './observed-provider';
import type {
  EmbeddingModel,
  LanguageModel,
  SpeechModel,
  TranscriptionModel,
  VendorAdapterOptions,
  VendorProvider,
} from './provider';

/**
 * The only place that maps a catalog vendor's `adapter` to code. Vendors themselves (which exist, their
 * keys, their URLs) come from the catalog and the settings; nothing here lists models or vendors.
 * HTTP adapters are required on first use, so a process that only ever calls `dev` (the embedded default,
 * most tests) never loads the AI SDK; `typeof import` keeps the calls type-checked all the same.
 */
const adapterFactories: Record<AdapterKind, (options: VendorAdapterOptions) => VendorProvider> = {
  openai: (options) =>
    (require('./openai/openai-provider') as typeof import('./openai/openai-provider')).createOpenAIProvider(options),
  anthropic: (options) =>
    (
      require('./anthropic/anthropic-provider') as typeof import('./anthropic/anthropic-provider')
    ).createAnthropicProvider(options),
  google: (options) =>
    (require('./google/google-provider') as typeof import('./google/google-provider')).createGoogleProvider(options),
  'openai-compatible': (options) =>
    (
      require('./openai-compatible/openai-compatible-provider') as typeof import('./openai-compatible/openai-compatible-provider')
    ).createOpenAICompatibleProvider(options),
  deepgram: (options) =>
    (require('./deepgram/deepgram-provider') as typeof import('./deepgram/deepgram-provider')).createDeepgramProvider(
      options,
    ),
  dev: (options) => createDevProvider({ vendor: options.vendor }),
};

export interface ProviderRegistry {
  /** 400 `model.not_available` when the vendor is unknown, not configured or has no language models. */
  languageModel(vendorCode: string): LanguageModel;
  /** 400 `model.not_available` when the vendor is unknown, not configured or has no embedding models. */
  embeddingModel(vendorCode: string): EmbeddingModel;
  /** 400 `model.not_available` when the vendor is unknown, not configured or has no speech models. */
  speechModel(vendorCode: string): SpeechModel;
  /** 400 `model.not_available` when the vendor is unknown, not configured or has no transcription models. */
  transcriptionModel(vendorCode: string): TranscriptionModel;
}

export interface ProviderRegistryOptions {
  catalog: Pick<Catalog, 'getVendor'>;
  /** config.providers: timeouts, retries, the stream budget (default 64 MiB) and every *_API_KEY / *_BASE_URL setting. */
  settings: Omit<Config['providers'], 'maxStreamBytes' | 'circuit'> & { maxStreamBytes?: number };
  /** Injected into every HTTP adapter (tests point vendors at loopback fakes through base URLs instead). */
  fetch?: typeof globalThis.fetch;
  /** Told of every vendor call when it ends (metrics and the debug log). */
  observer?: VendorCallObserver;
}

export function createProviderRegistry(options: ProviderRegistryOptions): ProviderRegistry {
  const { catalog, settings } = options;
  // One adapter per vendor, created on first use: a vendor nobody calls costs nothing.
  const providers = new Map<string, VendorProvider>();

  function provider(vendorCode: string): VendorProvider {
    const cached = providers.get(vendorCode);
    if (cached) return cached;
    const vendor = catalog.getVendor(vendorCode);
    if (!vendor) throw notAvailable(`Unknown vendor "${vendorCode}".`);
    const connection = resolveVendorConnection(vendor, settings.settings);
    if (!connection.available) {
      throw notAvailable(
        `Vendor "${vendor.code}" is not configured${connection.missing ? ` (set ${connection.missing})` : ''}.`,
      );
    }
    const adapterFor = (apiKey: string | undefined) =>
      adapterFactories[vendor.adapter]({
        vendor: vendor.code,
        apiKey,
        baseURL: connection.baseURL,
        timeoutMs: settings.timeoutMs,
        maxRetries: settings.maxRetries,
        maxStreamBytes: settings.maxStreamBytes,
        fetch: options.fetch,
      });
    const observe = (adapter: VendorProvider, key?: string) =>
      options.observer ? observeProvider(adapter, vendor.code, options.observer, key) : adapter;
    // Several keys: one adapter each, observed by the key's position (never the key), taken in turn (key-pool.ts).
    const observed = connection.apiKeys
      ? pooledProvider(connection.apiKeys.map((apiKey, index) => observe(adapterFor(apiKey), `#${index + 1}`)))
      : observe(adapterFor(connection.apiKey));
    providers.set(vendorCode, observed);
    return observed;
  }

  /** The vendor's models of one kind; 400 `model.not_available` when it offers none. */
  function modelsOf<Kind extends 'languageModel' | 'embeddingModel' | 'speechModel' | 'transcriptionModel'>(
    vendorCode: string,
    kind: Kind,
    what: string,
  ) {
    const model = provider(vendorCode)[kind];
    if (!model) throw notAvailable(`Vendor "${vendorCode}" offers no ${what} models.`);
    return model as NonNullable<VendorProvider[Kind]>;
  }

  return {
    languageModel: (vendorCode) => modelsOf(vendorCode, 'languageModel', 'language'),
    embeddingModel: (vendorCode) => modelsOf(vendorCode, 'embeddingModel', 'embedding'),
    speechModel: (vendorCode) => modelsOf(vendorCode, 'speechModel', 'speech'),
    transcriptionModel: (vendorCode) => modelsOf(vendorCode, 'transcriptionModel', 'transcription'),
  };
}

const notAvailable = (message: string) => new ApiError(400, 'model.not_available', message);
