import type { Availability, CatalogVendor } from './catalog-types';

export interface VendorConnection extends Availability {
  apiKey?: string;
  baseURL?: string;
}

/**
 * How to reach a vendor with the current settings (config.providers.settings: every *_API_KEY and
 * *_BASE_URL variable). The one rule for "configured": `dev` always; a keyed vendor when its key is set
 * (and, for an OpenAI-compatible vendor without a default, its base URL); a keyless one when its base URL
 * is set. Shared by the catalog (availability) and the provider registry (adapter options).
 */
export function resolveVendorConnection(
  vendor: CatalogVendor,
  settings: Readonly<Record<string, string>>,
): VendorConnection {
  if (vendor.adapter === 'dev') return { available: true };
  const apiKey = vendor.apiKeyEnv ? settings[vendor.apiKeyEnv] || undefined : undefined;
  const baseURL = (vendor.baseUrlEnv ? settings[vendor.baseUrlEnv] || undefined : undefined) ?? vendor.defaultBaseUrl;
  if (vendor.requiresKey && !apiKey) return { available: false, missing: vendor.apiKeyEnv };
  const needsBaseUrl = !vendor.requiresKey || vendor.adapter === 'openai-compatible';
  if (needsBaseUrl && !baseURL) return { available: false, missing: vendor.baseUrlEnv };
  return { available: true, apiKey, baseURL };
}
